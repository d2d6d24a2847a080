"""The record's DLMC table: auto over cuSPARSE before (the previous record's dlmc_auto, the
same build but for this change) and after (call2_variant), split into the rows where either
run picked dense and the rest. python3 summary.py > summary.txt"""
import json
import math

BEFORE = '../2026-12-04-h200-spmm-margin-without-regret/after/dlmc_auto.jsonl'
AFTER = 'call2_variant/dlmc_auto.jsonl'


def load(path):
    return {(r['matrix'], r['k']): r for r in map(json.loads, open(path))}


def geomean(values):
    values = list(values)
    return math.exp(sum(math.log(v) for v in values) / len(values))


before, after = load(BEFORE), load(AFTER)
print('K     rows  auto/cuSPARSE before -> after | dense rows: n, before -> after, auto time after/before | other rows: n, before -> after')
for k in (32, 128, 512):
    keys = [key for key in after if key[1] == k and key in before]
    dense = [key for key in keys if 'dense' in (before[key]['auto']['variant'], after[key]['auto']['variant'])]
    other = [key for key in keys if key not in dense]
    print('%-5d %4d  %.3f -> %.3f | %2d, %.3f -> %.3f, %.3f | %2d, %.3f -> %.3f' % (
        k, len(keys), geomean(before[x]['speedup'] for x in keys), geomean(after[x]['speedup'] for x in keys),
        len(dense), geomean(before[x]['speedup'] for x in dense), geomean(after[x]['speedup'] for x in dense),
        geomean(after[x]['auto']['ms'] / before[x]['auto']['ms'] for x in dense),
        len(other), geomean(before[x]['speedup'] for x in other), geomean(after[x]['speedup'] for x in other)))
print()
print('dense rows: matrix, rows x cols, K: auto before (variant, µs) -> after (splits, µs), speedup before -> after')
for key in sorted(after, key=lambda x: (x[1], x[0])):
    if key not in before or 'dense' not in (before[key]['auto']['variant'], after[key]['auto']['variant']):
        continue
    b, a = before[key], after[key]
    print('%-75s %5d x %5d %4d: %-8s %6.1f -> s%-2s %6.1f   %.2fx -> %.2fx' % (
        key[0], a['rows'], a['cols'], key[1], b['auto']['variant'], b['auto']['ms'] * 1e3,
        a['auto'].get('params', {}).get('splits', '-'), a['auto']['ms'] * 1e3, b['speedup'], a['speedup']))

# Issue 25's whole set (90: the shared files without graphs/ and sinc18, the 62 DLMC layers among
# them, and four large generated), and with the 12 power-law graphs (102): the previous record's
# rows, with the DLMC rows of this record in place of its own.
PREVIOUS = '../2026-12-04-h200-spmm-margin-without-regret/after/'
shared = load(PREVIOUS + 'shared_auto.jsonl')
powerlaw = {**load(PREVIOUS + 'powerlaw_auto.jsonl'), **load(PREVIOUS + 'graphs_auto.jsonl')}
print()
print('K     whole set (90) before -> after    with the power-law graphs (102) before -> after')
for k in (32, 128, 512):
    rest = [shared[x]['speedup'] for x in shared if x[1] == k]
    graphs = [powerlaw[x]['speedup'] for x in powerlaw if x[1] == k]
    old = [before[x]['speedup'] for x in before if x[1] == k]
    new = [after[x]['speedup'] for x in after if x[1] == k]
    line = '%-5d %d: %.3f -> %.3f' % (k, len(rest) + len(new), geomean(rest + old), geomean(rest + new))
    if graphs:
        line += '          %d: %.3f -> %.3f' % (len(rest) + len(new) + len(graphs), geomean(rest + old + graphs), geomean(rest + new + graphs))
    print(line)
