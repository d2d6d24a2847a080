#!/usr/bin/env bash
# Device call 4 (session 50): the skip margin without the regret term. measure_test (cold cache), then the six
# real graphs, auto only, K = 128 and 512 (call 1 ran the same with the previous build).
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil, glob, os
for f in ['sparsejit', 'measure_test']:
    with lzma.open(f + '.xz') as s, open(f, 'wb') as d: shutil.copyfileobj(s, d)
os.makedirs('g', exist_ok=True)
for f in glob.glob('*.smtx.xz'):
    with lzma.open(f) as s, open('g/' + f[:-3], 'wb') as d: shutil.copyfileobj(s, d)
PY
chmod +x sparsejit measure_test
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
date -u >> $OUT/device.txt
SPARSEJIT_CACHE_DIR=$(mktemp -d) SPARSEJIT_CLI=$PWD/sparsejit ./measure_test > $OUT/measure_test.txt 2>&1
echo "measure_test rc=$?"; grep -E "PASSED|FAILED|SKIPPED" $OUT/measure_test.txt | tail -3
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
./sparsejit bench g --op spmm -k 128,512 --variants auto --json-out $OUT/graphs_auto.jsonl > $OUT/graphs_auto.txt 2>&1
echo "graphs rc=$? at $SECONDS s"; grep "^K=" $OUT/graphs_auto.txt
