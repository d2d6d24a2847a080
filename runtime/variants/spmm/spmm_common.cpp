#include "variants/spmm/spmm_common.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "models/cost_model.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::variants::spmm {

namespace {
constexpr int kLightThreads = 256;
}

int value_bytes(const plan::SpmmProblem& p) { return int(size_of(p.dtype)); }
int64_t ld_or_k(int64_t ld, int32_t k) { return ld > 0 ? ld : k; }

int vector_width(const plan::SpmmProblem& p) {
  const int w = 16 / value_bytes(p);
  return p.k % w == 0 && ld_or_k(p.ldb, p.k) % w == 0 && ld_or_k(p.ldc, p.k) % w == 0 ? w : 1;
}

int vector_units(const plan::SpmmProblem& p, int vec) { return (p.k + vec - 1) / vec; }

int lanes_for(int units) { return units <= 8 ? 8 : units <= 16 ? 16 : 32; }

int cf_for(const plan::SpmmProblem& p, int vec, int lanes) {
  const int needed = (vector_units(p, vec) + lanes - 1) / lanes;
  const int cap = std::max(1, kMaxRowBytes / (lanes * vec * value_bytes(p)));
  const int cf = std::min({needed, cap, 4});
  return cf >= 4 ? 4 : cf >= 2 ? 2 : 1;
}

int slice_columns(int lanes, int vec, int cf) { return lanes * vec * cf; }

std::vector<int> lanes_covering_k_and_32(const plan::SpmmProblem& p) {
  std::vector<int> lanes{lanes_for(vector_units(p, vector_width(p)))};
  if (lanes[0] != 32) lanes.push_back(32);
  return lanes;
}
int64_t slices(int32_t k, int slice) { return (k + slice - 1) / slice; }
double ceil_div(double a, double b) { return std::ceil(a / b); }

nlohmann::json light_params(const plan::SpmmProblem& p) {
  const int vec = vector_width(p);
  const int lanes = lanes_for(vector_units(p, vec));
  return {{"vec_width", vec}, {"lanes_per_row", lanes}, {"cf_h", cf_for(p, vec, lanes)},
          {"unroll", kUnroll}, {"block_threads", kLightThreads}};
}

nlohmann::json base_terms(const SpmmPlanInputs& in) {
  const Features& f = in.features;
  const plan::SpmmProblem& p = in.problem;
  const double vb = value_bytes(p);
  const double nnz = double(f.basic.nnz);
  const double out_rows = p.transpose_a ? f.basic.cols : f.basic.rows;
  const double gathered_operand = double(f.basic.cols) * p.k * vb;
  const double l1_miss = gathered_operand > 0 ? std::max(0.0, 1.0 - double(in.device.l1_per_sm) / gathered_operand) : 0.0;
  return {{"launch", 1.0},
          {"sparse_bytes", nnz * (4.0 + vb) + (f.basic.rows + 1.0) * 4.0},
          {"gather_bytes", nnz * p.k * vb},
          {"l1_miss_gather_bytes", nnz * p.k * vb * l1_miss},
          {"output_bytes", out_rows * p.k * vb},
          {"panel_bytes", 0.0},
          {"shared_bytes", 0.0},
          {"shared_atomic_bytes", 0.0},
          {"atomic_bytes", 0.0},
          {"critical_nnz", double(f.basic.row_max)},
          {"critical_loads", 0.0},
          {"critical_row", double(f.basic.row_max) * p.k}};
}

nlohmann::json cheapest_params(const SpmmVariant& variant, const SpmmPlanInputs& in, const std::vector<nlohmann::json>& sets) {
  const nlohmann::json& costs = in.model.at("cost");
  if (!costs.contains(variant.name)) return sets.front();
  const nlohmann::json* best = &sets.front();
  double best_ms = std::numeric_limits<double>::infinity();
  for (const nlohmann::json& params : sets) {
    const double ms = models::linear_cost(costs.at(variant.name), variant.cost_terms(in, params));
    if (ms < best_ms) {
      best_ms = ms;
      best = &params;
    }
  }
  return *best;
}

double light_critical_loads(double row, const nlohmann::json& params, bool transpose) {
  const double index_loads = ceil_div(row, params.at("lanes_per_row").get<int>());
  return transpose ? index_loads : index_loads + ceil_div(row, params.at("unroll").get<int>());
}

void require_one_of(const std::string& variant, const nlohmann::json& params, const char* key, std::initializer_list<int> allowed) {
  const int v = params.at(key).get<int>();
  std::string list;
  for (int a : allowed) {
    if (a == v) return;
    list += (list.empty() ? "" : ", ") + std::to_string(a);
  }
  throw InvalidInputError(variant + ": " + key + " = " + std::to_string(v) + " must be one of " + list);
}

