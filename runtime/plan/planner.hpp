// Planner inputs shared by every op: the device a plan is for and the per-call problem.
// Each op has its own planner file (plan/spmm.cpp, plan/sddmm.cpp); every decision of the
// runtime lives in a planner, so templates and executors only carry out a Decision.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/choose.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/options.hpp"
#include "sparsejit/types.hpp"

namespace sparsejit::plan {

// The GPU a plan is for. Without a GPU (explain on a laptop) the defaults describe an sm_90
// part, so plans and compiles still work; `present` says whether it is real.
struct DeviceTarget {
  std::string name = "sm_90 (no GPU)";
  int sm = 90;
  int multiprocessors = 132;
  int64_t shared_per_block_optin = 227 * 1024;
  int64_t shared_per_sm = 228 * 1024;
  // The SM's unified L1/shared-memory capacity: what a kernel without shared memory caches in L1.
  int64_t l1_per_sm = 256 * 1024;
  int max_threads_per_sm = 2048;
  int max_blocks_per_sm = 32;
  bool present = false;
  // The device memory a call can take now: the device's free memory plus what the runtime's
  // memory pools hold unused, measured by the executor when it plans (SpGEMM). None where
  // unknown (explain): then only Options::memory_limit_bytes bounds the plan.
  std::optional<int64_t> free_bytes;
};

struct SpmmProblem {
  int32_t k = 0;           // columns of B and C
  DType dtype = DType::F32;
  bool transpose_a = false;
  int64_t ldb = 0;         // leading dimensions of B and C (0: = k); 16-byte vector loads
  int64_t ldc = 0;         // need them divisible by the vector width
};

// Heavy/light split statistics of the matrix being planned for a panel width W and a
// threshold T (row_segment_split of features.hpp); the caller may cache them. The split
// variant is priced with them; without a source it is not offered.
using SplitStatsSource = std::function<SplitStats(int32_t panel_width, int32_t threshold)>;

struct SddmmProblem {
  int32_t k = 0;           // inner dimension: columns of A and B
  DType dtype = DType::F32;
  int64_t lda = 0;         // leading dimensions of A and B: vector loads need them divisible
  int64_t ldb = 0;
  // The matrix handle has already served an SDDMM call (any K or type): its pattern is being
  // reused, so per-pattern preprocessing (reindexed_tiled) is admitted even for Reuse::Once.
  // The executor sets it from the handle's cache.
  bool pattern_seen = false;
  // Exact count of non-empty tile_rows x tile_cols tiles of S, any shape (formats::count_tiles:
  // the dense variants' tiles, panel_gather's bands x panels), when the caller has the pattern;
  // the executor caches it on the handle per shape. Without it the planner estimates the count
  // from the features (see sddmm_tile_fill).
  std::function<int64_t(int32_t tile_rows, int32_t tile_cols)> tile_count = nullptr;
};

// C = A·B with A m×k and B k×n sparse, C a new m×n CSR (Runtime::spgemm).
struct SpgemmProblem {
  DType dtype = DType::F32;
  int32_t m = 0;  // rows of A and C
  int32_t k = 0;  // columns of A, rows of B
  int32_t n = 0;  // columns of B and C
};

// A choice the tuning records of this device make for a feature bucket (plan/tuned.hpp).
struct TunedChoice {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  std::string bucket;
  int cases = 0;
};
using TunedLookup = std::function<std::optional<TunedChoice>(const std::string& bucket)>;

// What a planner decides from besides the features, the problem, the device and the call's
// options (whose variant and params are the forced choice): the caller gathers these
// (ops/plan_sources.hpp reads them from the cache database), so a planner reads no
// environment, cache or singleton and a unit test builds every input by hand.
struct PlanSources {
  // The op's model: the tuned model of this device, else the shipped one. Null: the shipped
  // models/<op>.json.
  std::shared_ptr<const nlohmann::json> model;
  // The tuning records' choice for a feature bucket; empty: no records.
  TunedLookup tuned;
};

// The plan of one call (DESIGN.md's order: forced, tuned record, model, default). A forced
// choice is options.variant / options.params (ops/ folds SPARSEJIT_FORCE into them).
Decision plan_spmm(const Features& features, const SpmmProblem& problem, const DeviceTarget& device, const Options& options,
                   const SplitStatsSource& split_stats = {}, const PlanSources& sources = {});
// SDDMM's candidates are the registered variants (variants/sddmm/). sources.model may be a
// tuned model of the shipped one's form ({"id", "version", "tree", "launch", "cost"}; "launch"
// entries it lacks fall back to the shipped ones; the tuner passes its own). The variant is
// the cheapest candidate under "cost", or the leaf of the model's "tree" when it has one (the
// shipped model has none; `sparsejit tune` trains one) and the leaf can run the problem
// (features: those of to_json(Features) plus k, value_bytes and pattern_reused, 1 when
// Options::reuse is Many or problem.pattern_seen, and tile_fill, see sddmm_tile_fill, with the
// model's dense_tile tile).
Decision plan_sddmm(const Features& features, const SddmmProblem& problem, const DeviceTarget& device, const Options& options,
                    const PlanSources& sources = {});

// SpGEMM over the registered variants (runtime/variants/spgemm/): forced, else the cheapest by
// the model's cost formulas (models/spgemm.json; no tuning records or trees for SpGEMM yet).
// The features are those of the pair (spgemm_features(A, B)). Refuses, with an
// InvalidInputError naming the values, a problem whose shapes differ from the features' and a
// product count NNZ(Ĉ) over 2^31-1: C's int32 row offsets could not be proven to address the
// result (NNZ(C) <= NNZ(Ĉ)), and it is refused before anything is allocated.
// Memory: the call's budget is the smaller of device.free_bytes and
// options.memory_limit_bytes (InvalidInputError naming a limit <= 0). Each candidate's peak
// (its workspace and C's arrays, NNZ(C) at its upper bound) is recorded in the decision's
// features ("memory"); a candidate whose peak passes the budget is rejected naming the bytes,
// after its variant was asked for parameters that fit (row_hash: row panels, fewer global
// tables). When none fits with C at its upper bound, C is taken at its lower bound and the
// execution checks the exact size before allocating C. UnsupportedError naming the bytes when
// nothing fits even so, and for a forced choice that does not fit.
Decision plan_spgemm(const SpgemmFeatures& features, const SpgemmProblem& problem, const DeviceTarget& device,
                     const Options& options, const PlanSources& sources = {});

// The planner's feature tile_fill: nnz / (non-empty tiles * tile_rows * tile_cols), the share of
// the dot products a dense_tile kernel computes that S keeps. The non-empty tiles are
// problem.tile_count's exact count when given; else they are estimated from
// features.tiles (the inspected 8 x 8 bitmap tiles) landing uniformly on the tile_rows x
// tile_cols grid: close for uniform and for dense patterns, too many tiles (too low a fill)
// for clustered ones.
double sddmm_tile_fill(const Features& features, const SddmmProblem& problem, int64_t tile_rows, int64_t tile_cols);

// The (variant, params) combinations of SDDMM worth measuring for this matrix and problem on
// this device (the tuner and the benchmark's oracle run each one forced): each registered
// variant's search space, in registry order, less what its checks refuse (those needing reuse
// included: the tuner measures them for reused patterns). Every entry is valid: forcing it
// (Options::variant and Options::params) runs. Empty for value types no variant supports.
std::vector<std::pair<std::string, nlohmann::json>> sddmm_search_space(const Features& features, const SddmmProblem& problem,
                                                                       const DeviceTarget& device);

// Names of every registered variant of an op (runtime/variants/<op>/), in registry order.
std::vector<std::string> spmm_variants();
std::vector<std::string> sddmm_variants();
std::vector<std::string> spgemm_variants();

// The second round of SpMM's measured selection (plan/choose.hpp): the parameter settings next
// to a timed one that its variant names (SpmmVariant::neighbour_changes) and its checks accept.
// Empty for variants without neighbours.
std::vector<TimedChoice> spmm_neighbors(const std::string& variant, const nlohmann::json& params, const SpmmProblem& problem,
                                       const DeviceTarget& device);

// The same for SDDMM: the settings its variant names (SddmmVariant::neighbour_changes) and its
// checks accept. Empty for variants without neighbours (cusparse); InvalidInputError for a
// variant that is not registered.
std::vector<TimedChoice> sddmm_neighbors(const std::string& variant, const nlohmann::json& params, const SddmmProblem& problem,
                                        const DeviceTarget& device);

// Every (variant, params) combination of SpMM worth measuring for this problem on this device
// (the tuner and the benchmark's oracle run each one forced): each registered variant's
// search space, in registry order, less what its checks refuse. Each params object is
// complete (forcing it leaves no default in play) and valid for the problem.
std::vector<std::pair<std::string, nlohmann::json>> spmm_search_space(const Features& features, const SpmmProblem& problem,
                                                                      const DeviceTarget& device);

// The same for SpGEMM: each registered variant's search space, less what its checks refuse.
std::vector<std::pair<std::string, nlohmann::json>> spgemm_search_space(const SpgemmFeatures& features,
                                                                        const SpgemmProblem& problem,
                                                                        const DeviceTarget& device);

}  // namespace sparsejit::plan
