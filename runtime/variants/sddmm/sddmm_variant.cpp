#include "variants/sddmm/sddmm_variant.hpp"

#include "sparsejit/error.hpp"

namespace sparsejit::variants {

std::string SddmmVariant::rejected(const SddmmPlanInputs& in) const {
  const bool supported = in.problem.dtype == DType::F32 || in.problem.dtype == DType::F64;
  return supported ? "" : std::string("value type ") + to_string(in.problem.dtype) + " not supported";
}

std::string SddmmVariant::declined(const SddmmPlanInputs&, const nlohmann::json&) const { return ""; }

std::vector<nlohmann::json> SddmmVariant::neighbour_changes(const plan::SddmmProblem&, const plan::DeviceTarget&,
                                                            const nlohmann::json&) const {
  return {};
}

const SddmmVariant& sddmm_variant(const std::string& name) {
  if (const SddmmVariant* v = SddmmRegistry::find(name)) return *v;
  std::string known;
  for (const std::string& n : SddmmRegistry::names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidInputError("unknown sddmm variant '" + name + "' (known: " + known + ")");
}

}  // namespace sparsejit::variants
