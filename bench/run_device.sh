#!/usr/bin/env bash
# The standard benchmark sets of sparsejit, run on the lent GPU (see bench/README.md).
#
#   bench/run_device.sh MATRICES_DIR OUT_DIR [SPARSEJIT_BINARY]
#   SETS="spmm_f32" (or "sddmm_f32") runs one set only (a device call is limited to 10 minutes)
#   TIME_LIMIT=S passes --time-limit S to each matrix set: no (matrix, K) starts past S seconds
#   of that set, so a set cut short still writes its table and summary
#   SETS="spamm_8192" or "spamm_16384": SpAMM against cuBLAS (not in the default sets; estimated
#   at 2-3 and 4-5 minutes, not yet measured: run each in its own device call)
#   SETS="spmm_powerlaw": SpMM fp32 K=128,512 over the real graphs (MATRICES_DIR/graphs) and
#   generated power-law graphs of controlled degree exponent (not in the default sets; on an H200
#   with every variant forced, the first 20 of its 24 items took 300 s: run it in its own device
#   call with TIME_LIMIT, or in two)
#   SETS="spmm_rect": SpMM fp32 K=32,128,512 over generated pruned-layer shapes (gen:rect, 11
#   shapes at 2-70% density), matrices the SpMM model was not fitted on: its held-out check
#   (not in the default sets; 52 s on an H200 without --check)
#
# MATRICES_DIR  the shared matrices (every .mtx/.smtx(.gz) below it is measured)
# OUT_DIR       receives <set>.jsonl (one JSON line per matrix and K), <set>.txt (progress,
#               failures, the table and the per-K summary) and device.txt
# SPARSEJIT_BINARY  default: build/sparsejit beside this script's repository
#
# Sets: SpMM fp32 K=32,128,512 and SDDMM fp32 K=32,64,128, each over MATRICES_DIR plus
# generated matrices, with --check (every result of ours against the CPU reference).
# Measured on an H200 (2026-11-28, warm kernel cache, the shared matrices without graphs/ and
# sinc18): spmm_f32 212 s, sddmm_f32 516 s, so each set takes its own device call; most of it
# is on the host (reading gzip files, random fills, the CPU reference of --check, the 10M-nonzero
# generated matrices) and in the forced variants' plan preparation, not in GPU timing.
#
# Exit status: 0 when every set ran without a failed matrix or check, else 1 (the other sets
# still run).
set -u

