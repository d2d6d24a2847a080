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
};

template <class T>
struct SddmmOperands {
  const DeviceCsr<T>& s;
  const DeviceDense<T>& a;
  const DeviceDense<T>& b;
  DeviceBuffer& p;  // S's nnz values, in S's order
  CUstream stream;
  bool early;
};

template <class T>
class SddmmExecution {
 public:
  virtual ~SddmmExecution() = default;
  // Enqueues one call on operands.stream; S has nonzeros here.
  virtual void run(detail::RuntimeState& rt, const SddmmOperands<T>& operands) = 0;
};

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
  const int rank;
  const std::string summary;
  const Traits traits;

  // ---- planning (pure) ----
  virtual std::string rejected(const SddmmPlanInputs& in) const;  // "" when it can run the problem
  // "" or why the planner does not propose it here although it runs when forced.
  virtual std::string declined(const SddmmPlanInputs& in, const nlohmann::json& defaults) const;
  virtual nlohmann::json defaults(const SddmmPlanInputs& in) const = 0;
  virtual void check(const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const;
  virtual nlohmann::json cost_terms(const SddmmPlanInputs& in, const nlohmann::json& params) const = 0;
  virtual std::vector<nlohmann::json> neighbour_changes(const plan::SddmmProblem& problem, const plan::DeviceTarget& device,
                                                        const nlohmann::json& params) const;
  virtual std::vector<nlohmann::json> search_space(const SddmmPlanInputs& in) const = 0;

  // ---- execution ----
  virtual std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                                    const plan::DeviceTarget& device) const;
  virtual std::unique_ptr<SddmmExecution<float>> prepare(const SddmmPreparation<float>& p) const = 0;
  virtual std::unique_ptr<SddmmExecution<double>> prepare(const SddmmPreparation<double>& p) const = 0;
};

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

}  // namespace sparsejit::variants
