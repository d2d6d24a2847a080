#!/usr/bin/env bash
# Device call F (session 52): the 19 shared matrices where auto ran csr_merge on 2026-12-04 (graphs/, sinc18, dlmc/ aside),
# template before (old_templates/, HEAD's) and after, auto only, K = 32, 128, 512, cold caches.
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
for v in old new; do
  if [ $v = old ]; then export SPARSEJIT_TEMPLATE_DIR=$PWD/old_templates; else unset SPARSEJIT_TEMPLATE_DIR; fi
  export SPARSEJIT_CACHE_DIR=$(mktemp -d)
  ./sparsejit bench mm --op spmm -k 32,128,512 --variants auto --json-out $OUT/shared_$v.jsonl > $OUT/shared_$v.txt 2>&1
  echo "shared $v rc=$? at $SECONDS s"; grep "^K=" $OUT/shared_$v.txt | head -3
done
