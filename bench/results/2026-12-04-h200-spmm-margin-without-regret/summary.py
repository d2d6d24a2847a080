# The record's table: auto over cuSPARSE by K, before and after, from the JSON lines beside it
# (run from this folder: python3 summary.py).
import json, math, statistics
def load(f): return [json.loads(l) for l in open(f)]
def gm(rs): return math.exp(sum(math.log(r['speedup']) for r in rs) / len(rs))
def summarize(label, whole, powerlaw):
    print(label)
    for k in (32, 128, 512):
        w = [r for r in whole if r['k'] == k]; p = [r for r in powerlaw if r['k'] == k]; a = w + p
        lowest = min(a, key=lambda r: r['speedup'])
        timed = [r for r in a if r['auto'].get('source') == 'measured']
        calls = [r['auto'].get('measure_calls', 0) for r in a]
        part = f"whole set {len(w)} {gm(w):.3f}" + (f"; power-law {len(p)} {gm(p):.3f}" if p else "")
        print(f"  K={k}: {part}; together {len(a)} {gm(a):.3f}; lowest {lowest['speedup']:.3f} {lowest['matrix']} "
              f"({lowest['auto']['variant']}); timed {len(timed)}/{len(a)}, median calls {statistics.median(calls):.0f}")
graphs_before = [r for r in load('call1_row_orders/graphs_orders.jsonl') if 'bylength' not in r['matrix']]
summarize('before (calls 1-3, v12 as landed)', load('before/shared_auto.jsonl') + load('before/dlmc_auto.jsonl'),
          load('before/powerlaw_auto.jsonl') + graphs_before)
summarize('after (calls 4-6, the margin without the regret term)', load('after/shared_auto.jsonl') + load('after/dlmc_auto.jsonl'),
          load('after/powerlaw_auto.jsonl') + load('after/graphs_auto.jsonl'))
