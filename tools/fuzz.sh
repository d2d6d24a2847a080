#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz/, clang with ASan and UBSan) and runs each one:
# first on every kept crash input (tests/fuzz/crashes/<harness>/, each one a regression test
# that must pass now), then for a bounded time from its seed corpus (tests/fuzz/corpus/<harness>/).
# New inputs go to a scratch corpus in the build folder, never into the repository. A crash
# stops the run with status 1 and leaves its input under the build folder's artifacts/; copy
# it into tests/fuzz/crashes/<harness>/ once fixed. The ctest test `fuzz` runs this.
#
#   SPARSEJIT_FUZZ_BUILD_DIR   build folder (default: build-fuzz)
#   SPARSEJIT_FUZZ_SECONDS     seconds of fuzzing per harness (default: 30)
#   SPARSEJIT_JOBS             parallel compile jobs (default: number of cores)
#   SPARSEJIT_BUILD_DIR        the regular build whose runtime and tuner libraries fuzz_cli_args
#                              links (default: build); they are brought up to date first
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath -m "${SPARSEJIT_FUZZ_BUILD_DIR:-build-fuzz}")
seconds=${SPARSEJIT_FUZZ_SECONDS:-30}
jobs=${SPARSEJIT_JOBS:-$(nproc)}
harnesses=(fuzz_matrix_file fuzz_choice_text fuzz_model_json fuzz_cli_args)
library_build=$(realpath -m "${SPARSEJIT_BUILD_DIR:-build}")

# libFuzzer comes with clang's runtime (Debian: clang, libclang-rt-dev; tools/setup.sh).
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' > "$probe/probe.cpp"
if ! command -v clang++ >/dev/null 2>&1 ||
   ! clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" >/dev/null 2>&1; then
  echo "fuzz: skipped (no clang++ with libFuzzer; tools/setup.sh installs clang and libclang-rt-dev)"
  exit 0
fi

if [ ! -f "$library_build/CMakeCache.txt" ]; then
  echo "fuzz: no build in $library_build, whose libraries fuzz_cli_args links (tools/setup.sh makes one; SPARSEJIT_BUILD_DIR names another)" >&2
  exit 1
fi
cmake --build "$library_build" --target sparsejit_tuner -j "$jobs" >/dev/null
# ccache, where present, keeps a rebuild of the CLI's sources for fuzz_cli_args cheap.
launcher=()
if command -v ccache >/dev/null 2>&1; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S tests/fuzz -B "$build_dir" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSPARSEJIT_LIBRARY_DIR="$library_build" "${launcher[@]}" >/dev/null
cmake --build "$build_dir" -j "$jobs" >/dev/null

mkdir -p "$build_dir/artifacts"
for harness in "${harnesses[@]}"; do
  crashes=tests/fuzz/crashes/$harness
  if compgen -G "$crashes/*" >/dev/null; then
    "$build_dir/$harness" "$crashes"/* >/dev/null 2>"$build_dir/$harness.regressions.log" ||
      { cat "$build_dir/$harness.regressions.log" >&2; echo "fuzz: $harness fails a kept crash input" >&2; exit 1; }
  fi
  work=$build_dir/corpus/$harness
  mkdir -p "$work"
  log=$build_dir/$harness.log
  if ! "$build_dir/$harness" "$work" "tests/fuzz/corpus/$harness" -max_total_time="$seconds" -max_len=65536 \
       -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -artifact_prefix="$build_dir/artifacts/$harness-" \
       >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    echo "fuzz: $harness found a crash; its input is in $build_dir/artifacts/" >&2
    exit 1
  fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  coverage=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1)
  features=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1)
  corpus=$(ls "$work" | wc -l)
  echo "fuzz: $harness: $runs runs in ${seconds}s, $coverage, $features, corpus $corpus inputs, no crash"
done
