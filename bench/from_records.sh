#!/usr/bin/env bash
# Issue 26's before/after protocol for `sparsejit tune --from-records`, on the lent GPU:
#
#   bench/from_records.sh OP MATRICES_DIR OUT_DIR [SPARSEJIT_BINARY] [PHASE]
#
# OP      spmm or sddmm: the benchmark set bench/run_device.sh runs for it (<op>_f32)
# PHASE   both (default), before or after. `before` runs the set with the model in use (its auto
#         measures and stores tuning records in SPARSEJIT_CACHE_DIR), then `tune --op OP
#         --from-records --held-out`; `after` runs the set again with whatever that kept. A device
#         call is limited to 10 minutes, so the two phases may run in two calls: carry the cache
#         folder between them.
# OUT_DIR receives before/ and after/ (run_device.sh's files), tune_from_records.log,
#         held_out_OP.txt and model_alone.txt (bench/model_alone.py over both runs, on every
#         pattern and on the held-out ones alone).
set -u

if [ $# -lt 3 ]; then
  echo "usage: $0 spmm|sddmm MATRICES_DIR OUT_DIR [SPARSEJIT_BINARY] [both|before|after]" >&2
  exit 1
fi
op=$1
matrices=$2
out=$3
repo=$(cd "$(dirname "$0")/.." && pwd)
cli=${4:-$repo/build/sparsejit}
phase=${5:-both}
case $op in spmm | sddmm) ;; *) echo "$0: OP '$op' is not spmm or sddmm" >&2; exit 1 ;; esac
case $phase in both | before | after) ;; *) echo "$0: PHASE '$phase' is not both, before or after" >&2; exit 1 ;; esac
if [ -z "${SPARSEJIT_CACHE_DIR:-}" ]; then
  echo "$0: set SPARSEJIT_CACHE_DIR: the records of the first run must reach the tuner and the second run" >&2
  exit 1
fi
mkdir -p "$out"
status=0

if [ "$phase" != after ]; then
  SETS=${op}_f32 "$repo/bench/run_device.sh" "$matrices" "$out/before" "$cli" || status=1
  "$cli" tune --op "$op" --from-records --held-out "$out/held_out_$op.txt" > "$out/tune_from_records.log" 2>&1 || status=1
  tail -3 "$out/tune_from_records.log"
fi
if [ "$phase" != before ]; then
  SETS=${op}_f32 "$repo/bench/run_device.sh" "$matrices" "$out/after" "$cli" || status=1
fi

python3 "$repo/bench/model_alone.py" "$out"/*/"${op}_f32.jsonl" $([ -s "$out/held_out_$op.txt" ] && echo --held-out "$out/held_out_$op.txt") \
  | tee "$out/model_alone.txt"
exit $status
