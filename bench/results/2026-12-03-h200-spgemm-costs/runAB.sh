#!/usr/bin/env bash
# Device calls A and B (session 47): auto's whole call over cuSPARSE's on the whole SpGEMM set,
# new build (52f2883), --variants auto, --check. A: the shared square matrices; B: the shared
# graphs and generated matrices of 10-18 M nonzeros (and two power-law ones of 2 M).
# Usage: runAB.sh A|B
set -u
cd "$(dirname "$0")"
part=$1
python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' new/sparsejit.xz; chmod +x new/sparsejit
for f in $part/*.xz; do python3 -c 'import lzma,sys; open(sys.argv[1][:-3],"wb").write(lzma.open(sys.argv[1]).read())' $f; rm $f; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt
SET="$(ls $part/*mtx)"
[ "$part" = B ] && SET="$SET gen:band:1000000:16:64 gen:uniform:1000000:10 gen:clustered:1000000:12:0.8:16 gen:blockdiag:500000:32:4 gen:blockdiag:400000:32:0 gen:rmat:100000:1000000 gen:rmat:200000:2000000 gen:chunglu:200000:2000000:2.4"
for dt in f32 f64; do
  SPARSEJIT_CACHE_DIR=$(mktemp -d) timeout 250 new/sparsejit bench $SET --op spgemm --dtype $dt --variants auto --repeat 3 --warmup 1 --check --json-out $OUT/${part}_$dt.jsonl > $OUT/bench_${part}_$dt.txt 2>&1; echo "bench $part $dt rc=$?"
  grep -E "^spgemm" $OUT/bench_${part}_$dt.txt
done
