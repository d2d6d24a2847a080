#!/usr/bin/env bash
# Device call G (session 52): musae-github, the sixth real graph, template before and after, auto, K = 128 and 512.
set -u
cd "$(dirname "$0")"
A=$PWD
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
python3 - <<'PY'
import lzma, shutil, glob, os
os.makedirs('g', exist_ok=True)
for f in glob.glob('*.smtx.xz'):
    with lzma.open(f) as s, open('g/' + f[:-3], 'wb') as d: shutil.copyfileobj(s, d)
PY
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
for v in old new; do
  if [ $v = old ]; then export SPARSEJIT_TEMPLATE_DIR=$A/old_templates; else unset SPARSEJIT_TEMPLATE_DIR; fi
  export SPARSEJIT_CACHE_DIR=$(mktemp -d)
  $A/sparsejit bench g --op spmm -k 128,512 --variants auto --json-out $OUT/graphs_$v.jsonl > $OUT/graphs_$v.txt 2>&1
  echo "graphs $v rc=$? at $SECONDS s"; grep "^K=" $OUT/graphs_$v.txt | head -2
done
