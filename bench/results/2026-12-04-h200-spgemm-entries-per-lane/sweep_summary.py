"""Per matrix: the forced entries and warps kernels' device (graph-clock) times in µs for each run, and cuSPARSE's."""
import json, sys, os
runs = {}
for f in sys.argv[1:]:
    name = os.path.basename(f)[:-6]
    for l in open(f):
        r = json.loads(l); n = r['numeric']; k = n.get('kernels', {})
        def g(x):
            v = k.get(x); return v.get('graph_ms') * 1e3 if isinstance(v, dict) and v.get('graph_ms') else None
        ok = all(v.get('check', {}).get('ok', True) for v in k.values() if isinstance(v, dict))
        runs.setdefault((r['dtype'], r['matrix']), {})[name] = (g('entries'), g('warps'), (n.get('vendor_graph_ms') or 0) * 1e3, r['products'], ok)
names = sorted({n for v in runs.values() for n in v})
print('dtype matrix products | cusparse | ' + ' | '.join(f'{n} ent/warp' for n in names))
for (dt, m), v in sorted(runs.items(), key=lambda x: (x[0][0], list(x[1].values())[0][3])):
    first = list(v.values())[0]
    cells = []
    for n in names:
        if n in v:
            e, w, _, _, ok = v[n]; cells.append(f"{e or 0:6.1f}/{w or 0:6.1f}{'' if ok else ' BAD'}")
        else: cells.append(' ' * 13)
    print(f"{dt} {m[:14]:14s} {first[3]:>9d} | {first[2]:6.1f} | " + ' | '.join(cells))
