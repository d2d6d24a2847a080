// The pure side of tuning records: feature buckets, the ranking of measured candidates, and
// applying a bucket's tuned choice to a decision. Reading records and tuned models from the
// cache database is ops/plan_sources.hpp's job; the planners get the results as arguments.
//
// Tuning record layout: record.params holds the candidate's parameters as a forced choice
// would give them (only those the search space varies), plus the reserved key
// kMeasuredOn = {"case": "<fingerprint> k<K> <dtype>", "matrix": "<name>", "k": K,
// "error": "<why it failed>" (failed records only)}. A case is one matrix at one K and value
// type; records of one case compare with each other.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_store.hpp"
#include "plan/planner.hpp"

namespace sparsejit::plan {

inline constexpr const char* kMeasuredOn = "measured_on";
// Candidates whose mean slowdowns are within this fraction of the best are tied; the tie
// goes to tie_break_before's order.
inline constexpr double kTieTolerance = 0.02;

// Feature buckets: coarse keys so that a record measured on one matrix applies to similar
// ones. Fields, separated by spaces:
//   spmm  <dtype> k<K'> [T] nnz4^a rows4^b mean2^c cv<v> clu<g>
//   sddmm <dtype> k<K'> nnz4^a dens10^d cv<v>
// K' is K rounded up to a power of two; T marks Aᵀ·B; a, b, c are floor(log4 nnz),
// floor(log4 rows), floor(log2 row_mean) (-1 when the value is below 1); d is
// floor(log10 density); v is the row-length spread (0: row_cv < 0.5, 1: < 2, 2: >= 2); g
// is the clustering group holding most neighbour distances (0: distance 1 (bin 0), 1:
// 2-15 (bins 1-2), 2: 16-1023 (bins 3-5), 3: farther (bins 6-11); '-' without distances).
std::string spmm_bucket(const Features& features, const SpmmProblem& problem);
std::string sddmm_bucket(const Features& features, const SddmmProblem& problem);

// One measured candidate on one case.
struct CaseTime {
  std::string case_id;
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  double time_ms = 0;
  bool ok = false;  // ran and matched the CPU reference
};

struct RankedCandidate {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  double mean_slowdown = 0;  // geometric mean over the cases of time / best time of the case
  int cases = 0;
};

// Deterministic order among tied candidates: smaller panel width, then smaller threshold
// (spmm_param::kPanelWidth, kThreshold; a candidate without the parameter comes after one
// with it), then variant name, then parameters.
bool tie_break_before(const std::string& variant_a, const nlohmann::json& params_a, const std::string& variant_b,
                      const nlohmann::json& params_b);

// The candidate with the smallest mean slowdown among those that ran correctly on every
// case (a candidate that failed on any case is never chosen), ties broken as above;
// nullopt when no candidate covers every case.
std::optional<RankedCandidate> best_over_cases(const std::vector<CaseTime>& times);

// Records to case times: the candidate's params without kMeasuredOn, one time per case and
// candidate (the newest record wins). Records without a case are skipped.
std::vector<CaseTime> case_times(const std::vector<cache::TuningRecord>& records);

// The name a tuned model is stored under in the cache ("spmm", "sddmm": it overrides the
// shipped model of that name) and its id ("spmm-tuned-NVIDIA-H200").
std::string tuned_model_name(Op op);
std::string tuned_model_id(Op op, const std::string& device_name);

// One entry of a tuning record's timings (cache::TuningRecord::timings): a setting timed,
// with what the planner priced it at.
struct RecordedTiming {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  double ms = 0;               // device ms of one call; infinity: it did not run
  double predicted_ms = 0;     // the model's prediction at these params; NaN: not priced
  nlohmann::json terms = nlohmann::json::object();  // the cost terms it was priced with
};
// {"variant", "params", "ms" (null for infinity), "predicted_ms" (null for NaN), "terms"}
nlohmann::json to_json(const RecordedTiming& timing);
// The timings of a record (entries without a variant are skipped; missing values read as
// "did not run" and "not priced").
std::vector<RecordedTiming> recorded_timings(const cache::TuningRecord& record);

// Step 2 of the lookup order for a decision that `choose` filled: when `choice` (the bucket's
// tuned choice) names an eligible candidate and params the variant takes, the decision takes
// it (source tuned, model_id "tuning-records", model_version the bucket) and true is
// returned. Forced decisions are left alone.
bool apply_tuned_choice(Decision& decision, const std::optional<TunedChoice>& choice);

}  // namespace sparsejit::plan
