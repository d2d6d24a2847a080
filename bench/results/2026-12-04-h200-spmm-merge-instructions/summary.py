# Prints the record's tables from its JSON lines: issue 25's power-law set (six real graphs, six generated) and the
# 19 shared matrices, auto over cuSPARSE with csr_merge's template before and after (run from this folder).
import json, math

def load(path):
    return {(r['matrix'], r['k']): r for r in map(json.loads, open(path)) if 'speedup' in r}

def joined(version, files):
    out = {}
    for f in files: out.update(load(f % version))
    return out

def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs))

powerlaw = ['4_auto/graphs_%s.jsonl', '4_auto/graphs2_%s.jsonl', '4_auto/graphs3_%s.jsonl', '4_auto/powerlaw_%s.jsonl']
for title, files, ks in (('power-law graphs', powerlaw, (128, 512)), ('shared matrices where auto ran csr_merge', ['6_shared/shared_%s.jsonl'], (32, 128, 512))):
    old, new = joined('old', files), joined('new', files)
    print(title)
    for k in ks:
        keys = sorted(key for key in old if key[1] == k)
        real = [key for key in keys if not key[0].startswith('gen:')]
        line = f"  K={k}: {len(keys)} cases, geomean {geomean([old[x]['speedup'] for x in keys]):.3f} -> {geomean([new[x]['speedup'] for x in keys]):.3f}"
        if title.startswith('power') and len(real) < len(keys):
            line += f" (real {geomean([old[x]['speedup'] for x in real]):.3f} -> {geomean([new[x]['speedup'] for x in real]):.3f})"
        line += f"; lowest {min(new[x]['speedup'] for x in keys):.3f}"
        print(line)
        for key in keys:
            o, n = old[key], new[key]
            print(f"    {key[0][:36]:36s} {o['auto']['variant']:10s} {o['auto']['ms'] * 1000:8.1f} us {o['speedup']:.2f}x -> "
                  f"{n['auto']['variant']:10s} {n['auto']['ms'] * 1000:8.1f} us {n['speedup']:.2f}x")
