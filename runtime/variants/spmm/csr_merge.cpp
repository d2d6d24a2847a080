// csr_merge: nonzero-balanced. Every lane group takes nnz_per_group consecutive nonzeros
// (rows from the COO row array cached on the handle, shared with SDDMM's coo_flat), so no
// group waits on the longest row. A·B: rows inside one group's range are stored, rows split
// between groups are added atomically; only those and the empty rows are cleared first (a list
// cached on the handle per range), so the rest of C is written once. Aᵀ·B: C cleared, then
// every product added atomically.
#include <algorithm>
#include <optional>
#include <string>

#include "formats/coo_rows.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

const int kRanges[] = {16, 32, 64, 128, 256};
const int kSearchRanges[] = {32, 64, 128, 256};
// Small matrices still spread over the SMs.
constexpr int kMergeThreads = 128;

// Every parameter but nnz_per_group (which the cost formulas pick): vec_width, lanes and cf
// as the light kernel; unroll 4 / cf, at least 2. Four vectors in flight per lane, not eight:
// the kernel then fits 64 registers, 8 blocks of 128 threads per SM instead of 6, and on the
// H100 that was 2-7% faster on every power-law graph at K = 128 and 512 (ranges 16 to 64); the
// search space still times 8.
nlohmann::json merge_base_params(const plan::SpmmProblem& p) {
  const int vec = vector_width(p);
  const int lanes = lanes_for(vector_units(p, vec));
  const int cf = cf_for(p, vec, lanes);
  return {{"vec_width", vec}, {"lanes", lanes}, {"cf", cf}, {"unroll", std::max(2, 4 / cf)},
          {"nnz_per_group", 64}, {"block_threads", kMergeThreads}};
}

int merge_slice(const nlohmann::json& params) {
  return params.at("lanes").get<int>() * params.at("vec_width").get<int>() * params.at("cf").get<int>();
}

// Threads of a block of the clearing kernel.
constexpr int kClearThreads = 256;

// A·B's groups narrower than a warp shuffle each entry's row while its B row loads: on 14 graphs
// and meshes of the H200, 8.6% faster with 8 lanes (K = 32) and 7% with 16 (K = 64), but up to 3%
// slower with 32, where a whole batch's one shuffle after the loads wins
// (bench/results/2026-12-04-h200-spmm-merge-rows).
bool rows_with_loads(const nlohmann::json& params) { return params.at("lanes").get<int>() < 32; }

jit::KernelSpec merge_spec(const nlohmann::json& params, DType dtype, bool transpose) {
  nlohmann::json p = vector_types(params, dtype);
  for (const char* key : {"lanes", "cf", "nnz_per_group", "unroll", "block_threads"}) p[key] = params.at(key).get<int>();
  if (transpose) return {"spmm_csr_merge_t.cu", "sj_spmm_csr_merge_t", p, {}};
  p["rows_with_loads"] = rows_with_loads(params) ? 1 : 0;
  return {"spmm_csr_merge.cu", "sj_spmm_csr_merge", p, {}};
}

// A·B's clearing of the rows the merge kernel does not store whole.
jit::KernelSpec clear_rows_spec(const nlohmann::json& params, DType dtype) {
  nlohmann::json p = vector_types(params, dtype);
  p["block_threads"] = kClearThreads;
  return {"spmm_clear_rows.cu", "sj_spmm_clear_rows", p, {}};
}

// The rows of C cleared before an A·B merge launch, on the device.
struct ClearedRows {
  DeviceBuffer rows;
  long long count = 0;
};

// The clearing kernel's launch over `count` rows of K columns: a thread per vector, at most
// 65535 blocks (its grid-stride loop covers the rest).
Launch clear_launch(cuda::Kernel kernel, long long count, int32_t k, int vec_width) {
  const long long vectors = count * (k / vec_width);
  const long long blocks = std::clamp<long long>((vectors + kClearThreads - 1) / kClearThreads, 1, 65535);
  return {std::move(kernel), {unsigned(blocks), 1, 1}, {unsigned(kClearThreads), 1, 1}, 0};
}

