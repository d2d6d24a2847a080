#!/usr/bin/env bash
# Runs every test suite (GPU suites skip themselves where no GPU exists) and exits non-zero
# if any test fails. Builds first if the build folder is stale.
#
#   SPARSEJIT_BUILD_DIR   build folder (default: build)
#   SPARSEJIT_JOBS        parallel jobs (default: number of cores)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${SPARSEJIT_BUILD_DIR:-build}
jobs=${SPARSEJIT_JOBS:-$(nproc)}
[ -d "$build_dir" ] || { echo "test: no $build_dir/; run tools/setup.sh first" >&2; exit 1; }
cmake --build "$build_dir" -j "$jobs"
ctest --test-dir "$build_dir" --output-on-failure -j "$jobs" "$@"
