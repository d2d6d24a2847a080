#!/usr/bin/env bash
# Device call 1 (session 47): GPU suite + memcheck of the new build (bitmap_tc cost refit,
# kMaxDenseWindows 16); f64 wide rows: global tables (base) against 9 dense windows (new);
# f32 bench of every variant on the 22-input set.
set -u
cd "$(dirname "$0")"
for f in base/sparsejit.xz new/sparsejit.xz new/spgemm_test.xz; do python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' $f; chmod +x ${f%.xz}; done
export SPARSEJIT_CLI=$PWD/new/sparsejit SPARSEJIT_SHARED_MATRICES=$PWD/t2 SPARSEJIT_CACHE_DIR=$(mktemp -d)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
timeout 170 new/spgemm_test > $OUT/spgemm_test.txt 2>&1; echo "spgemm_test rc=$?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED|Failure" $OUT/spgemm_test.txt | head -20
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 new/spgemm_test --gtest_filter='*ThinLongRows*:*WideDenseRows*:*Window*' > $OUT/memcheck.txt 2>&1; echo "memcheck rc=$?"
grep -E "ERROR SUMMARY|^\[  (PASSED|FAILED)" $OUT/memcheck.txt
WIDE="gen:rmat:200000:2000000 gen:chunglu:200000:2000000:2.4"
for b in base new; do
  SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 80 $b/sparsejit bench $WIDE --op spgemm --dtype f64 --variants all --repeat 3 --warmup 1 --json-out $OUT/wide_${b}_f64.jsonl > $OUT/wide_${b}_f64.txt 2>&1; echo "wide $b rc=$?"
  grep -E "^ *gen:" $OUT/wide_${b}_f64.txt | head
done
SET="gen:clustered:150000:20:0.6:32 gen:blockdiag:200000:16:2 gen:blockdiag:100000:32:1 gen:blockdiag:20000:32:1 gen:uniform:50000:20 gen:uniform:20000:20 gen:uniform:10000:20 gen:band:300000:24:64 gen:blockdiag:50000:64:1 gen:rmat:200000:2000000 gen:chunglu:200000:2000000:2.4 gen:clustered:200000:12:0.8:16 e/blogcatalog.smtx.gz $(ls t2/*.mtx.gz)"
SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 200 new/sparsejit bench $SET --op spgemm --dtype f32 --variants all --repeat 3 --warmup 1 --check --json-out $OUT/all_new_f32.jsonl > $OUT/all_new_f32.txt 2>&1; echo "bench all f32 rc=$?"
tail -4 $OUT/all_new_f32.txt
