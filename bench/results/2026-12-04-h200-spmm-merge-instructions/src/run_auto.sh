#!/usr/bin/env bash
# Device call A (session 52): csr_merge's template before (old_templates/, HEAD's, read through SPARSEJIT_TEMPLATE_DIR)
# and after (the new build's own) in one call, one binary: the six real graphs and the six generated power-law graphs,
# auto only, K = 128 and 512, cold caches.
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil, glob, os
with lzma.open('sparsejit.xz') as s, open('sparsejit', 'wb') as d: shutil.copyfileobj(s, d)
os.makedirs('g', exist_ok=True)
for f in glob.glob('*.smtx.xz'):
    with lzma.open(f) as s, open('g/' + f[:-3], 'wb') as d: shutil.copyfileobj(s, d)
PY
chmod +x sparsejit
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
date -u >> $OUT/device.txt
GEN="gen:chunglu:500000:2000000:2.1 gen:chunglu:1000000:8000000:2.1 gen:chunglu:1000000:8000000:2.4 gen:chunglu:1000000:8000000:2.8 gen:chunglu:2000000:20000000:2.4 gen:rmat:1000000:8000000:0.45"
for v in old new; do
  if [ $v = old ]; then export SPARSEJIT_TEMPLATE_DIR=$PWD/old_templates; else unset SPARSEJIT_TEMPLATE_DIR; fi
  export SPARSEJIT_CACHE_DIR=$(mktemp -d)
  ./sparsejit bench g --op spmm -k 128,512 --variants auto --json-out $OUT/graphs_$v.jsonl > $OUT/graphs_$v.txt 2>&1
  echo "graphs $v rc=$? at $SECONDS s"; grep "^K=" $OUT/graphs_$v.txt | head -2
  ./sparsejit bench $GEN --op spmm -k 128,512 --variants auto --json-out $OUT/powerlaw_$v.jsonl > $OUT/powerlaw_$v.txt 2>&1
  echo "powerlaw $v rc=$? at $SECONDS s"; grep "^K=" $OUT/powerlaw_$v.txt | head -2
done
python3 - <<'PY'
import json, os, math
out = os.environ['OUT']
def load(f):
    return {(r['matrix'], r['k']): r for r in map(json.loads, open(f)) if 'speedup' in r}
for k in (128, 512):
    rows = []
    for v in ('old', 'new'):
        d = {}
        for s in ('graphs', 'powerlaw'): d.update(load(f'{out}/{s}_{v}.jsonl'))
        rows.append(d)
    keys = sorted(key for key in rows[0] if key[1] == k)
    gm = [math.exp(sum(math.log(r[key]['speedup']) for key in keys) / len(keys)) for r in rows]
    print(f'K={k}: power-law {len(keys)} geomean over cuSPARSE old {gm[0]:.3f} new {gm[1]:.3f}')
    for key in keys:
        o, n = rows[0][key], rows[1][key]
        print(f"  {key[0][:34]:34s} old {o['auto']['variant']:12s} {o['auto']['ms']:.4f} ms {o['speedup']:.2f}x | new {n['auto']['variant']:12s} {n['auto']['ms']:.4f} ms {n['speedup']:.2f}x")
PY
