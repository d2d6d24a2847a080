// The candidates `sparsejit tune` measures for one problem: the planners' own search spaces
// (plan::spmm_search_space / plan::sddmm_search_space), so the tuner measures exactly what a
// forced choice can run. Params are given the way a forced choice gives them, so a candidate
// runs through the runtime as Options{variant, params}.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "plan/planner.hpp"

namespace sparsejit::tuner {

struct SearchCandidate {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
};

std::vector<SearchCandidate> spmm_candidates(const Features& features, const plan::SpmmProblem& problem,
                                             const plan::DeviceTarget& device);
// How a candidate of `op` must be run: variants with per-pattern preprocessing
// (Traits::needs_reuse: SDDMM's reindexed_tiled) are admitted only for patterns declared
// reused, which is what tuning measures them for.
Reuse reuse_for(Op op, const std::string& variant);

std::vector<SearchCandidate> sddmm_candidates(const Features& features, const plan::SddmmProblem& problem,
                                              const plan::DeviceTarget& device);

}  // namespace sparsejit::tuner
