#include "variants/sddmm/gather.hpp"

#include <algorithm>

#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

using nlohmann::json;

int64_t row_lane_vectors(int64_t k, int64_t width, int64_t group) { return (k + width * group - 1) / (width * group); }

int64_t row_lane_vectors(const json& params, int32_t k) {
  return row_lane_vectors(k, params.at("vector_width").get<int64_t>(), params.at("group_size").get<int64_t>());
}

std::string lane_vectors_rejection(const plan::SddmmProblem& p) {
  if (row_lane_vectors(p.k, vector_width(p), 32) <= kMaxLaneVectors) return "";
  return "k = " + std::to_string(p.k) + " needs more than " + std::to_string(kMaxLaneVectors) + " A vectors of width " +
         std::to_string(vector_width(p)) + " per lane of 32";
}

json gather_defaults(const plan::SddmmProblem& p, const json& model, const std::string& variant, int64_t group,
                     int64_t loads_in_flight) {
  const int64_t width = vector_width(p);
  const int64_t lane_vectors = row_lane_vectors(p.k, width, group);
  const int64_t unroll = std::min({group, launch_value(model, variant, "unroll").get<int64_t>(),
                                   pow2_at_most(std::max<int64_t>(1, loads_in_flight / lane_vectors))});
  return {{"vector_width", width}, {"group_size", group}, {"unroll", unroll},
          {"max_nnz", launch_value(model, variant, "max_nnz")},
          {"threads_per_block", launch_value(model, variant, "threads_per_block")}};
}

void check_row_gather(const json& params, const plan::SddmmProblem& p, const std::string& variant) {
  const int64_t group = check_group_size(params, variant);
  check_threads(params, variant, group);
  const int64_t unroll = int_param(params, variant, "unroll");
  require(is_pow2(unroll) && unroll <= group, variant,
          "unroll = " + std::to_string(unroll) + " is not a power of two in [1, group_size = " + std::to_string(group) + "]");
  const int64_t max_nnz = int_param(params, variant, "max_nnz");
  require(max_nnz >= 1, variant, "max_nnz = " + std::to_string(max_nnz) + " must be >= 1");
  const int64_t lane_vectors = row_lane_vectors(p.k, int_param(params, variant, "vector_width"), group);
  require(lane_vectors <= kMaxLaneVectors, variant,
          "k = " + std::to_string(p.k) + " needs " + std::to_string(lane_vectors) + " A vectors per lane (group_size = " +
              std::to_string(group) + "), more than " + std::to_string(kMaxLaneVectors));
}

std::vector<json> group_changes(const json& params) {
  const int64_t group = params.at("group_size").get<int64_t>(), unroll = params.at("unroll").get<int64_t>();
  return {{{"group_size", group / 2}, {"unroll", std::min(unroll, group / 2)}}, {{"group_size", group * 2}}};
}

jit::KernelSpec gather_spec(const Decision& d, DType dtype, int32_t k, const std::string& template_name,
                            const std::string& kernel_name) {
  const int width = d.params.at("vector_width").get<int>();
  return {template_name, kernel_name,
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", dtype == DType::F64 ? "double" : "float"},
           {"vec_t", vec_type(dtype, width)}, {"vec_width", width}, {"group_size", d.params.at("group_size")},
           {"lane_vectors", row_lane_vectors(d.params, k)}, {"unroll", d.params.at("unroll")},
           {"block_size", d.params.at("threads_per_block")}, {"fp16", false}, {"bf16", false}},
          {}};
}

}  // namespace sparsejit::variants::sddmm
