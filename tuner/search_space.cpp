#include "tuner/search_space.hpp"

namespace sparsejit::tuner {

std::vector<SearchCandidate> spmm_search_space(const Features&, const plan::SpmmProblem& problem, const plan::DeviceTarget&) {
  std::vector<SearchCandidate> space;
  if (!problem.transpose_a)
    for (int warps : {2, 4, 8}) space.push_back({"csr_rowwarp", {{"warps_per_block", warps}}});
  for (int alg : {1, 2, 3}) space.push_back({"cusparse", {{"alg", alg}}});
  return space;
}

std::vector<SearchCandidate> sddmm_search_space(const Features&, const plan::SddmmProblem&, const plan::DeviceTarget&) {
  std::vector<SearchCandidate> space;
  for (int group : {4, 8, 16, 32})
    for (int threads : {128, 256, 512}) space.push_back({"coo_flat", {{"group_size", group}, {"threads_per_block", threads}}});
  space.push_back({"cusparse", nlohmann::json::object()});
  return space;
}

}  // namespace sparsejit::tuner
