import sys, collections
from sim import *
def sim_strided(ci, block_nnz=64, sms=132, cap=512):
    nb = (len(ci) + block_nnz - 1) // block_nnz; hits = 0
    for s in range(sms):
        lru = collections.OrderedDict()
        for b in range(s, nb, sms):
            for c in ci[b*block_nnz:(b+1)*block_nnz]:
                if c in lru: hits += 1; lru.move_to_end(c)
                else:
                    lru[c] = None
                    if len(lru) > cap: lru.popitem(last=False)
    return hits / len(ci)
m, n, rp, ci = load(sys.argv[1]); rows = rows_of(rp, ci)
b = bfs_order(rows) if m == n else None
for cap in (512, 2048):
    base = sim_strided(ci, cap=cap); cm = sim(rows, b, cap=cap); orig = sim(rows, list(range(m)), cap=cap)
    print(cap, 'merge-like %.3f  chunks-orig %.3f  chunks-cm %.3f   miss ratio orig %.2f cm %.2f' % (base, orig, cm, (1-orig)/(1-base), (1-cm)/(1-base)))
