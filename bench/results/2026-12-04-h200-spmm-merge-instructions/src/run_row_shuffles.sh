#!/usr/bin/env bash
# Device call H (session 52): csr_merge's template three ways, one binary: before (old_templates/, HEAD's), as built
# (rows shuffled only when a batch is not whole in one row), and new2_templates/ (every entry's row shuffled with its
# column and value, before the loads return). 18 shared matrices where auto ran csr_merge, auto, K = 32, 128, 512.
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil, glob, os
with lzma.open('sparsejit.xz') as s, open('sparsejit', 'wb') as d: shutil.copyfileobj(s, d)
os.makedirs('mm', exist_ok=True)
for f in glob.glob('m/*.xz'):
    with lzma.open(f) as s, open('mm/' + os.path.basename(f)[:-3], 'wb') as d: shutil.copyfileobj(s, d)
PY
chmod +x sparsejit
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
for round in 1 2; do
for v in old built new2; do
  case $v in old) export SPARSEJIT_TEMPLATE_DIR=$PWD/old_templates;; built) unset SPARSEJIT_TEMPLATE_DIR;; new2) export SPARSEJIT_TEMPLATE_DIR=$PWD/new2_templates;; esac
  export SPARSEJIT_CACHE_DIR=$(mktemp -d)
  SPARSEJIT_FORCE=spmm:csr_merge ./sparsejit bench mm --op spmm -k 32,128,512 --variants auto --json-out $OUT/merge_${v}_$round.jsonl > $OUT/merge_${v}_$round.txt 2>&1
  echo "$v round $round rc=$? at $SECONDS s"; grep "^K=" $OUT/merge_${v}_$round.txt | head -3
done
done
