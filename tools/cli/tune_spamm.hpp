// `sparsejit tune --op spamm`: measures where SpAMM's tile kernels stop beating cuBLAS on this
// GPU and fits the SpAMM model's rates to it (tuner/spamm_fit.hpp has the fit).
//
// Per size N and precision, on an algebraic decay input (0.1/(|i-j|^0.1+1), `bench --op
// spamm`'s), A and B in separate f32 buffers (so the norm pass reads both, as the model prices
// it; the bench's A·A reads one): cuBLAS's GEMM of the precision class (host-converted
// operands, the bench's baseline), then for each share τ is searched on the device and every
// tile variant that computes the precision is forced at that τ: once checked (C poisoned
// first; ||C - exact|| within the reported bound plus the precision's rounding of the exact
// DGEMM product, else the timing is left out of the fit), then timed with events (2 warm-up
// and 10 timed calls, the median). Timing simt beside mma for full f32 costs little (its 50%
// call is ~20 ms at N = 8192) and tunes a candidate the planner prices, so it is not skipped.
//
// Run time with the defaults (N = 4096 and 8192, every precision, shares 1, 5, 10, 25, 50%):
// 24 s on an H100 with a cold kernel cache (2026-11-24), mostly host work at N = 8192 (the
// input and its exact product, the checks each downloading and summing a 268 MB C); the timed
// calls themselves take ~3 s (SGEMM 22 ms a call, simt's and 3xTF32's 50% calls 10-20 ms).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_store.hpp"
#include "sparsejit/spamm.hpp"

namespace sparsejit::cli {

struct SpammTuneConfig {
  std::vector<int32_t> sizes;               // N of the N×N inputs
  std::vector<SpammPrecision> precisions;
  std::vector<double> shares;               // kept shares to time, ascending, in (0, 1]
  std::optional<std::string> write_models_dir;
  bool quiet = false;
};

// The defaults when a list is empty; InvalidInputError naming the value otherwise: a size
// outside [1, 65536], an unknown precision, a share outside (0, 1].
SpammTuneConfig spamm_tune_config(std::vector<int32_t> sizes, const std::vector<std::string>& precisions, std::vector<double> shares);

// Measures, fits, stores the tuned model in `store` for this GPU and prints the report.
void run_spamm_tune(const SpammTuneConfig& config, cache::CacheStore& store);

}  // namespace sparsejit::cli