void check_vector_width(const std::string& variant, const nlohmann::json& params, const plan::SpmmProblem& p) {
  const int vec = params.at("vec_width").get<int>();
  if (vec != 1 && vec != 16 / value_bytes(p))
    throw InvalidInputError(variant + ": vec_width = " + std::to_string(vec) + " must be 1 or " + std::to_string(16 / value_bytes(p)));
  if (vec > 1 && vector_width(p) < vec)
    throw InvalidInputError(variant + ": vec_width = " + std::to_string(vec) + " does not divide K = " + std::to_string(p.k) +
                            ", ldb = " + std::to_string(ld_or_k(p.ldb, p.k)) + " and ldc = " + std::to_string(ld_or_k(p.ldc, p.k)));
}

void check_group_params(const std::string& variant, const nlohmann::json& params) {
  require_one_of(variant, params, "lanes", {8, 16, 32});
  require_one_of(variant, params, "cf", {1, 2, 4});
  require_one_of(variant, params, "unroll", {1, 2, 4, 8});
}

void check_light_params(const std::string& variant, const nlohmann::json& params, const plan::SpmmProblem& p) {
  require_one_of(variant, params, "lanes_per_row", {8, 16, 32});
  require_one_of(variant, params, "cf_h", {1, 2, 4});
  require_one_of(variant, params, "unroll", {1, 2, 4, 8});
  require_one_of(variant, params, "block_threads", {64, 128, 256, 512, 1024});
  check_vector_width(variant, params, p);
}

nlohmann::json vector_types(const nlohmann::json& params, DType dtype) {
  const bool f64 = dtype == DType::F64;
  const int width = params.at("vec_width").get<int>();
  const std::string value_t = f64 ? "double" : "float";
  const std::string vec_t = width == 1 ? value_t : (f64 ? "double2" : "float4");
  return {{"value_t", value_t}, {"vec_t", vec_t}, {"vec_width", width}};
}

jit::KernelSpec light_spec(const nlohmann::json& params, DType dtype, bool transpose) {
  nlohmann::json p = vector_types(params, dtype);
  p["lanes_per_row"] = params.at("lanes_per_row").get<int>();
  p["cf"] = params.at("cf_h").get<int>();
  p["block_threads"] = params.at("block_threads").get<int>();
  if (transpose) return {"spmm_rs_light_t.cu", "sj_spmm_rs_light_t", p, {}};
  p["unroll"] = params.at("unroll").get<int>();
  return {"spmm_rs_light.cu", "sj_spmm_rs_light", p, {}};
}

int light_slice(const nlohmann::json& params) {
  return params.at("lanes_per_row").get<int>() * params.at("vec_width").get<int>() * params.at("cf_h").get<int>();
}

unsigned k_slices(int32_t k, int slice) {
  const int64_t n = (int64_t(k) + slice - 1) / slice;
  if (n > 65535)
    throw UnsupportedError("spmm: K = " + std::to_string(k) + " needs " + std::to_string(n) + " slices of " +
                           std::to_string(slice) + " columns, more than the grid's 65535");
  return unsigned(n);
}

ops::LoadedKernel load(detail::RuntimeState& rt, Decision& d, const jit::KernelSpec& spec) {
  const ops::LoadedKernel loaded = rt.loader.load(spec);
  ops::record_kernel(d, loaded);
  return loaded;
}

Launch light_launch(detail::RuntimeState& rt, Decision& d, DType dtype, bool transpose, int32_t rows, int32_t k) {
  const ops::LoadedKernel loaded = load(rt, d, light_spec(d.params, dtype, transpose));
  const int threads = d.params.at("block_threads").get<int>();
  const int rows_per_block = threads / d.params.at("lanes_per_row").get<int>();
  return {loaded.kernel, {ops::blocks_for(rows, rows_per_block), k_slices(k, light_slice(d.params)), 1},
          {unsigned(threads), 1, 1}, 0};
}

void launch_csr(const Launch& l, int m, int k, CUdeviceptr row_ptr, CUdeviceptr col_idx, CUdeviceptr values, CUdeviceptr b,
                long long ldb, CUdeviceptr c, long long ldc, CUstream stream, bool early) {
  void* args[] = {&m, &k, &row_ptr, &col_idx, &values, &b, &ldb, &c, &ldc};
  l.kernel.launch(l.grid, l.block, l.shared_bytes, stream, args, early);
}

}  // namespace sparsejit::variants::spmm
