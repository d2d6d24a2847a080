#!/usr/bin/env bash
# Device call 6 (session 50): issue 25's whole-set status with SpMM model v12, auto only: the shared DLMC layers.
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil, tarfile
with lzma.open('sparsejit.xz') as s, open('sparsejit', 'wb') as d: shutil.copyfileobj(s, d)
tarfile.open('dlmc.tar.xz').extractall('dlmc')
PY
chmod +x sparsejit
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt
date -u >> $OUT/device.txt
./sparsejit bench dlmc --op spmm -k 32,128,512 --variants auto --json-out $OUT/dlmc_auto.jsonl > $OUT/dlmc_auto.txt 2>&1
echo "dlmc rc=$? at $SECONDS s"; grep "^K=" $OUT/dlmc_auto.txt | head -3
