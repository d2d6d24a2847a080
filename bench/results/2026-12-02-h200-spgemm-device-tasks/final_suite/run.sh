#!/usr/bin/env bash
# Device call 4 (2026-12-02, session 45): spgemm_test after the entries test's memory limit
# counts the blocks' build scratch.
set -u
cd "$(dirname "$0")"
python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' bin/spgemm_test.xz
chmod +x bin/*
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
timeout 300 bin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 bin/spgemm_test --gtest_filter='*ByEntriesF32' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
