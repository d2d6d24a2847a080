// What one SDDMM variant defines (P = S ∘ (A·Bᵀ): p_e = s_e · dot(A[row_e,:], B[col_e,:])).
// A definition file (runtime/variants/sddmm/<name>.cpp) derives from SddmmVariantOf<Self> and
// registers itself with SPARSEJIT_REGISTER_VARIANT(sddmm, <name>, Self). Its planning members
// are pure; its execution members load kernels, build the formats it needs on the matrix
// handle and launch.
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

// What the planning members see: S's features, the call's problem, the device and the op's
// model (tuned for this device or shipped; "launch" entries it lacks come from the shipped one).
struct SddmmPlanInputs {
  const Features& features;
  const plan::SddmmProblem& problem;
  const plan::DeviceTarget& device;
  const nlohmann::json& model;
  // The pattern is reused: Options::reuse is Reuse::Many or the handle has served an SDDMM
  // call (problem.pattern_seen). What admits per-pattern preprocessing (Traits::needs_reuse),
  // and the decision tree's feature pattern_reused.
  bool pattern_reused = false;
};

// One call's operands as the execution sees them.
template <class T>
struct SddmmOperands {
  const DeviceCsr<T>& s;
  const DeviceDense<T>& a;
  const DeviceDense<T>& b;
  DeviceBuffer& p;  // S's nnz values, in S's order
  CUstream stream;
  bool early;  // programmatic dependent launch (ops::launches_early)
};

// A variant's plan made ready to launch: its kernels, launch shapes and formats.
template <class T>
class SddmmExecution {
 public:
  virtual ~SddmmExecution() = default;
  // Enqueues one call on operands.stream; S has nonzeros here.
  virtual void run(detail::RuntimeState& rt, const SddmmOperands<T>& operands) = 0;
  // Whether run only launches kernels through cuda::Kernel (no other work on the stream, no
  // vendor library): such a plan's calls can be replayed as a graph (Options::replay_launches).
  virtual bool launches_only() const { return false; }
};

// What preparing an execution gets: the runtime, the matrix handle (its caches hold the
// formats), the features and problem, and the decision (kernel origin and compile times are
// recorded into it).
template <class T>
struct SddmmPreparation {
  detail::RuntimeState& rt;
  const DeviceCsr<T>& s;
  const Features& features;
  const plan::SddmmProblem& problem;
  Decision& decision;
};

class SddmmVariant {
 public:
  using Base = SddmmVariant;
  SddmmVariant(std::string name, int rank, std::string summary, Traits traits = {})
      : name(std::move(name)), rank(rank), summary(std::move(summary)), traits(traits) {}
  virtual ~SddmmVariant() = default;

  const std::string name;
  const int rank;             // place in candidate lists (Registry::all)
  const std::string summary;  // one line for `explain --list`
  const Traits traits;

  // ---- planning (pure) ----
  // Why the variant cannot run this problem at all ("" when it can). The default refuses
  // value types other than f32 and f64.
  virtual std::string rejected(const SddmmPlanInputs& in) const;
  // "" or why the planner does not propose it here although it runs when forced (the
  // model's choice, the tree's leaf, measured selection's shortlist); `defaults` are its
  // parameters for the problem. The default proposes it wherever it runs.
  virtual std::string declined(const SddmmPlanInputs& in, const nlohmann::json& defaults) const;
  // Its parameters for this problem: every parameter it takes, with the planner's value.
  virtual nlohmann::json defaults(const SddmmPlanInputs& in) const = 0;
  // Throws an Error naming the value when these parameters cannot run the problem here
  // (parameters after a forced merge can be anything: refused before anything is rendered).
  virtual void check(const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const = 0;
  // The cost terms of a run with these parameters (models/sddmm.json prices them).
  virtual nlohmann::json cost_terms(const SddmmPlanInputs& in, const nlohmann::json& params) const = 0;
  // Measured selection's second round: parameter changes next to a timed setting (merged
  // over it; the planner drops the ones check refuses). The default has none.
  virtual std::vector<nlohmann::json> neighbour_changes(const plan::SddmmProblem& problem, const plan::DeviceTarget& device,
                                                        const nlohmann::json& params) const;
  // Every complete parameter set worth measuring for this problem (the tuner and the
  // benchmark's oracle force each one); check runs on each before it is kept. Asked for
  // f32 and f64 problems only.
  virtual std::vector<nlohmann::json> search_space(const SddmmPlanInputs& in) const = 0;

  // ---- execution ----
  // The JIT kernels of a decision of this variant (the execution loads them, explain
  // compiles them).
  virtual std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                                    const plan::DeviceTarget& device) const = 0;
  virtual std::unique_ptr<SddmmExecution<float>> prepare(const SddmmPreparation<float>& p) const = 0;
  virtual std::unique_ptr<SddmmExecution<double>> prepare(const SddmmPreparation<double>& p) const = 0;
};

// Implements both prepare overloads with Self's member template
//   template <class T> std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>&) const;
template <class Self>
class SddmmVariantOf : public SddmmVariant {
 public:
  using SddmmVariant::SddmmVariant;
  std::unique_ptr<SddmmExecution<float>> prepare(const SddmmPreparation<float>& p) const override {
    return static_cast<const Self*>(this)->template make<float>(p);
  }
  std::unique_ptr<SddmmExecution<double>> prepare(const SddmmPreparation<double>& p) const override {
    return static_cast<const Self*>(this)->template make<double>(p);
  }
};

using SddmmRegistry = Registry<SddmmVariant>;

// The registered variant of this name; InvalidInputError naming the known ones otherwise.
const SddmmVariant& sddmm_variant(const std::string& name);

}  // namespace sparsejit::variants
