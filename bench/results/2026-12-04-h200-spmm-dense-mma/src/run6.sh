#!/usr/bin/env bash
# Device call 6 (session 51): the dense variant's tensor-core GEMM. GPU suites (dense SpMM; SDDMM dense_mma, whose
# template now shares tf32_split_mma.cuh), memcheck on the new test, then the DLMC set: auto, and every variant forced.
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil, tarfile
for f in ['sparsejit', 'dense_spmm_test']:
    with lzma.open(f + '.xz') as s, open(f, 'wb') as d: shutil.copyfileobj(s, d)
tarfile.open('dlmc.tar.xz').extractall('dlmc')
PY
chmod +x sparsejit dense_spmm_test
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
export SPARSEJIT_CLI=$PWD/sparsejit
SPARSEJIT_CACHE_DIR=$(mktemp -d) ./dense_spmm_test > $OUT/dense_spmm_test.txt 2>&1; echo "dense_spmm_test rc=$?"; tail -3 $OUT/dense_spmm_test.txt
SPARSEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck --error-exitcode 9 ./dense_spmm_test --gtest_filter='*TensorCore*:*Parameters*' > $OUT/memcheck.txt 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.txt | tail -3
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
./sparsejit bench dlmc --op spmm -k 32,128,512 --variants auto --json-out $OUT/dlmc_auto.jsonl > $OUT/dlmc_auto.txt 2>&1
echo "dlmc auto rc=$? at $SECONDS s"; grep "^K=" $OUT/dlmc_auto.txt | head -6
timeout 200 ./sparsejit bench dlmc --op spmm -k 128,512 --variants all --json-out $OUT/dlmc_all.jsonl > $OUT/dlmc_all.txt 2>&1
echo "dlmc all rc=$? at $SECONDS s"; grep "^K=" $OUT/dlmc_all.txt | head -6
