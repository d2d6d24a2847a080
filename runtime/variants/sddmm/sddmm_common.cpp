#include "variants/sddmm/sddmm_common.hpp"

#include <algorithm>
#include <cmath>

#include "models/model_store.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::variants::sddmm {

using nlohmann::json;

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

int64_t pow2_at_least(int64_t value) {
  int64_t p = 1;
  while (p < value) p *= 2;
  return p;
}

int64_t pow2_at_most(int64_t value) {
  int64_t p = 1;
  while (p * 2 <= value) p *= 2;
  return p;
}

bool is_pow2(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

int vector_width(const plan::SddmmProblem& p) {
  const int widest = p.dtype == DType::F64 ? 2 : 4;
  for (int w = widest; w > 1; w /= 2)
    if (p.k % w == 0 && p.lda % w == 0 && p.ldb % w == 0) return w;
  return 1;
}

json launch_value(const json& model, const std::string& variant, const std::string& key) {
  if (model.contains("launch") && model["launch"].contains(variant) && model["launch"][variant].contains(key))
    return model["launch"][variant][key];
  return models::shipped_model("sddmm").at("launch").at(variant).at(key);
}

double occupied(double items, double cells) { return cells <= 0 ? 0 : cells * (1.0 - std::exp(-items / cells)); }

double dense_tiles_estimate(const Features& f, const plan::SddmmProblem& p, double ti, double tj) {
  if (p.tile_count) return double(p.tile_count(int32_t(ti), int32_t(tj)));
  const double cells = std::ceil(double(f.basic.rows) / ti) * std::ceil(double(f.basic.cols) / tj);
  const double items = f.tiles.tiles > 0 ? double(f.tiles.tiles) : double(f.basic.nnz);
  return std::max(occupied(items, cells), f.basic.nnz > 0 ? 1.0 : 0.0);
}

json gathered_rows_terms(const Features& f, const plan::SddmmProblem& p, double launches) {
  const double vb = double(size_of(p.dtype));
  const double nnz = double(f.basic.nnz), k = double(p.k);
  return {{"launch", launches}, {"sparse_bytes", nnz * (8.0 + 2.0 * vb)}, {"gather_bytes", 2.0 * nnz * k * vb}};
}

void require(bool ok, const std::string& variant, const std::string& what) {
  if (!ok) throw InvalidInputError("sddmm " + variant + ": " + what);
}

int64_t int_param(const json& params, const std::string& variant, const char* key) {
  const json& v = params.at(key);
  require(v.is_number_integer(), variant, std::string(key) + " = " + v.dump() + " is not an integer");
  return v.get<int64_t>();
}

void check_vector_width(const json& params, const plan::SddmmProblem& p, const std::string& variant) {
  const int64_t w = int_param(params, variant, "vector_width");
  const int64_t widest = p.dtype == DType::F64 ? 2 : 4;
  require(w == 1 || (w == widest && p.k % w == 0 && p.lda % w == 0 && p.ldb % w == 0), variant,
          "vector_width = " + std::to_string(w) + " needs 1 or " + std::to_string(widest) +
              " dividing k = " + std::to_string(p.k) + ", lda = " + std::to_string(p.lda) + " and ldb = " + std::to_string(p.ldb));
}

int64_t check_group_size(const json& params, const std::string& variant) {
  const int64_t group = int_param(params, variant, "group_size");
  require(is_pow2(group) && group <= 32, variant, "group_size = " + std::to_string(group) + " is not a power of two in [1, 32]");
  return group;
}

void check_threads(const json& params, const std::string& variant, int64_t group) {
  const int64_t threads = int_param(params, variant, "threads_per_block");
  require(threads >= 32 && threads <= 1024 && threads % 32 == 0 && threads % group == 0, variant,
          "threads_per_block = " + std::to_string(threads) + " must be a multiple of 32 in [32, 1024]");
}

std::string vec_type(DType dtype, int width) {
  return width == 1 ? cuda_type_name(dtype) : (dtype == DType::F64 ? "double2" : "float4");
}

cuda::Kernel load_kernel(detail::RuntimeState& rt, Decision& d, const jit::KernelSpec& spec) {
  const ops::LoadedKernel loaded = rt.loader.load(spec);
  ops::record_kernel(d, loaded);
  return loaded.kernel;
}

unsigned dynamic_shared(const cuda::Kernel& kernel, int64_t bytes) {
  if (bytes > 48 * 1024) kernel.set_max_dynamic_shared(int(bytes));
  return unsigned(bytes);
}

}  // namespace sparsejit::variants::sddmm
