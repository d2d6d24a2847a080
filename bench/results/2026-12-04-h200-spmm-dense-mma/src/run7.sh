#!/usr/bin/env bash
# Device call 7 (session 51), the final build: the dense SpMM suite again, SDDMM's dense tensor-core suite (its template now includes tf32_split_mma.cuh, shared
# with SpMM's dense GEMM), memcheck on its sanitizer subset, and the early-launch and graph-replay suites with the dense
# variant's new GEMM among their variants.
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import lzma, shutil
for f in ['sddmm_row_dense_test', 'early_launch_test', 'replay_launches_test', 'dense_spmm_test']:
    with lzma.open(f + '.xz') as s, open(f, 'wb') as d: shutil.copyfileobj(s, d)
PY
chmod +x sddmm_row_dense_test early_launch_test replay_launches_test dense_spmm_test
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/device.txt; date -u >> $OUT/device.txt
for t in dense_spmm_test sddmm_row_dense_test early_launch_test replay_launches_test; do
  SPARSEJIT_CACHE_DIR=$(mktemp -d) ./$t > $OUT/$t.txt 2>&1; echo "$t rc=$?"; grep -E "PASSED|FAILED|SKIPPED" $OUT/$t.txt | tail -3
done
SPARSEJIT_CACHE_DIR=$(mktemp -d) compute-sanitizer --tool memcheck --error-exitcode 9 ./sddmm_row_dense_test --gtest_filter='*DenseMmaEveryStageCount*' > $OUT/memcheck_sddmm_dense_mma.txt 2>&1
echo "memcheck rc=$?"; grep -E "ERROR SUMMARY|PASSED|FAILED" $OUT/memcheck_sddmm_dense_mma.txt | tail -3
