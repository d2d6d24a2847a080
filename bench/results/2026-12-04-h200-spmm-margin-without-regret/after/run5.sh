#!/usr/bin/env bash
# Device call 5 (session 50): issue 25's whole-set status with SpMM model v12, auto only: the shared files
# (graphs/, sinc18 and dlmc/ left out here; dlmc in call 3, graphs in call 1), the four large generated, and the six generated power-law graphs.
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
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
date -u >> $OUT/device.txt
./sparsejit bench mm gen:uniform:200000:50 gen:band:200000:64:256 gen:rmat:1000000:10500000 gen:clustered:400000:32:0.7:16 \
  --op spmm -k 32,128,512 --variants auto --json-out $OUT/shared_auto.jsonl > $OUT/shared_auto.txt 2>&1
echo "shared rc=$? at $SECONDS s"; grep "^K=" $OUT/shared_auto.txt | head -3
./sparsejit bench gen:chunglu:500000:2000000:2.1 gen:chunglu:1000000:8000000:2.1 gen:chunglu:1000000:8000000:2.4 \
  gen:chunglu:1000000:8000000:2.8 gen:chunglu:2000000:20000000:2.4 gen:rmat:1000000:8000000:0.45 \
  --op spmm -k 128,512 --variants auto --json-out $OUT/powerlaw_auto.jsonl > $OUT/powerlaw_auto.txt 2>&1
echo "powerlaw rc=$? at $SECONDS s"; grep "^K=" $OUT/powerlaw_auto.txt | head -2
