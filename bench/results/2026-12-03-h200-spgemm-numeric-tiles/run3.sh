#!/usr/bin/env bash
# Device call 3 (session 48): the final build's SpGEMM suite (tiles included) and memcheck.
set -u
cd "$(dirname "$0")"
for f in fin/*.xz; do python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' $f; rm $f; done; chmod +x fin/*
export SPARSEJIT_CLI=$PWD/fin/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/t2 SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 200 fin/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED)|FAILED" $OUT/spgemm_test.txt | head -20
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 fin/spgemm_test --gtest_filter='*ByTiles*' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
