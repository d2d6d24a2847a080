#!/usr/bin/env bash
# Device call 10 (session 53): this build (rows with the loads where groups are narrower than a warp), auto only, cold
# caches: the 14 shared matrices of call 5 at K = 32, 128, 512, and the six generated power-law graphs at K = 128, 512.
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
SPARSEJIT_CACHE_DIR=$(mktemp -d) ./sparsejit bench mm --op spmm -k 32,128,512 --variants auto --json-out $OUT/shared14_new.jsonl > /dev/null 2>&1
echo "shared14 rc=$? at $SECONDS s"
GEN="gen:chunglu:500000:2000000:2.1 gen:chunglu:1000000:8000000:2.1 gen:chunglu:1000000:8000000:2.4 gen:chunglu:1000000:8000000:2.8 gen:chunglu:2000000:20000000:2.4 gen:rmat:1000000:8000000:0.45"
SPARSEJIT_CACHE_DIR=$(mktemp -d) ./sparsejit bench $GEN --op spmm -k 128,512 --variants auto --json-out $OUT/powerlaw_new.jsonl > /dev/null 2>&1
echo "powerlaw rc=$? at $SECONDS s"
python3 summary.py $OUT
