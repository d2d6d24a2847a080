#!/usr/bin/env bash
# Numeric phase (pattern reused), f32: the warp kernel's schedules held in registers (HELD=1)
# against loaded per batch (HELD=0), and the warp / entries plan constants swept; every forced
# kernel timed on events and on the graph clock, checked against the CPU reference.
set -u
cd "$(dirname "$0")"
python3 -c "import lzma,shutil; shutil.copyfileobj(lzma.open('sparsejit.xz'), open('sparsejit','wb'))"; chmod +x sparsejit
for f in A/*.pk; do python3 pack.py unpack $f ${f%.pk}.smtx; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/device.txt; date -u >> $OUT/device.txt
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
run() {  # name, env...
  local name=$1; shift
  env "$@" timeout 120 ./sparsejit bench A/*.smtx --op spgemm --dtype ${DT:-f32} --variants all --repeat 5 --warmup 1 --check --json-out $OUT/$name.jsonl > $OUT/log_$name.txt 2>&1
  echo "$name rc=$? at $SECONDS s"
}
run r0_old SJ_EXP_HELD=0
run r1_held SJ_EXP_HELD=1
run r2_held_u8_pl4 SJ_EXP_HELD=1 SJ_EXP_WARP_UNROLL=8 SJ_EXP_ENTRY_PER_LANE=4
run r3_held_t80_r96 SJ_EXP_HELD=1 SJ_EXP_WARP_TASKS=80 SJ_EXP_ENTRY_RANGES=96
run r4_held_t20_pl16 SJ_EXP_HELD=1 SJ_EXP_WARP_TASKS=20 SJ_EXP_ENTRY_PER_LANE=16
run r5_held_u8_t80 SJ_EXP_HELD=1 SJ_EXP_WARP_UNROLL=8 SJ_EXP_WARP_TASKS=80
run r6_old_u8 SJ_EXP_HELD=0 SJ_EXP_WARP_UNROLL=8
DT=f64 run r7_f64_old SJ_EXP_HELD=0
DT=f64 run r8_f64_held SJ_EXP_HELD=1
for h in 0 1; do
  SJ_EXP_HELD=$h timeout 100 ncu --kernel-name regex:warp_positions_numeric --launch-skip 3 --launch-count 1 \
    --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis \
    ./sparsejit bench A/bcsstk13.smtx --op spgemm --variants all --repeat 1 --warmup 0 > $OUT/ncu_held$h.txt 2>&1
  echo "ncu $h rc=$? at $SECONDS s"
done
python3 summary.py $OUT/r*.jsonl > $OUT/summary.txt 2>&1; cat $OUT/summary.txt
