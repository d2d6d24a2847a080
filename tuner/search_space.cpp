#include "tuner/search_space.hpp"

#include "variants/catalog.hpp"

namespace sparsejit::tuner {

namespace {

std::vector<SearchCandidate> to_candidates(const std::vector<std::pair<std::string, nlohmann::json>>& space) {
  std::vector<SearchCandidate> out;
  out.reserve(space.size());
  for (const auto& [variant, params] : space) out.push_back({variant, params});
  return out;
}

}  // namespace

Reuse reuse_for(Op op, const std::string& variant) {
  for (const variants::VariantInfo& v : variants::catalog(op))
    if (v.name == variant && v.traits.needs_reuse) return Reuse::Many;
  return Reuse::Once;
}

std::vector<SearchCandidate> spmm_candidates(const Features& features, const plan::SpmmProblem& problem,
                                             const plan::DeviceTarget& device) {
  return to_candidates(plan::spmm_search_space(features, problem, device));
}

std::vector<SearchCandidate> sddmm_candidates(const Features& features, const plan::SddmmProblem& problem,
                                              const plan::DeviceTarget& device) {
  return to_candidates(plan::sddmm_search_space(features, problem, device));
}

}  // namespace sparsejit::tuner
