#!/usr/bin/env bash
# Device call 8 (session 51): the review mend (the tensor-core GEMM's accumulators zeroed by an initializer): the dense
# SpMM suite on a cold cache, and memcheck on its tensor-core test.
set -u
cd "$(dirname "$0")"
python3 -c "
import lzma, shutil
with lzma.open('dense_spmm_test.xz') as s, open('dense_spmm_test', 'wb') as d: shutil.copyfileobj(s, d)
"
chmod +x dense_spmm_test
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
SPARSEJIT_CACHE_DIR=$(mktemp -d) ./dense_spmm_test > $OUT/dense_spmm_test.txt 2>&1; echo "dense_spmm_test rc=$?"; grep -E "PASSED|FAILED" $OUT/dense_spmm_test.txt | tail -2
SPARSEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck --error-exitcode 9 ./dense_spmm_test --gtest_filter='*TensorCore*' > $OUT/memcheck.txt 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck.txt | tail -2
