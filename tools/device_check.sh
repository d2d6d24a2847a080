#!/usr/bin/env bash
# One device session's checks, in the order they pay off: every GPU test suite (each under a
# time limit, so one hang cannot eat the session), then compute-sanitizer memcheck and
# racecheck on subsets of the kernel suites. Logs are packed into $OUT/device_logs.tgz (the
# device tool returns at most 8 files); a short table is printed last. Run tools/stage_device.sh here first.
#   SUITE_TIMEOUT      seconds per suite (default 240)
#   SANITIZER_TIMEOUT  seconds per sanitizer pass (default 150; each subset below is sized to
#                      finish well under 100 s, kernels run 10-100x slower under a sanitizer)
#   SANITIZER_FILTER   gtest filter of the runtime_test pass (default below)
#   SUITES             only these suites, by name (e.g. "measure_test bench_test"), and only
#                      the sanitizer passes over them (default: every suite in .carry/bin)
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
export SPARSEJIT_SHARED_MATRICES=${SPARSEJIT_SHARED_MATRICES:-$PWD/.carry/matrices}
export SPARSEJIT_CLI=$PWD/.carry/bin/sparsejit
export LD_LIBRARY_PATH=$PWD/.carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export SPARSEJIT_CACHE_DIR=$(mktemp -d)
summary=()
selected() { [ -z "${SUITES:-}" ] || [[ " $SUITES " == *" $1 "* ]]; }
for t in .carry/bin/*_test; do
  name=$(basename "$t")
  selected "$name" || continue
  start=$SECONDS
  timeout "${SUITE_TIMEOUT:-240}" "$t" >"$out/$name.log" 2>&1
  rc=$?
  line=$(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test' "$out/$name.log" | tr '\n' ' ')
  summary+=("$name: rc=$rc $((SECONDS - start))s $line")
done
# Sanitizer passes, "suite:gtest filter" (the filter may hold more colons): few shapes each.
#   runtime_test           the automatic SDDMM choices on the shared matrices, and empty inputs
#                          (SpmmShared measures its shortlists on the larger shared matrices: over
#                          150 s under racecheck; the SpMM kernels are covered by the suites below)
#   rs_spmm_test           rs and csr_vector forced, A·B and Aᵀ·B, padded rows, a split rebuilt
#                          for new values (the GPU split builder), an empty matrix
#   sddmm_variants_test    every variant and parameter set on two small shapes, and the reuse path
#   sddmm_row_dense_test   dense_tile and dense_mma with 1, 2 and 4 K slices in flight, dense_wgmma
#                          with 2 to 4, one shape; panel_gather on small and default tiles
#   row_segments_gpu_test  the GPU split builder (CUB scans and sort, our fill kernels)
#   split_rows_spmm_test   csr_merge and csr_rowsplit on one huge row among short ones, padded rows
#   dense_spmm_test        the dense copy (memset + scatter kernel) and cuBLAS on padded rows,
#                          copies rebuilt for new values
#   spamm_test             every SpAMM path and precision on odd sizes (partial tiles, padded
#                          leading dimensions), τ = 0 without early launch, an empty inner dimension
sanitizer_passes=(
  "runtime_test:${SANITIZER_FILTER:-RuntimeGpu.SddmmShared*:RuntimeGpu.Empty*}"
  "rs_spmm_test:RsSpmmGpu.PaddedLeadingDimensions:RsSpmmGpu.NewValuesRebuildTheSplit:RsSpmmGpu.EmptyMatrix*"
  "sddmm_variants_test:SddmmVariantsGpu.EveryVariantOnSmallShapes:SddmmVariantsGpu.Reused*"
  "sddmm_row_dense_test:SddmmRowDenseGpu.DenseTileEveryStageCountOnASmallShape:SddmmRowDenseGpu.DenseMmaEveryStageCountOnASmallShape:SddmmRowDenseGpu.DenseWgmmaEveryStageCountOnASmallShape:SddmmRowDenseGpu.PanelGatherOnASmallShape"
  "row_segments_gpu_test:RowSegmentsGpu.DocumentedExample*:RowSegmentsGpu.EqualsTheHostBuilderForEveryValueType"
  "split_rows_spmm_test:SplitRowsGpu.PaddedLeadingDimensions:SplitRowsGpu.MergeEmptyMatrixGivesZeros"
  "dense_spmm_test:DenseSpmmGpu.PaddedLeadingDimensions:DenseSpmmGpu.NewValuesRebuildTheCopy"
  "spamm_test:SpammGpu.EveryPathF32OnDecayInputsOfOddSizes:SpammGpu.TauZeroIsTheExactProductAndEarlyLaunchOffRuns:SpammGpu.EmptyInnerDimensionGivesZeros"
)
# racecheck skips cuSPARSE's own kernels (kns: substring of the kernel's mangled name, which
# holds the cusparse namespace): the hazards it reported inside csrmv_v3_kernel and sddmm_ker
# are the library's, and their volume hit the hazard cap before our kernels were reached.
# memcheck keeps them: a bad pointer we hand cuSPARSE shows up as its kernel's access.
sanitizer_options() {
  case $1 in
    racecheck) echo "--tool racecheck --kernel-name-exclude kns=cusparse" ;;
    *) echo "--tool $1" ;;
  esac
}
if command -v compute-sanitizer >/dev/null; then
  for pass in "${sanitizer_passes[@]}"; do
    suite=${pass%%:*}
    filter=${pass#*:}
    selected "$suite" || continue
    for tool in memcheck racecheck; do
      log="$out/sanitizer_${tool}_$suite.log"
      start=$SECONDS
      # shellcheck disable=SC2046  # the options are words
      timeout "${SANITIZER_TIMEOUT:-150}" compute-sanitizer $(sanitizer_options $tool) --error-exitcode 9 \
        ".carry/bin/$suite" --gtest_filter="$filter" >"$log" 2>&1
      rc=$?
      summary+=("compute-sanitizer $tool $suite: rc=$rc $((SECONDS - start))s $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)  \]' "$log" | tr '\n' ' ')")
    done
  done
fi
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
[ -n "${OUT:-}" ] && tar czf "$OUT/device_logs.tgz" -C "$out" .
