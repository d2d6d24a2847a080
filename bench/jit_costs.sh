#!/usr/bin/env bash
# The costs of the JIT path on the device, for the README: NVRTC compile ms of each kernel
# (first process, empty cache), cubin load ms from the SQLite cache (second process), and the
# host time of a repeated auto call. Each line comes from `sparsejit run`.
#   $1: sparsejit binary (default build/sparsejit)
set -uo pipefail
cli=${1:-build/sparsejit}
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
for args in "--op spmm -k 128 --variant csr_rowwarp" "--op spmm -k 128 --variant csr_vector" "--op spmm -k 128 --variant rs" \
            "--op spmm -k 128" "--op sddmm -k 64 --variant coo_flat" "--op sddmm -k 64"; do
  for process in first second; do
    echo "== $process process: $args"
    "$cli" run gen:uniform:100000:16 $args --check | sed -n '1p;2p;4p'
  done
done
