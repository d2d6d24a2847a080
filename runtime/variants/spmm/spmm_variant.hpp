// What one SpMM variant defines (C = A·B or Aᵀ·B, A sparse CSR, B and C dense row-major).
// A definition file (runtime/variants/spmm/<name>.cpp) derives from SpmmVariantOf<Self> and
// registers itself with SPARSEJIT_REGISTER_VARIANT(spmm, <name>, Self). Its planning members
// are pure (everything comes in as arguments: unit tests build them by hand); its execution
// members load kernels, build the formats it needs on the matrix handle and launch.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/driver_api.hpp"
#include "jit/kernel_spec.hpp"
#include "plan/planner.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/features.hpp"
#include "variants/registry.hpp"

namespace sparsejit::detail {
struct RuntimeState;
}

namespace sparsejit::variants {

// What the planning members see: the matrix's features, the call's problem, the device, the
// op's model (tuned for this device or shipped) and, where the caller has the pattern, the
// heavy/light split statistics (empty: no pattern, as for a bare feature vector).
struct SpmmPlanInputs {
  const Features& features;
  const plan::SpmmProblem& problem;
  const plan::DeviceTarget& device;
  const nlohmann::json& model;
  const plan::SplitStatsSource& split_stats;
  // The feature values the decision records (to_json(features) plus the problem's k,
  // value_bytes, transpose_a and accumulations_per_nnz): what the model's trees read.
  const nlohmann::json& feature_values;
};

// One call's operands as the execution sees them.
template <class T>
struct SpmmOperands {
  const DeviceCsr<T>& a;
  const DeviceDense<T>& b;
  DeviceDense<T>& c;
  CUstream stream;
  bool early;  // programmatic dependent launch (ops::launches_early)
};

// A variant's plan made ready to launch: its kernels, launch shapes and formats.
template <class T>
class SpmmExecution {
 public:
  virtual ~SpmmExecution() = default;
  // Enqueues one call on operands.stream (C overwritten). A has nonzeros here: the executor
  // clears C itself for an empty A.
  virtual void run(detail::RuntimeState& rt, const SpmmOperands<T>& operands) = 0;
  // Whether run only launches kernels through cuda::Kernel (no other work on the stream, no
  // vendor library): such a plan's calls can be replayed as a graph (Options::replay_launches).
  virtual bool launches_only() const { return false; }
};

// What preparing an execution gets: the runtime, the matrix handle (its caches hold the
// formats), the features and problem, and the decision (kernel origin and compile times are
// recorded into it).
template <class T>
struct SpmmPreparation {
  detail::RuntimeState& rt;
  const DeviceCsr<T>& a;
  const Features& features;
  const plan::SpmmProblem& problem;
  Decision& decision;
};

class SpmmVariant {
 public:
  using Base = SpmmVariant;
  SpmmVariant(std::string name, int rank, std::string summary, Traits traits = {})
      : name(std::move(name)), rank(rank), summary(std::move(summary)), traits(traits) {}
  virtual ~SpmmVariant() = default;

  const std::string name;
  const int rank;             // place in candidate lists (Registry::all)
  const std::string summary;  // one line for `explain --list`
  const Traits traits;

  // ---- planning (pure) ----
  // Why the variant cannot run this problem at all ("" when it can). The default refuses
  // value types other than f32 and f64.
  virtual std::string rejected(const SpmmPlanInputs& in) const;
  // Its parameters for this problem: every parameter it takes, with the planner's value.
  // May record the decision-tree steps it took in `path`.
  virtual nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>& path) const = 0;
  // The forced parameters with those it left out whose value depends on the forced ones
  // added (rs: the panel width for the forced slice); `merged` is `forced` over the defaults.
  virtual nlohmann::json complete_forced(const SpmmPlanInputs& in, const nlohmann::json& forced, const nlohmann::json& merged) const;
  // Throws an Error naming the value when these parameters cannot run the problem here.
  virtual void check(const plan::SpmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const;
  // The cost terms of a run with these parameters (models/spmm.json prices them).
  virtual nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json& params) const = 0;
  // Measured selection's second round: parameter changes next to a timed setting (merged
  // over it; the planner drops the ones check refuses).
  virtual std::vector<nlohmann::json> neighbour_changes(const plan::SpmmProblem& problem, const nlohmann::json& params) const;
  // Every complete parameter set worth measuring for this problem (the tuner and the
  // benchmark's oracle force each one); check runs on each before it is kept.
  virtual std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const = 0;

  // ---- execution ----
  // The JIT kernels of a decision of this variant (the executor loads them, explain compiles
  // them); empty for a variant that runs a vendor library.
  virtual std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem& problem) const;
  virtual std::unique_ptr<SpmmExecution<float>> prepare(const SpmmPreparation<float>& p) const = 0;
  virtual std::unique_ptr<SpmmExecution<double>> prepare(const SpmmPreparation<double>& p) const = 0;
};

// Implements both prepare overloads with Self's member template
//   template <class T> std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>&) const;
template <class Self>
class SpmmVariantOf : public SpmmVariant {
 public:
  using SpmmVariant::SpmmVariant;
  std::unique_ptr<SpmmExecution<float>> prepare(const SpmmPreparation<float>& p) const override {
    return static_cast<const Self*>(this)->template make<float>(p);
  }
  std::unique_ptr<SpmmExecution<double>> prepare(const SpmmPreparation<double>& p) const override {
    return static_cast<const Self*>(this)->template make<double>(p);
  }
};

using SpmmRegistry = Registry<SpmmVariant>;

}  // namespace sparsejit::variants
