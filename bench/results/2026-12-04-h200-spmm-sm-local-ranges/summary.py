"""The record's table from the four calls' outputs: per graph and K, cuSPARSE's best, and each
kernel's best time over its parameters, in the graph's own row order and in reverse
Cuthill-McKee order. python3 summary.py > summary.txt"""
import collections
import re

vendor = {}
best = collections.defaultdict(lambda: float('inf'))
pat = re.compile(r'^(\S+) K=(\d+) (orig|rcm) +(?:npg=\d+ slice=(\d+) (grid|smlocal|persist|warps) *|piece=\d+ blocks/sm=\d+ slice=\d+):\s+([\d.]+) us')
for path, label in (('call1_chunks.txt', 'chunks'), ('call2_merge_tickets.txt', None), ('call3_merge_persistent.txt', None), ('call4_merge_warp_tickets.txt', None)):
    for line in open(path):
        m = re.match(r'^(\S+) K=(\d+) cusparse alg\d ([\d.]+) us', line)
        if m:
            key = (m.group(1), int(m.group(2)))
            vendor[key] = min(vendor.get(key, float('inf')), float(m.group(3)))
            continue
        m = pat.match(line)
        if not m:
            continue
        name, k, order, slice_, how, us = m.groups()
        kind = label or {'grid': 'merge', 'smlocal': 'tickets', 'persist': 'persistent', 'warps': 'warp tickets'}[how]
        best[(name, int(k), kind, order)] = min(best[(name, int(k), kind, order)], float(us))
kinds = ['merge', 'tickets', 'persistent', 'warp tickets', 'chunks']
print('µs, best over each kernel\'s parameters (C\'s clearing included); orig / rcm row order')
print('%-18s %4s %9s' % ('graph', 'K', 'cuSPARSE') + ''.join('%20s' % k for k in kinds))
for (name, k) in sorted(vendor, key=lambda x: (x[1], x[0])):
    cells = ''.join('%20s' % ('%.1f / %.1f' % (best[(name, k, kind, 'orig')], best[(name, k, kind, 'rcm')])) for kind in kinds)
    print('%-18s %4d %9.1f' % (name, k, vendor[(name, k)]) + cells)
