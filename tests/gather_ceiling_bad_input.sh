#!/usr/bin/env bash
# bench/gather_ceiling.cu refuses malformed arguments and files with one clear line and exit
# status 1, before any CUDA call (so this runs without a GPU).
# Usage: gather_ceiling_bad_input.sh NVCC SOURCE WORKDIR
set -euo pipefail
nvcc=$1 source=$2 work=$3
mkdir -p "$work"
bin=$work/gather_ceiling
"$nvcc" -O1 -std=c++17 -arch=sm_90 -o "$bin" "$source" -lcusparse -lz
printf '3, 3, 2\n0 1 1 2\n0 7\n' | gzip > "$work/bad_column.smtx.gz"
printf '3, 3, 2\n0 2 1 2\n0 1\n' | gzip > "$work/bad_offsets.smtx.gz"
printf 'hello\n' | gzip > "$work/no_header.smtx.gz"
printf '3, 3, 2\n0 1 1 2\n0 1\n' | gzip > "$work/good.smtx.gz"
failed=0
expect() {  # expect MESSAGE ARGS...: exit status 1 and MESSAGE on stderr
  local message=$1; shift
  local out rc=0
  out=$("$bin" "$@" 2>&1) || rc=$?
  if [ "$rc" -ne 1 ] || [[ "$out" != *"$message"* ]]; then
    echo "FAIL: gather_ceiling $* gave rc=$rc: $out (wanted: $message)"; failed=1
  else
    echo "ok: gather_ceiling $*: $out"
  fi
}
expect "usage: gather_ceiling GRAPH.smtx.gz K"
expect "usage: gather_ceiling GRAPH.smtx.gz K" "$work/good.smtx.gz"
expect "K = '100' must be a multiple of 128" "$work/good.smtx.gz" 100
expect "K = '12x' must be a multiple of 128" "$work/good.smtx.gz" 12x
expect "cannot open '$work/missing.smtx.gz'" "$work/missing.smtx.gz" 128
expect "does not start with a .smtx header" "$work/no_header.smtx.gz" 128
expect "row offsets must rise from 0 to nnz = 2" "$work/bad_offsets.smtx.gz" 128
expect "column index 7 outside [0, 3)" "$work/bad_column.smtx.gz" 128
exit $failed
