#!/usr/bin/env python3
"""Issue 25's sets from 3_sets/ (this build, auto over cuSPARSE's best algorithm, cold caches): the whole set (the
shared matrices without graphs/ and sinc18, the DLMC layers, four large generated), the power-law set (six real and six
generated graphs), and the lowest case; then 2_by_lanes/'s forced csr_merge, the template as landed against this one."""
import glob, json, math, os

HERE = os.path.dirname(os.path.abspath(__file__))

def rows(pattern):
    out = {}
    for path in sorted(glob.glob(os.path.join(HERE, pattern))):
        out.update({(r['matrix'], r['k']): r for r in map(json.loads, open(path)) if r.get('speedup')})
    return out

def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))

def report(name, cases):
    for k in sorted({k for _, k in cases}):
        s = [r['speedup'] for (m, kk), r in cases.items() if kk == k]
        low = min(((r['speedup'], m) for (m, kk), r in cases.items() if kk == k))
        print(f'{name} K={k}: {len(s)} cases, geomean {geomean(s):.3f}, lowest {low[0]:.3f} ({low[1]})')

whole = rows('3_sets/shared1*.jsonl') | rows('3_sets/dlmc_*.jsonl')
power = rows('3_sets/graphs_new_*.jsonl') | rows('3_sets/powerlaw_gen6.jsonl')
report('whole set', whole)
report('power-law', power)
report('both', whole | power)
for (m, k), r in sorted(power.items(), key=lambda x: (x[0][1], x[0][0])):
    print(f"  K={k:<4} {m[:34]:34s} {r['auto']['variant']:10s} {1e3 * r['auto']['ms']:8.1f} us {r['speedup']:.2f}x")
for i in (1, 2):
    old, new = rows(f'2_by_lanes/merge_old_{i}.jsonl'), rows(f'2_by_lanes/merge_new_{i}.jsonl')
    for k in sorted({k for _, k in old}):
        keys = [key for key in old if key[1] == k]
        ratio = geomean([old[key]['auto']['ms'] / new[key]['auto']['ms'] for key in keys])
        print(f"forced csr_merge round {i} K={k}: over cuSPARSE {geomean([old[x]['speedup'] for x in keys]):.3f} -> "
              f"{geomean([new[x]['speedup'] for x in keys]):.3f}; landed time / this time {ratio:.3f}")
# Issue 25's rooflines for the five largest graphs: gathered = nnz x K x 4 bytes (one B row per nonzero), compulsory =
# A (8 bytes a nonzero and 4 a row), B and C once each, against the H200's 4.8 TB/s HBM peak.
print('\nfive largest: graph K | ms | gathered TB/s | compulsory TB/s (of HBM peak) | cuSPARSE ms | cuSPARSE gathered TB/s')
largest = sorted({m for m, _ in power}, key=lambda m: -power[(m, 128)]['nnz'])[:5]
for m in largest:
    for k in (128, 512):
        r = power[(m, k)]
        ms, vendor = r['auto']['ms'], r['vendor']['best']
        gathered = r['nnz'] * k * 4
        compulsory = r['nnz'] * 8 + (r['rows'] + 1) * 4 + (r['cols'] + r['rows']) * k * 4
        print(f"  {m[4:]} {k} | {ms:.3f} | {gathered / ms / 1e9:.2f} | {compulsory / ms / 1e9:.2f} "
              f"({compulsory / ms / 1e9 / 4.8:.0%}) | {vendor:.3f} | {gathered / vendor / 1e9:.2f}")
