#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit::variants {

std::string SpmmVariant::rejected(const SpmmPlanInputs& in) const {
  const bool supported = in.problem.dtype == DType::F32 || in.problem.dtype == DType::F64;
  return supported ? "" : std::string("value type ") + to_string(in.problem.dtype) + " not supported";
}

nlohmann::json SpmmVariant::complete_forced(const SpmmPlanInputs&, const nlohmann::json& forced, const nlohmann::json&) const {
  return forced;
}

void SpmmVariant::check(const plan::SpmmProblem&, const plan::DeviceTarget&, const nlohmann::json&) const {}

std::vector<nlohmann::json> SpmmVariant::neighbour_changes(const plan::SpmmProblem&, const nlohmann::json&) const { return {}; }

std::vector<jit::KernelSpec> SpmmVariant::kernel_specs(const Decision&, const plan::SpmmProblem&) const { return {}; }

}  // namespace sparsejit::variants
