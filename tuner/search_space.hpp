// The candidates `sparsejit tune` measures for one problem.
//
// This is the ONE place the tuner learns what to search: when the planners expose their own
// search spaces (plan::spmm_search_space / plan::sddmm_search_space in plan/planner.hpp),
// these two functions become calls to them. Until then they list the variants that exist:
//   spmm:  csr_rowwarp warps_per_block ∈ {2, 4, 8} (A·B only); cusparse alg ∈ {1, 2, 3}
//   sddmm: coo_flat group_size ∈ {4, 8, 16, 32} × threads_per_block ∈ {128, 256, 512};
//          cusparse
// Params are given the way a forced choice gives them (only the searched keys; the planner
// fills in the rest), so a candidate runs through the runtime as Options{variant, params}.
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

std::vector<SearchCandidate> spmm_search_space(const Features& features, const plan::SpmmProblem& problem,
                                               const plan::DeviceTarget& device);
std::vector<SearchCandidate> sddmm_search_space(const Features& features, const plan::SddmmProblem& problem,
                                                const plan::DeviceTarget& device);

}  // namespace sparsejit::tuner
