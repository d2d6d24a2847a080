#!/usr/bin/env bash
# Device call 1 (session 53): csr_merge with each entry's row shuffled beside its column and value (new, this build's
# templates) against the template as landed in f580437 (old_templates/, read through SPARSEJIT_TEMPLATE_DIR), one binary.
# split_rows_spmm_test and memcheck first; then 14 shared matrices where auto ran csr_merge, forced csr_merge and auto,
# K = 32, 128, 512, two rounds; then the six generated power-law graphs, auto, K = 128, 512.
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil, glob, os
for f in ['sparsejit', 'split_rows_spmm_test']:
    with lzma.open(f + '.xz') as s, open(f, 'wb') as d: shutil.copyfileobj(s, d)
os.makedirs('mm', exist_ok=True); os.makedirs('g', exist_ok=True)
for f in glob.glob('m/*.xz'):
    with lzma.open(f) as s, open('mm/' + os.path.basename(f)[:-3], 'wb') as d: shutil.copyfileobj(s, d)
for f in glob.glob('*.smtx.xz'):
    with lzma.open(f) as s, open('g/' + f[:-3], 'wb') as d: shutil.copyfileobj(s, d)
PY
chmod +x sparsejit split_rows_spmm_test
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
export SPARSEJIT_CLI=$PWD/sparsejit
SPARSEJIT_CACHE_DIR=$(mktemp -d) ./split_rows_spmm_test > $OUT/split_rows_spmm_test.txt 2>&1
echo "split_rows_spmm_test rc=$?"; grep -E "^\[  (PASSED|FAILED)" $OUT/split_rows_spmm_test.txt
SPARSEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck ./split_rows_spmm_test --gtest_filter='*Merge*:*PaddedLeading*:*InfInBRowZero*' > $OUT/memcheck.txt 2>&1
echo "memcheck rc=$?"; grep -E "^\[  (PASSED|FAILED)|ERROR SUMMARY" $OUT/memcheck.txt
for round in 1 2; do
for v in old new; do
  if [ $v = old ]; then export SPARSEJIT_TEMPLATE_DIR=$PWD/old_templates; else unset SPARSEJIT_TEMPLATE_DIR; fi
  export SPARSEJIT_CACHE_DIR=$(mktemp -d)
  SPARSEJIT_FORCE=spmm:csr_merge ./sparsejit bench mm --op spmm -k 32,128,512 --variants auto --json-out $OUT/merge_${v}_$round.jsonl > /dev/null 2>&1
  echo "forced $v round $round rc=$? at $SECONDS s"
  if [ $round = 1 ]; then
    ./sparsejit bench mm --op spmm -k 32,128,512 --variants auto --json-out $OUT/auto_$v.jsonl > /dev/null 2>&1
    echo "auto $v rc=$? at $SECONDS s"
  fi
done
done
GEN="gen:chunglu:500000:2000000:2.1 gen:chunglu:1000000:8000000:2.1 gen:chunglu:1000000:8000000:2.4 gen:chunglu:1000000:8000000:2.8 gen:chunglu:2000000:20000000:2.4 gen:rmat:1000000:8000000:0.45"
for v in old new; do
  if [ $v = old ]; then export SPARSEJIT_TEMPLATE_DIR=$PWD/old_templates; else unset SPARSEJIT_TEMPLATE_DIR; fi
  export SPARSEJIT_CACHE_DIR=$(mktemp -d)
  ./sparsejit bench $GEN --op spmm -k 128,512 --variants auto --json-out $OUT/powerlaw_$v.jsonl > /dev/null 2>&1
  echo "powerlaw $v rc=$? at $SECONDS s"
done
python3 summary.py $OUT
