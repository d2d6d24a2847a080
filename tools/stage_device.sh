#!/usr/bin/env bash
# Stages what a device run needs into .carry/ (ignored by git; carried with the device tool):
# the GPU test binaries (one per tests/gpu/*_test.cpp) and the shared matrices. The CLI
# travels as build/sparsejit, where the tests expect it.
#   $1: shared matrices folder (default ../shared/matrices)
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .carry/bin && mkdir -p .carry/bin .carry/matrices
for src in tests/gpu/*_test.cpp; do
  name=$(basename "$src" .cpp)
  cp "build/tests/$name" .carry/bin/
done
rm -rf .carry/matrices && cp -r "${1:-../shared/matrices}" .carry/matrices && rm -f .carry/matrices/SOURCES.md
du -sh --apparent-size .carry build/sparsejit
