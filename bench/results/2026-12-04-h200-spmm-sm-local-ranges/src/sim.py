import gzip, sys, collections, random
def load(p):
    f = gzip.open(p, 'rt'); m,n,nnz = map(int, f.readline().split(','))
    rp = list(map(int, f.readline().split())); ci = list(map(int, f.readline().split()))
    return m, n, rp, ci
def rows_of(rp, ci):
    return [ci[rp[i]:rp[i+1]] for i in range(len(rp)-1)]
def sim(rows, order, sms=132, cap=512):
    # contiguous chunks of the order, balanced by nnz; each SM an LRU of cap B rows
    total = sum(len(r) for r in rows); per = total / sms
    hits = 0; acc = 0; chunk = 0; lru = collections.OrderedDict()
    for i in order:
        if acc >= per * (chunk + 1):
            chunk += 1; lru = collections.OrderedDict()
        for c in rows[i]:
            if c in lru: hits += 1; lru.move_to_end(c)
            else:
                lru[c] = None
                if len(lru) > cap: lru.popitem(last=False)
        acc += len(rows[i])
    return hits / total
def bfs_order(rows):  # Cuthill-McKee-like on the symmetric pattern, from low degree
    n = len(rows); seen = [False]*n; out = []
    by_deg = sorted(range(n), key=lambda i: len(rows[i]))
    for s in by_deg:
        if seen[s]: continue
        seen[s] = True; q = collections.deque([s])
        while q:
            u = q.popleft(); out.append(u)
            for v in sorted(rows[u], key=lambda v: len(rows[v])):
                if v < n and not seen[v]: seen[v] = True; q.append(v)
    return out[::-1]
def label_prop(rows, iters=10, seed=1):
    n = len(rows); lab = list(range(n)); rnd = random.Random(seed); idx = list(range(n))
    for _ in range(iters):
        rnd.shuffle(idx); changed = 0
        for u in idx:
            cnt = collections.Counter(lab[v] for v in rows[u] if v < n)
            if not cnt: continue
            best = max(cnt.values()); cands = [l for l,c in cnt.items() if c == best]
            l = lab[u] if lab[u] in cands else rnd.choice(cands)
            if l != lab[u]: lab[u] = l; changed += 1
        if changed < n // 1000: break
    return lab
if __name__ == '__main__':
    m, n, rp, ci = load(sys.argv[1]); rows = rows_of(rp, ci)
    cap = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    orig = list(range(m))
    print('rows', m, 'nnz', len(ci), 'cap', cap)
    print('original  hit %.3f' % sim(rows, orig, cap=cap))
    rnd = orig[:]; random.Random(0).shuffle(rnd)
    print('random    hit %.3f' % sim(rows, rnd, cap=cap))
    if m == n:
        b = bfs_order(rows); print('cm        hit %.3f' % sim(rows, b, cap=cap))
        lab = label_prop(rows); sizes = collections.Counter(lab)
        print('communities', len(sizes), 'largest', sizes.most_common(3))
        lp = sorted(range(m), key=lambda i: (-sizes[lab[i]], lab[i], -len(rows[i])))
        print('labelprop hit %.3f' % sim(rows, lp, cap=cap))
