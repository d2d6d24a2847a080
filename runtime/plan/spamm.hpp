// SpAMM's planning, pure like every planner: the checks of a call's options, the tile size, the
// τ searches (their arithmetic; the caller evaluates a τ on the device or the CPU) and the
// variant choice over the registry (runtime/variants/spamm/).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/planner.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/spamm.hpp"

namespace sparsejit::plan {

// C ≈ A·B with A m×k, B k×n (row-major, leading dimensions lda, ldb, ldc), tiles of `tile`.
// dtype is C's value type; operands the type A and B are stored in: dtype itself, or f16/bf16
// operands of the fp16/bf16 precisions, whose products accumulate into f32 C.
struct SpammProblem {
  DType dtype = DType::F32;
  DType operands = DType::F32;
  SpammPrecision precision = SpammPrecision::Full;
  int32_t m = 0, k = 0, n = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int32_t tile = 64;
  int32_t tile_rows() const { return int32_t((int64_t(m) + tile - 1) / tile); }
  int32_t tile_inner() const { return int32_t((int64_t(k) + tile - 1) / tile); }
  int32_t tile_cols() const { return int32_t((int64_t(n) + tile - 1) / tile); }
};

// What the planner reads: the selection at the call's τ (spamm_selection's, or the device's).
struct SpammFeatures {
  double tau = 0;
  SpammSelection selection;
  // The call asked for a share and τ is still to be found: a tile variant would pay the norm
  // pass and the search first, cuBLAS (decided now) neither. The selection is then the share
  // asked, not a measured one.
  bool tau_to_search = false;
};
// Keys: tau valid_products tile_products valid_ratio error_bound tile.
nlohmann::json to_json(const SpammFeatures& features, const SpammProblem& problem);

// The tile sizes the kernels are built for.
inline constexpr int32_t kSpammTiles[] = {32, 64, 128};

// Refuses, with an InvalidInputError naming the value, an option out of its range (more than
// one of tau / valid_ratio / max_error, tau or max_error negative or not finite, valid_ratio
// outside (0, 1], ratio_tolerance outside (0, 1), max_search_iterations outside [1, 200], a
// tile other than 0, 32, 64, 128); UnsupportedError for a reduced precision with f64 or a
// value type other than f32 and f64.
void check_spamm_options(const SpammOptions& options, DType dtype);

// The tile: the forced one, else 64 (a 64x64 tile product is 0.5 MFLOP, enough to keep a
// block's tensor cores busy between the norm checks, and fine enough to skip work on decay
// matrices), 32 when the matrices are smaller than 8 tiles of 64 in every dimension.
int32_t spamm_tile(int32_t m, int32_t k, int32_t n, const SpammOptions& options);

// One evaluation of a τ: its selection (valid count, bound, product range).
using SelectionAt = std::function<SpammSelection(double tau)>;

struct TauSearch {
  double tau = 0;
  SpammSelection selection;  // at tau
  int iterations = 0;        // evaluations, the first (at τ = 0) included
};

// The τ whose kept share is within tolerance · target of target (geometric bisection between
// the smallest positive and the largest product, cuSpAMM 3.5.2's search in log space), else
// the closest one seen in max_iterations evaluations or once the bracket is within a relative
// 1e-9. Shares at or above the share of positive products give τ = 0.
TauSearch search_tau_for_ratio(double target, double tolerance, int max_iterations, const SelectionAt& at);

// The largest τ (to the bisection's resolution, a relative 1e-9, or after max_iterations)
// whose error bound is ≤ max_error; every product skipped (τ above the largest) when even
// that stays under it.
TauSearch search_tau_for_error(double max_error, int max_iterations, const SelectionAt& at);

// The variant: forced (options.variant / params), else the cheapest by the model's cost
// formulas (models/spamm.json) among those that accept the precision.
Decision plan_spamm(const SpammFeatures& features, const SpammProblem& problem, const DeviceTarget& device,
                    const SpammOptions& options, const PlanSources& sources = {});

std::vector<std::string> spamm_variants();

}  // namespace sparsejit::plan
