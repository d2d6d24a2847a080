#!/usr/bin/env bash
# Stages what a device run needs into .carry/ (ignored by git; carried with the device tool):
# the GPU test binaries (one per tests/gpu/*_test.cpp) and the CLI in .carry/bin, the shared
# libraries of a BUILD_SHARED_LIBS build in .carry/lib, and the shared matrices (graphs/ left
# out: the suites do not read them, and the device tool carries at most 64 MiB).
# tools/device_check.sh points the suites at the staged CLI and libraries.
#   $1: shared matrices folder (default ../shared/matrices)
#   SPARSEJIT_BUILD_DIR  the build to stage (default build; a shared-library build keeps
#                        each test binary small: configure it with -DBUILD_SHARED_LIBS=ON)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${SPARSEJIT_BUILD_DIR:-build}
rm -rf .carry/bin .carry/lib .carry/matrices && mkdir -p .carry/bin .carry/lib .carry/matrices
for src in tests/gpu/*_test.cpp; do
  name=$(basename "$src" .cpp)
  cp "$build/tests/$name" .carry/bin/
done
cp "$build/sparsejit" .carry/bin/
find "$build" -maxdepth 1 -name 'lib*.so*' -exec cp -P {} .carry/lib/ \;
matrices=${1:-../shared/matrices}
cp "$matrices"/*.mtx.gz .carry/matrices/
cp -r "$matrices/dlmc" .carry/matrices/
du -sh --apparent-size .carry
