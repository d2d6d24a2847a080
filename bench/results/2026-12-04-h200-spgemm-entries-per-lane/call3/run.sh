#!/usr/bin/env bash
# Numeric phase by entries (pattern reused): products a lane (per_lane 2/4/8), warp ranges per
# multiprocessor and warps a block swept, f32 and f64; every forced kernel on events and on the
# graph clock, checked against the CPU reference. Nsight Compute on bcsstk13's entries kernel.
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
for f in A/*.pk; do python3 pack.py unpack $f ${f%.pk}.smtx; done
R=$OUT/r; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $R/device.txt; date -u >> $R/device.txt
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
run() {  # name, env...
  local name=$1; shift
  env "$@" timeout 120 ./sparsejit bench A/*.smtx --op spgemm --dtype ${DT:-f32} --variants all --repeat 5 --warmup 1 --check --json-out $R/$name.jsonl > $R/log_$name.txt 2>&1
  echo "$name rc=$? at $SECONDS s"
}
run f32_pl8 SJ_EXP_ENTRY_PER_LANE=8
run f32_pl4 SJ_EXP_ENTRY_PER_LANE=4
run f32_pl2 SJ_EXP_ENTRY_PER_LANE=2
run f32_pl2_r96 SJ_EXP_ENTRY_PER_LANE=2 SJ_EXP_ENTRY_RANGES=96
run f32_pl2_r24 SJ_EXP_ENTRY_PER_LANE=2 SJ_EXP_ENTRY_RANGES=24
run f32_pl4_w8 SJ_EXP_ENTRY_PER_LANE=4 SJ_EXP_ENTRY_WARPS=8
DT=f64 run f64_pl4 SJ_EXP_ENTRY_PER_LANE=4
DT=f64 run f64_pl2 SJ_EXP_ENTRY_PER_LANE=2
python3 summary.py $R/f*.jsonl > $R/summary.txt 2>&1; cat $R/summary.txt
tar czf $OUT/results.tgz -C $OUT r
