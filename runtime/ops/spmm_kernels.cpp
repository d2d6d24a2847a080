#include "ops/spmm_kernels.hpp"

#include <string>

namespace sparsejit::ops {
namespace {

int param(const nlohmann::json& params, const char* key) { return params.at(key).get<int>(); }

// value_t, vec_t and vec_width for the value type and the planned vector width.
nlohmann::json vector_types(const nlohmann::json& params, DType dtype) {
  const bool f64 = dtype == DType::F64;
  const int width = param(params, "vec_width");
  const std::string value_t = f64 ? "double" : "float";
  const std::string vec_t = width == 1 ? value_t : (f64 ? "double2" : "float4");
  return {{"value_t", value_t}, {"vec_t", vec_t}, {"vec_width", width}};
}

}  // namespace

jit::KernelSpec rowwarp_spec(const nlohmann::json& params, DType dtype) {
  const bool f64 = dtype == DType::F64;
  return {"spmm_csr_rowwarp.cu", "sj_spmm_csr_rowwarp",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"},
           {"warps_per_block", params.at("warps_per_block")}, {"cols_per_lane", params.at("cols_per_lane")},
           {"fp16", dtype == DType::F16}, {"bf16", dtype == DType::BF16}},
          {}};
}

jit::KernelSpec light_spec(const nlohmann::json& params, DType dtype, bool transpose) {
  nlohmann::json p = vector_types(params, dtype);
  p["lanes_per_row"] = param(params, "lanes_per_row");
  p["cf"] = param(params, "cf_h");
  p["block_threads"] = param(params, "block_threads");
  if (transpose) return {"spmm_rs_light_t.cu", "sj_spmm_rs_light_t", p, {}};
  p["unroll"] = param(params, "unroll");
  return {"spmm_rs_light.cu", "sj_spmm_rs_light", p, {}};
}

jit::KernelSpec heavy_spec(const nlohmann::json& params, DType dtype, bool transpose) {
  nlohmann::json p = vector_types(params, dtype);
  p["lanes_per_segment"] = param(params, "heavy_lanes");
  p["cf"] = param(params, "cf_v");
  p["block_threads"] = param(params, "heavy_threads");
  p["min_blocks"] = param(params, "blocks_per_sm");
  if (transpose) return {"spmm_rs_heavy_t.cu", "sj_spmm_rs_heavy_t", p, {}};
  p["unroll"] = param(params, "heavy_unroll");
  return {"spmm_rs_heavy.cu", "sj_spmm_rs_heavy", p, {}};
}

jit::KernelSpec merge_spec(const nlohmann::json& params, DType dtype, bool transpose) {
  nlohmann::json p = vector_types(params, dtype);
  for (const char* key : {"lanes", "cf", "nnz_per_group", "unroll", "block_threads"}) p[key] = param(params, key);
  if (transpose) return {"spmm_csr_merge_t.cu", "sj_spmm_csr_merge_t", p, {}};
  return {"spmm_csr_merge.cu", "sj_spmm_csr_merge", p, {}};
}

jit::KernelSpec rowsplit_spec(const nlohmann::json& params, DType dtype) {
  nlohmann::json p = vector_types(params, dtype);
  for (const char* key : {"lanes", "cf", "unroll", "parts"}) p[key] = param(params, key);
  return {"spmm_csr_rowsplit.cu", "sj_spmm_csr_rowsplit", p, {}};
}

int light_slice(const nlohmann::json& params) {
  return param(params, "lanes_per_row") * param(params, "vec_width") * param(params, "cf_h");
}

int heavy_slice(const nlohmann::json& params) {
  return param(params, "heavy_lanes") * param(params, "vec_width") * param(params, "cf_v");
}

int rowsplit_slice(const nlohmann::json& params) {
  return param(params, "lanes") * param(params, "vec_width") * param(params, "cf");
}

int merge_slice(const nlohmann::json& params) {
  return param(params, "lanes") * param(params, "vec_width") * param(params, "cf");
}

unsigned heavy_shared_bytes(const nlohmann::json& params, DType dtype) {
  return unsigned(param(params, "panel_width")) * unsigned(heavy_slice(params)) * unsigned(size_of(dtype));
}

std::vector<jit::KernelSpec> spmm_kernel_specs(const Decision& d, DType dtype, bool transpose) {
  if (d.variant == "csr_rowwarp") return {rowwarp_spec(d.params, dtype)};
  if (d.variant == "csr_vector") return {light_spec(d.params, dtype, transpose)};
  if (d.variant == "csr_merge") return {merge_spec(d.params, dtype, transpose)};
  if (d.variant == "csr_rowsplit") return {rowsplit_spec(d.params, dtype)};
  if (d.variant == "rs") return {light_spec(d.params, dtype, transpose), heavy_spec(d.params, dtype, transpose)};
  return {};
}

}  // namespace sparsejit::ops