// A·B: the listed rows cleared (none listed: no launch), then one group of `lanes` lanes per
// nnz_per_group nonzeros and K slice. Aᵀ·B (no clearing launch): the memset of C, then the
// merge kernel.
template <class T>
class MergeExecution final : public SpmmExecution<T> {
 public:
  MergeExecution(Launch launch, std::shared_ptr<const DeviceBuffer> coo_rows, std::optional<Launch> clear,
                 std::shared_ptr<const ClearedRows> cleared)
      : launch_(std::move(launch)), coo_rows_(std::move(coo_rows)), clear_(std::move(clear)), cleared_(std::move(cleared)) {}
  void run(detail::RuntimeState&, const SpmmOperands<T>& o) override {
    long long nnz = o.a.nnz(), ldb = o.b.ld(), ldc = o.c.ld();
    int k = o.b.cols();
    CUdeviceptr b = o.b.buffer().ptr(), c = o.c.buffer().ptr();
    if (!clear_) {
      o.c.clear_async(o.stream);
    } else if (cleared_->count > 0) {
      long long count = cleared_->count;
      CUdeviceptr rows = cleared_->rows.ptr();
      void* args[] = {&count, &rows, &k, &c, &ldc};
      clear_->kernel.launch(clear_->grid, clear_->block, clear_->shared_bytes, o.stream, args, o.early);
    }
    CUdeviceptr row_idx = coo_rows_->ptr(), col_idx = o.a.col_idx().ptr(), values = o.a.values().ptr();
    void* args[] = {&nnz, &k, &row_idx, &col_idx, &values, &b, &ldb, &c, &ldc};
    launch_.kernel.launch(launch_.grid, launch_.block, launch_.shared_bytes, o.stream, args, o.early);
  }
  bool launches_only() const override { return clear_.has_value(); }  // Aᵀ·B clears C with a memset

 private:
  Launch launch_;
  std::shared_ptr<const DeviceBuffer> coo_rows_;
  std::optional<Launch> clear_;
  std::shared_ptr<const ClearedRows> cleared_;
};

}  // namespace

class CsrMerge final : public SpmmVariantOf<CsrMerge> {
 public:
  CsrMerge() : SpmmVariantOf("csr_merge", 50, "nonzero-balanced: a lane group per range of nonzeros, boundary rows added atomically") {}

  // A·B's kernel forms a B row's address as a 32-bit multiply-add, so B's row stride in bytes
  // must be below 2^32 (a stride of 2^30 floats; Aᵀ·B's kernel has no such limit).
  std::string rejected(const SpmmPlanInputs& in) const override {
    std::string reason = SpmmVariant::rejected(in);
    const int64_t stride_bytes = ld_or_k(in.problem.ldb, in.problem.k) * int64_t(value_bytes(in.problem));
    if (reason.empty() && !in.problem.transpose_a && stride_bytes >= (int64_t(1) << 32))
      reason = "B's row stride of " + std::to_string(stride_bytes) + " bytes is 2^32 or more";
    return reason;
  }

