// Training of the tuned models from measurements (pure CPU; `sparsejit tune` feeds it).
//
// SpMM (RS-SpMM section 4), over the measurements of the "rs" variant (the paper's W, T, CF_V
// and CF_H are the planner's params panel_width, threshold, cf_v and cf_h: plan/spmm_params.hpp),
// per value type:
//   CF_H     the most frequent CF_H among each case's best rs configuration (4.1)
//   phase 1  with that CF_H: each case's best (CF_V, T); the most frequent CF_V (4.2)
//   phase 2  with both fixed: each case's best T -> one sample of the threshold tree, whose
//            features are kThresholdTreeFeatures (clustering bin fractions, accumulations per
//            nonzero, row statistics, K and value size) (4.2)
//   C1,v C2,v  per CF_V, least squares of time ≈ C1·acc_dense + C2·nnz_d over the phase-1
//            measurements whose heavy part holds >= 95% of the nonzeros (the paper fits the
//            heavy-only synthetic matrices; light work would bias the fit), all of that CF_V's
//            measurements when fewer than two qualify (4.3)
// and one threshold tree over the phase-2 samples of every value type (value_bytes is one of
// its features), stored as the model's "threshold_tree": the key the planner reads its
// threshold from (plan/spmm.cpp); the per-type trees stay in "rs" for the report.
// and for every variant: "cost" coefficients of the planner's model fitted to this GPU (see
// calibrate_costs).
//
// SDDMM (GPU-Dynamic section 7): per K, the density threshold that minimizes the time lost
// by running a case's tiled variant (variant names containing "tiled") above it and its COO
// variant ("coo") at or below it; per variant and density decade, the launch parameters with
// the smallest mean slowdown (and, for the planner's "launch", those of each variant's decade
// with the most cases); the variant tree (the planner's "tree": per case the fastest of
// sddmm_tree_variants(), classified over kSddmmTreeFeatures); and the fitted "cost" coefficients
// as for SpMM.
//
// Ties among a case's candidates (within plan::kTieTolerance) follow plan::tie_break_before.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/types.hpp"

namespace sparsejit::tuner {

inline constexpr const char* kRsVariant = "rs";
inline constexpr double kPaperDensityThreshold = 1e-4;  // GPU-Dynamic: tiled above 0.01 %

// The features of the threshold tree, keys of the planner's Decision features.
extern const std::vector<std::string> kThresholdTreeFeatures;

struct Measurement {
  std::string case_id;   // "<fingerprint> k<K> <dtype>"
  std::string matrix;    // name, for messages
  int32_t k = 0;
  DType dtype = DType::F32;
  nlohmann::json features = nlohmann::json::object();  // the planner's Decision features
  std::string variant;
  nlohmann::json params = nlohmann::json::object();    // as searched
  double time_ms = 0;
  bool ok = false;            // ran and matched the CPU reference
  double predicted_ms = 0;    // the planner model's prediction for the variant (0: none)
  // The cost terms the planner priced this candidate with at its params (Candidate::terms of
  // the forced plan); empty when unknown.
  nlohmann::json terms = nlohmann::json::object();
  int64_t heavy_segments = -1;  // acc_dense at this candidate's W and T (-1: no W/T)
  int64_t heavy_nnz = -1;       // nnz_d at this candidate's W and T
};

struct TrainedModel {
  nlohmann::json model;            // the tuned model JSON
  std::vector<std::string> notes;  // one line each, for the tune report
};

// base_model: the model the planner used while measuring (its "cost" is rescaled).
TrainedModel train_spmm_model(const std::vector<Measurement>& measurements, const nlohmann::json& base_model,
                              const std::string& device_name);
TrainedModel train_sddmm_model(const std::vector<Measurement>& measurements, const nlohmann::json& base_model,
                               const std::string& device_name);

// The pieces, exposed for tests.
struct RsTraining {
  // {"f32": {"cf_h": .., "cf_v": .., "threshold_tree": .., "cf_v_cost": {"1": {"acc_dense": C1,
  // "nnz_d": C2}, ...}}, ...}
  nlohmann::json per_type = nlohmann::json::object();
  // Over every type's samples: the planner's "threshold_tree"; nullopt without samples.
  std::optional<nlohmann::json> threshold_tree;
};
// nullopt without rs measurements.
std::optional<RsTraining> train_rs(const std::vector<Measurement>& measurements, std::vector<std::string>& notes);
// base "cost" fitted to the measurements, per variant with coefficients in base_cost:
//   fit      over every correct measurement of the variant that has terms (all its params:
//            the terms follow the params), the coefficients of the terms seen non-zero are
//            the non-negative least-squares fit of time_ms on the terms in relative error
//            (minimizing Σ w ((predicted - t) / t)², as the dispatcher compares ratios and
//            times span 5 µs to 5 ms); the other coefficients stay as they were. Needs at
//            least kFitExtraCases more cases than fitted terms. The weight w is
//            min(1, kFitWeightSpan · fastest / t), fastest the case's fastest correct time of
//            any variant: a choice only turns on the candidates near the fastest, so a time
//            within kFitWeightSpan of it counts whole and one 10x slower a fifth (unweighted,
//            csr_rowwarp's fit spent itself on long-row patterns where it runs 10-100x the
//            fastest and priced big banded patterns at half their time: 1.85x off the oracle).
//   scale    otherwise (too few cases, or no terms): every coefficient times the geometric
//            mean over the cases of the best measured time / predicted_ms.
// One note per variant says which, with the fit's median and worst |predicted / t - 1|
// before and after.
inline constexpr std::size_t kFitExtraCases = 3;
inline constexpr double kFitWeightSpan = 2.0;
nlohmann::json calibrate_costs(const std::vector<Measurement>& measurements, const nlohmann::json& base_cost,
                               std::vector<std::string>& notes);
// SDDMM's variant tree (leaves are variant names); nullopt without a correct measurement of
// any of sddmm_tree_variants().
extern const std::vector<std::string> kSddmmTreeFeatures;
// The registered SDDMM variants the tree may name (Traits::tree_leaf), in the registry's order.
std::vector<std::string> sddmm_tree_variants();
std::optional<nlohmann::json> sddmm_variant_tree(const std::vector<Measurement>& measurements);
// The learned density threshold of one K; nullopt when no case has both a tiled and a COO time.
std::optional<double> density_threshold(const std::vector<Measurement>& measurements, int32_t k);
// {"<variant>": [{"density_decade": d, "params": {...}, "cases": n}, ...]}
nlohmann::json launch_shapes(const std::vector<Measurement>& measurements);
// The planner's "launch" section ({"<variant>": {key: value}}): base_launch with, per variant,
// the parameters of its decade with the most cases in by_decade (keys base_launch has only; the
// others, such as vector_width, the planner derives from K). The tuned model keeps by_decade as
// "launch_tuned_by_density_decade".
nlohmann::json planner_launch(const nlohmann::json& base_launch, const nlohmann::json& by_decade);

}  // namespace sparsejit::tuner
