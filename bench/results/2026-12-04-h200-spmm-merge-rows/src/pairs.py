#!/usr/bin/env python3
"""Geometric means of auto's speedup over cuSPARSE per bench run and K, then old against new per matrix
(times in us; each pair from the same round of one call). Usage: summary.py DIR"""
import glob, json, math, os, sys

def load(path):
    return {(r['matrix'], r['k']): r for r in map(json.loads, open(path)) if r.get('speedup')}

def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float('nan')

runs = {os.path.basename(p)[:-6]: load(p) for p in sorted(glob.glob(os.path.join(sys.argv[1], '*.jsonl')))}
for name, rows in runs.items():
    ks = sorted({k for _, k in rows})
    print(name + ': ' + '; '.join(
        f"K={k} {geomean([r['speedup'] for (m, kk), r in rows.items() if kk == k]):.3f} "
        f"({sum(1 for (m, kk) in rows if kk == k)})" for k in ks))
pairs = [(f'merge_old_{i}', f'merge_new_{i}') for i in (1, 2)] + [('auto_old', 'auto_new'), ('powerlaw_old', 'powerlaw_new')]
for old, new in pairs:
    if old not in runs or new not in runs:
        continue
    print(f'\n{old} -> {new}')
    for key in sorted(runs[old], key=lambda key: (key[1], key[0])):
        if key not in runs[new]:
            continue
        o, n = runs[old][key], runs[new][key]
        print(f"  K={key[1]:<4} {key[0][:34]:34s} {o['auto']['variant']:13s} {1e3 * o['auto']['ms']:8.1f} {o['speedup']:.2f}x"
              f" -> {n['auto']['variant']:13s} {1e3 * n['auto']['ms']:8.1f} {n['speedup']:.2f}x")