  // nnz_per_group: the cheapest of kRanges by the cost formulas.
  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>&) const override {
    std::vector<nlohmann::json> sets;
    for (int range : kRanges) {
      sets.push_back(merge_base_params(in.problem));
      sets.back()["nnz_per_group"] = range;
    }
    return cheapest_params(*this, in, sets);
  }

  void check(const plan::SpmmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    check_group_params(name, params);
    require_one_of(name, params, "block_threads", {64, 128, 256, 512, 1024});
    const int range = params.at("nnz_per_group").get<int>();
    if (range < 1 || range > 4096)
      throw InvalidInputError("csr_merge: nnz_per_group = " + std::to_string(range) + " must be in [1, 4096]");
    check_vector_width(name, params, problem);
  }

  // Two launches; (row, column, value) per nonzero and K slice; A·B: B rows per nonzero, C
  // written once, plus the cleared rows (empty ones, and a boundary row of each range) written
  // twice, at most the two boundary rows of each range added atomically; Aᵀ·B: C cleared, then
  // every product added atomically. No group waits on a long row: its round trips are its
  // range's B loads (indices come ahead).
  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json& params) const override {
    const Features& f = in.features;
    const plan::SpmmProblem& p = in.problem;
    nlohmann::json t = base_terms(in);
    const double vb = value_bytes(p);
    const double nnz = double(f.basic.nnz);
    const double range = params.at("nnz_per_group").get<int>();
    const double groups = ceil_div(nnz, range);
    const double row_bytes = double(p.k) * vb;
    const int64_t k_slices = slices(p.k, merge_slice(params));
    t["launch"] = 2.0;
    t["sparse_bytes"] = nnz * (8.0 + vb) * k_slices;
    t["critical_loads"] = ceil_div(range, params.at("unroll").get<int>()) + 1.0;
    if (p.transpose_a) {
      t["atomic_bytes"] = nnz * row_bytes;
    } else {
      const double cleared = double(f.basic.empty_rows) + std::min(groups, double(f.basic.rows - f.basic.empty_rows));
      t["output_bytes"] = (f.basic.rows + cleared) * row_bytes;
      t["atomic_bytes"] = std::min(2.0 * groups, double(f.basic.rows) + groups) * row_bytes;
    }
    return t;
  }

  std::vector<nlohmann::json> neighbour_changes(const plan::SpmmProblem&, const nlohmann::json& params) const override {
    const int range = params.at("nnz_per_group").get<int>();
    return {{{"nnz_per_group", range / 2}}, {{"nnz_per_group", range * 2}}};
  }

  // The lanes covering K and 32 lanes (fewer vectors per lane, more columns per group), every
  // searched range, and unroll 4 or 8 B rows in flight.
  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    const int vec = vector_width(in.problem);
    for (int lanes : lanes_covering_k_and_32(in.problem)) {
      for (int range : kSearchRanges) {
        for (int unroll : {4, 8}) {
          nlohmann::json params = merge_base_params(in.problem);
          params["lanes"] = lanes;
          params["cf"] = cf_for(in.problem, vec, lanes);
          params["nnz_per_group"] = range;
          params["unroll"] = unroll;
          space.push_back(params);
        }
      }
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem& problem) const override {
    if (problem.transpose_a) return {merge_spec(d.params, problem.dtype, true)};
    return {merge_spec(d.params, problem.dtype, false), clear_rows_spec(d.params, problem.dtype)};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    Decision& d = p.decision;
    const ops::LoadedKernel loaded = load(p.rt, d, merge_spec(d.params, p.problem.dtype, p.problem.transpose_a));
    const int threads = d.params.at("block_threads").template get<int>();
    const int64_t range = d.params.at("nnz_per_group").template get<int>();
    const int64_t groups = (p.a.nnz() + range - 1) / range;
    const int64_t groups_per_block = threads / d.params.at("lanes").template get<int>();
    Launch launch{loaded.kernel,
                  {unsigned((groups + groups_per_block - 1) / groups_per_block), k_slices(p.problem.k, merge_slice(d.params)), 1},
                  {unsigned(threads), 1, 1}, 0};
    auto coo_rows = p.a.template get_or_create<DeviceBuffer>("coo_rows", [&] {
      return std::make_shared<DeviceBuffer>(DeviceBuffer::from_host(p.rt.context, formats::coo_row_indices(p.a.host_pattern())));
    });
    if (p.problem.transpose_a) return std::make_unique<MergeExecution<T>>(std::move(launch), std::move(coo_rows), std::nullopt, nullptr);
    const ops::LoadedKernel clear = load(p.rt, d, clear_rows_spec(d.params, p.problem.dtype));
    auto cleared = p.a.template get_or_create<ClearedRows>("csr_merge_cleared_rows:" + std::to_string(range), [&] {
      const std::vector<int32_t> rows = formats::rows_cleared_before_merge(p.a.host_pattern(), range);
      return std::make_shared<ClearedRows>(ClearedRows{DeviceBuffer::from_host(p.rt.context, rows), (long long)rows.size()});
    });
    Launch clearing = clear_launch(clear.kernel, cleared->count, p.problem.k, d.params.at("vec_width").template get<int>());
    return std::make_unique<MergeExecution<T>>(std::move(launch), std::move(coo_rows), std::move(clearing), std::move(cleared));
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, csr_merge, sparsejit::variants::spmm::CsrMerge)
