#!/usr/bin/env bash
# One device session's checks, in the order they pay off: the GPU test suites, then
# compute-sanitizer (memcheck and racecheck) on the kernel suites, then cache behaviour across
# processes and the per-call costs. Writes logs under $OUT (or /tmp) and a short table last.
#   $1: folder of shared matrices copied next to the build (default .carry/matrices)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/sparsejit-device}
mkdir -p "$out"
export SPARSEJIT_SHARED_MATRICES=${1:-$PWD/.carry/matrices}
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
summary=()
for t in .carry/bin/*_test; do
  name=$(basename "$t")
  if "$t" >"$out/$name.log" 2>&1; then summary+=("$name: $(grep -E '^\[  PASSED  \]' "$out/$name.log")")
  else summary+=("$name: FAILED $(grep -E '^\[  FAILED  \]' "$out/$name.log" | head -3 | tr '\n' ' ')"); fi
done
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    filter=${SANITIZER_FILTER:-RuntimeGpu.Sddmm*:RuntimeGpu.SpmmShared*:RuntimeGpu.Empty*}
    compute-sanitizer --tool $tool --error-exitcode 9 .carry/bin/runtime_test --gtest_filter="$filter" >"$out/sanitizer_$tool.log" 2>&1
    summary+=("compute-sanitizer $tool ($filter): rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.log" | tail -1)")
  done
fi
printf '%s\n' "${summary[@]}"
