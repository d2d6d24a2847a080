#!/usr/bin/env bash
# Device call 5 (session 47): the final build's SpGEMM GPU suite and memcheck of the window tests.
set -u
cd "$(dirname "$0")"
python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' new/spgemm_test.xz; chmod +x new/spgemm_test
export SPARSEJIT_SHARED_MATRICES=$PWD/t2 SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 170 new/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 new/spgemm_test --gtest_filter='*WideDenseRows*:*ThinLongRows*' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