if [ $# -lt 2 ]; then
  echo "usage: $0 MATRICES_DIR OUT_DIR [SPARSEJIT_BINARY]" >&2
  exit 1
fi
matrices=$1
out=$2
repo=$(cd "$(dirname "$0")/.." && pwd)
cli=${3:-$repo/build/sparsejit}
if [ ! -d "$matrices" ]; then echo "$0: matrices folder '$matrices' does not exist" >&2; exit 1; fi
if [ ! -x "$cli" ]; then echo "$0: no sparsejit binary at '$cli' (build the sparsejit_cli target)" >&2; exit 1; fi
mkdir -p "$out"

# Large generated matrices from ANCHORS.md and shapes the shared files lack: a power-law graph
# with long rows and clustered rows (the dense row segments RS-SpMM's split looks for).
generated=(gen:uniform:200000:50 gen:band:200000:64:256 gen:rmat:1000000:10500000 gen:clustered:400000:32:0.7:16)
# Power-law graphs of 2-20M nonzeros (issue 25), beside the six real graphs: Chung-Lu at degree
# exponents 2.1 (the heaviest tail: a 150k-nonzero top row at 8M), 2.4 and 2.8, and R-MAT
# milder than the default set's (a = 0.45 instead of 0.57). Generating one of 8M nonzeros takes
# under a second on two cores, the 20M one about 2 s; the CPU reference of --check takes more.
powerlaw=(gen:chunglu:500000:2000000:2.1 gen:chunglu:1000000:8000000:2.1 gen:chunglu:1000000:8000000:2.4
          gen:chunglu:1000000:8000000:2.8 gen:chunglu:2000000:20000000:2.4 gen:rmat:1000000:8000000:0.45)
# SDDMM in attention and pruned-weight shapes: one 4096x4096 pattern at densities 1%, 10%, 50%.
# and a 2M x 2M pattern of 12M nonzeros at density 3e-6 (0.0003%, the paper's sparsest).
# Pruned weight layers as generated patterns (issue 26: a held-out set for the SpMM model, whose
# costs were fitted on the DLMC layers): conv and fully connected shapes M x N at 2, 5, 10, 20,
# 35, 50 and 70% density, R = density x N uniform columns per row.
rect=()
for shape in 64:576 128:1152 256:2304 512:4608 256:1024 1024:256 2048:512 512:2048 512:512 1024:1024 4096:1024; do
  for percent in 2 5 10 20 35 50 70; do
    columns=${shape#*:}
    per_row=$(( (columns * percent + 50) / 100 ))
    rect+=("gen:rect:$shape:$(( per_row > 0 ? per_row : 1 ))")
  done
done
densities=(gen:uniform:4096:41 gen:uniform:4096:410 gen:uniform:4096:2048 gen:uniform:2000000:6)

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  "$cli" info
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv 2>&1
} > "$out/device.txt"

status=0
# run NAME ARGS...: one benchmark set, JSON lines to NAME.jsonl, everything else to NAME.txt.
run() {
  local name=$1
  shift
  local start=$SECONDS
  rm -f "$out/$name.jsonl"
  "$cli" bench "$@" --check ${TIME_LIMIT:+--time-limit "$TIME_LIMIT"} --json-out "$out/$name.jsonl" > /dev/null 2> "$out/$name.txt"
  local rc=$?
  echo "$name: exit $rc, $((SECONDS - start)) s" | tee -a "$out/device.txt"
  [ $rc -eq 0 ] || status=1
}

# run_spamm NAME ARGS...: a SpAMM set (generated decay inputs, every result compared with the
# exact product, so no --check).
run_spamm() {
  local name=$1
  shift
  local start=$SECONDS
  rm -f "$out/$name.jsonl"
  "$cli" bench --op spamm "$@" --repeat 10 --warmup 2 --json-out "$out/$name.jsonl" > /dev/null 2> "$out/$name.txt"
  local rc=$?
  echo "$name: exit $rc, $((SECONDS - start)) s" | tee -a "$out/device.txt"
  [ $rc -eq 0 ] || status=1
}

sets=${SETS:-spmm_f32 sddmm_f32}
[[ " $sets " == *" spamm_8192 "* ]] && run_spamm spamm_8192 --sizes 4096,8192 --decays algebraic,exponential --precisions full,tf32,fp16,bf16
[[ " $sets " == *" spamm_16384 "* ]] && run_spamm spamm_16384 --sizes 16384 --decays algebraic,exponential --precisions full,tf32,fp16,bf16
[[ " $sets " == *" spmm_f32 "* ]] && run spmm_f32 "$matrices" "${generated[@]}" --op spmm -k 32,128,512 --dtype f32
[[ " $sets " == *" sddmm_f32 "* ]] && run sddmm_f32 "$matrices" "${generated[@]}" "${densities[@]}" --op sddmm -k 32,64,128 --dtype f32
[[ " $sets " == *" spmm_rect "* ]] && run spmm_rect "${rect[@]}" --op spmm -k 32,128,512 --dtype f32
[[ " $sets " == *" spmm_powerlaw "* ]] && run spmm_powerlaw "$matrices/graphs" "${powerlaw[@]}" --op spmm -k 128,512 --dtype f32

# The summaries last, so the end of the output says how it went.
for name in $sets; do
  echo "== $name"
  grep '^K=' "$out/$name.txt"
  [[ $name == spamm_* ]] && grep -E '^(algebraic|exponential) ' "$out/$name.txt"
  grep -c . "$out/$name.jsonl" | sed 's/^/records: /'
done
exit $status
