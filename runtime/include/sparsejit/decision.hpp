// The Decision record: everything about how one call was dispatched. Every plan carries one;
// `sparsejit explain` prints it and the library returns it from every operation.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparsejit {

enum class Op {
  SpMM,   // C = A·B or Aᵀ·B, A sparse, B and C dense row-major
  SDDMM,  // P = S ∘ (A·Bᵀ)
  SpGEMM, // C = A·B, A, B and C sparse CSR
  SpAMM,  // C ≈ A·B, A and B dense (decay matrices): tile products below a norm threshold skipped
};
const char* to_string(Op op);
Op parse_op(const std::string& text);  // "spmm" | "sddmm" | "spgemm" | "spamm"; throws InvalidInputError

// Where the choice came from, in the planner's order of precedence.
enum class DecisionSource {
  Forced,   // Options::force or SPARSEJIT_FORCE named the variant
  Tuned,    // a tuning record of this device for the matrix's feature bucket
  Model,    // the op's decision tree and cost formulas
  Default,  // the op's safe default (no model applied)
  Measured, // the fastest of the planner's shortlist, timed on this device for this pattern
  Recorded, // the same, timed by an earlier process or another Runtime and stored in the cache
            // database (a tuning record of this device, library, driver and model): not timed again
};
const char* to_string(DecisionSource source);

// How the kernel binary was obtained for this call.
enum class KernelOrigin {
  None,      // no JIT kernel: a vendor library ran, or nothing was compiled yet
  Memory,    // this process's in-memory cache
  Disk,      // the SQLite cache (load_ms is the read + module load)
  Compiled,  // NVRTC compiled it now (compile_ms)
};
const char* to_string(KernelOrigin origin);

// One node visited in a decision tree: `feature comparison threshold` evaluated to `taken`.
struct DecisionStep {
  std::string feature;
  double value = 0;
  std::string comparison;  // "<=" or ">"
  double threshold = 0;
  bool taken = false;
};

// A variant the planner considered, with its predicted cost.
struct Candidate {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  double predicted_ms = 0;       // NaN for a setting only measured (see measured_ms)
  std::string rejected_because;  // empty when eligible
  // The cost terms it was priced with at `params` (predicted_ms = models::linear_cost of the
  // model's coefficients and these): {"launch": 1, "gather_bytes": ...}; empty when rejected.
  nlohmann::json terms = nlohmann::json::object();
  // Device ms of one call when the candidate was timed for this pattern (source Measured or
  // Recorded); negative when it was not.
  double measured_ms = -1;
  // The model's neighbour correction in predicted_ms (the formula's price times it): 1 when the
  // model has none or no timed pattern near this one ran the variant.
  double correction = 1;
  // The part of `correction` that is the neighbours' regret term (1 without one): a tie-breaker
  // in the choice, divided out where the margin decides whether to time (plan::model_margin).
  double regret = 1;
};

// One setting measured selection timed, in the order it timed them: what the setting cost.
struct MeasureStep {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  double call_ms = 0;  // device ms of one call; infinity when it failed to prepare or run
  int calls = 0;       // calls run: the untimed first, the probe and the repeats
  double host_ms = 0;  // host ms of the whole step: preparing the plan, its calls, synchronizing
};

struct Decision {
  Op op = Op::SpMM;
  std::string variant;                               // the chosen candidate's name
  nlohmann::json params = nlohmann::json::object();  // its parameters
  DecisionSource source = DecisionSource::Default;
  std::string model_id;       // e.g. "spmm-cost" or "" when forced
  std::string model_version;
  // The model's "measure_skip_margin" (Options::measure_skip_margin), when it has one.
  std::optional<double> model_skip_margin;
  nlohmann::json features = nlohmann::json::object();  // the features the planner read
  std::vector<DecisionStep> path;
  std::vector<Candidate> candidates;
  std::string device;          // device name the plan is for ("sm_90 (no GPU)" when none)
  int sm = 0;
  KernelOrigin kernel_origin = KernelOrigin::None;
  double compile_ms = 0;       // NVRTC time when compiled now
  double load_ms = 0;          // cache lookup + module load when the plan was prepared
  // Host ms spent preparing and timing the shortlist (source Measured: in the plan of the
  // handle whose call timed it; 0 in plans that took times measured earlier or recorded).
  double measure_ms = 0;
  std::vector<MeasureStep> measure_steps;  // what measure_ms was spent on, setting by setting
};

// What one call reports: the plan it ran (shared by every later call that reuses it, so a
// repeated call copies nothing) and whether this call made the plan or reused it.
struct CallInfo {
  std::shared_ptr<const Decision> decision;
  bool plan_reused = false;
  // The call's kernels were issued as one replay of the plan's graph (Options::replay_launches).
  bool launched_as_graph = false;
};

// What spgemm_numeric reports besides: how C's values were computed, "positions: ..." (each
// product's place in C, found on the first such call and kept on C) or "recompute: ..." (the
// plan's variant again), with the reason.
struct NumericCallInfo : CallInfo {
  std::string numeric;
};

nlohmann::json to_json(const Decision& decision);
std::string describe(const Decision& decision);  // multi-line, for `explain`

}  // namespace sparsejit
