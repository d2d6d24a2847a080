#!/usr/bin/env bash
# One device session's checks, in the order they pay off: every GPU test suite (each under a
# time limit, so one hang cannot eat the session), then compute-sanitizer memcheck and
# racecheck on a subset of the kernel suites. Logs are packed into $OUT/device_logs.tgz (the
# device tool returns at most 8 files); a short table is printed last. Run tools/stage_device.sh here first.
#   SUITE_TIMEOUT     seconds per suite (default 240)
#   SANITIZER_FILTER  gtest filter for the sanitizer runs
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
export SPARSEJIT_SHARED_MATRICES=${SPARSEJIT_SHARED_MATRICES:-$PWD/.carry/matrices}
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
summary=()
for t in .carry/bin/*_test; do
  name=$(basename "$t")
  start=$SECONDS
  timeout "${SUITE_TIMEOUT:-240}" "$t" >"$out/$name.log" 2>&1
  rc=$?
  line=$(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$out/$name.log" | tr '\n' ' ')
  summary+=("$name: rc=$rc $((SECONDS - start))s $line")
done
if command -v compute-sanitizer >/dev/null; then
  filter=${SANITIZER_FILTER:-RuntimeGpu.SddmmShared*:RuntimeGpu.SpmmShared*:RuntimeGpu.Empty*}
  for tool in memcheck racecheck; do
    start=$SECONDS
    timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 .carry/bin/runtime_test --gtest_filter="$filter" \
      >"$out/sanitizer_$tool.log" 2>&1
    rc=$?
    summary+=("compute-sanitizer $tool: rc=$rc $((SECONDS - start))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer_$tool.log" | tail -1)")
  done
fi
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
[ -n "${OUT:-}" ] && tar czf "$OUT/device_logs.tgz" -C "$out" .
