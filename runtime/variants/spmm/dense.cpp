// dense: A expanded once per values into a dense copy cached on the handle, then one GEMM over
// it (near-dense operands: pruned layers at 50-80% sparsity). Admitted while the copy stays
// within kDenseMaxBytes. It multiplies A's zeros too: an Inf or NaN in B reaches C.
// The GEMM ("gemm"): f32 A·B on sm_80 and later runs templates/spmm_dense_mma.cu, tensor cores
// at f32 accuracy by the 3xTF32 split, with the inner dimension cut into "splits" parts when
// C has too few tiles to fill the device; f64 and Aᵀ·B run cuBLAS in full precision. On the
// DLMC layers dense takes, the kernel was 1.04-1.27x faster than cuBLAS's SGEMM on 16 of 18 at
// K = 512 and 3-5% slower on three small ones at K = 128 (bench/results/2026-12-04-h200-spmm-dense-mma).
#include <algorithm>
#include <mutex>
#include <type_traits>

#include "formats/dense_copy.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

// The dense copy lives as long as the handle: 1 GiB keeps it a fraction of any data-centre
// GPU's memory (a 16384 x 16384 fp32 matrix).
constexpr double kDenseMaxBytes = double(1LL << 30);
// cuBLAS's output tile edge for the shapes the dense variant wins (what sets its parallelism).
constexpr double kGemmTile = 128;
// The tensor-core kernel's shape: a block per 64 x 32 tile of C, four warps of 32 x 16, slices
// of 32 inner elements, three in flight (the fastest or within 10% of it on the measured shapes).
constexpr int kMmaTileRows = 64, kMmaTileCols = 32, kMmaSlice = 32, kMmaStages = 3;
constexpr int kMmaWarpRows = 32, kMmaWarpCols = 16, kMmaThreads = 128;
// Splits of the inner dimension: until C's tiles times the splits fill two blocks per SM, each
// part keeping at least kMinSplitInner elements, at most kMaxSplits parts.
constexpr int kMaxSplits = 16;
constexpr int64_t kMinSplitInner = 128;

bool mma_serves(const plan::SpmmProblem& p, const plan::DeviceTarget& device) {
  return p.dtype == DType::F32 && !p.transpose_a && device.sm >= 80;
}

// The launch puts C's column tiles on gridDim.x and its row tiles on gridDim.y (at most 65535).
constexpr int64_t kMaxRowTiles = 65535;
bool mma_fits_grid(int64_t rows) { return (rows + kMmaTileRows - 1) / kMmaTileRows <= kMaxRowTiles; }

int64_t mma_tiles(int64_t rows, int32_t k) {
  return ((rows + kMmaTileRows - 1) / kMmaTileRows) * ((int64_t(k) + kMmaTileCols - 1) / kMmaTileCols);
}

int mma_splits(int64_t rows, int64_t cols, int32_t k, int multiprocessors) {
  const int64_t tiles = mma_tiles(rows, k);
  int splits = 1;
  while (splits < kMaxSplits && tiles * splits < 2LL * multiprocessors && cols / (2 * splits) >= kMinSplitInner) splits *= 2;
  return splits;
}

// Inner elements of one split: whole slices.
int mma_inner_per_split(int32_t cols, int splits) {
  const int per = (cols + splits - 1) / splits;
  return (per + kMmaSlice - 1) / kMmaSlice * kMmaSlice;
}

unsigned mma_shared_bytes() {
  return unsigned(kMmaStages * (kMmaTileRows * (kMmaSlice + 4) + kMmaSlice * (kMmaTileCols + 8)) * 4);
}

jit::KernelSpec mma_spec(const nlohmann::json& params) {
  return {"spmm_dense_mma.cu", "sj_spmm_dense_mma",
          {{"vec_width", params.at("vec_width")}, {"tile_rows", kMmaTileRows}, {"tile_cols", kMmaTileCols},
           {"slice", kMmaSlice}, {"stages", kMmaStages}, {"warp_rows", kMmaWarpRows}, {"warp_cols", kMmaWarpCols},
           {"block_size", kMmaThreads}, {"min_blocks", 4}, {"fp16", false}, {"bf16", false}},
          {}};
}

template <class T>
class DenseExecution final : public SpmmExecution<T> {
 public:
  DenseExecution(std::shared_ptr<CachedDenseCopy<T>> copy, bool transpose) : copy_(std::move(copy)), transpose_(transpose) {}
  void run(detail::RuntimeState& rt, const SpmmOperands<T>& o) override {
    const std::shared_ptr<const DenseCopy> copy = copy_->current(o.a);
    std::lock_guard<std::mutex> lock(rt.cublas_mutex);
    vendor::dense_gemm(rt.cublas_handle(), copy->values, o.a.rows(), o.a.cols(), transpose_, o.b, o.c, o.stream);
  }

 private:
  std::shared_ptr<CachedDenseCopy<T>> copy_;
  bool transpose_;
};

// The tensor-core GEMM: C cleared first when the inner dimension is split (the parts add). Not
// replayed as a graph: a call may rebuild the dense copy (new values) before its launch.
class DenseMmaExecution final : public SpmmExecution<float> {
 public:
  DenseMmaExecution(std::shared_ptr<CachedDenseCopy<float>> copy, Launch launch, int inner_per_split)
      : copy_(std::move(copy)), launch_(std::move(launch)), inner_per_split_(inner_per_split) {}
  void run(detail::RuntimeState&, const SpmmOperands<float>& o) override {
    const std::shared_ptr<const DenseCopy> copy = copy_->current(o.a);
    if (launch_.grid.z > 1) o.c.clear_async(o.stream);
    int m = o.a.rows(), n = o.b.cols(), k = o.a.cols(), per = inner_per_split_;
    long long lda = o.a.cols(), ldb = o.b.ld(), ldc = o.c.ld();
    CUdeviceptr a = copy->values.ptr(), b = o.b.buffer().ptr(), c = o.c.buffer().ptr();
    void* args[] = {&m, &n, &k, &a, &lda, &b, &ldb, &c, &ldc, &per};
    launch_.kernel.launch(launch_.grid, launch_.block, launch_.shared_bytes, o.stream, args, o.early);
  }

 private:
  std::shared_ptr<CachedDenseCopy<float>> copy_;
  Launch launch_;
  int inner_per_split_;
};

}  // namespace

class Dense final : public SpmmVariantOf<Dense> {
 public:
  Dense() : SpmmVariantOf("dense", 60, "cuBLAS GEMM over a dense copy of A, cached on the handle (near-dense A)") {}

  std::string rejected(const SpmmPlanInputs& in) const override {
    std::string reason = SpmmVariant::rejected(in);
    if (!reason.empty()) return reason;
    const Features& f = in.features;
    const double bytes = double(f.basic.rows) * double(f.basic.cols) * value_bytes(in.problem);
    if (bytes > kDenseMaxBytes)
      return "its dense copy of A (" + std::to_string(f.basic.rows) + "x" + std::to_string(f.basic.cols) + ", " +
             std::to_string(int64_t(bytes)) + " bytes) would exceed " + std::to_string(int64_t(kDenseMaxBytes)) + " bytes";
    return "";
  }

  // gemm: mma where it serves (f32 A·B, sm_80+, at most 65535 x 64 rows), else cublas; splits
  // by mma_splits; vec_width 4 where K, both leading dimensions and A's columns (the copy's row
  // length) allow it. Every set holds all three (cublas reads none of the other two).
  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>&) const override {
    const plan::SpmmProblem& p = in.problem;
    const Features& f = in.features;
    const bool mma = mma_serves(p, in.device) && mma_fits_grid(f.basic.rows);
    const int widest = vector_width(p);
    const int vec = widest > 1 && f.basic.cols % widest == 0 ? widest : 1;
    return {{"gemm", mma ? "mma" : "cublas"},
            {"splits", mma ? mma_splits(f.basic.rows, f.basic.cols, p.k, in.device.multiprocessors) : 1},
            {"vec_width", mma ? vec : 1}};
  }

  void check(const plan::SpmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const override {
    const std::string gemm = params.at("gemm").get<std::string>();
    if (gemm != "mma" && gemm != "cublas") throw InvalidInputError("dense: gemm = '" + gemm + "' must be mma or cublas");
    if (gemm == "cublas") return;
    if (!mma_serves(problem, device))
      throw UnsupportedError("dense: gemm = mma serves f32 A·B on sm_80 or later (this call: " + std::string(to_string(problem.dtype)) +
                             (problem.transpose_a ? ", Aᵀ·B" : ", A·B") + ", sm_" + std::to_string(device.sm) + ")");
    const int splits = params.at("splits").get<int>();
    if (splits < 1 || splits > 64) throw InvalidInputError("dense: splits = " + std::to_string(splits) + " must be in [1, 64]");
    check_vector_width(name, params, problem);
  }

  // One GEMM over all rows x cols entries of A, zeros included (its own terms, none of the
  // sparse kernels'), priced as cuBLAS's whatever `gemm` says: the model's coefficients were
  // fitted to cuBLAS's times, so the model picks dense where it did before, and there the
  // tensor-core GEMM mostly runs faster (the record above). The terms: the flops; the bytes of
  // the dense copy, B and C; and the flops of one
  // multiprocessor's share when the output has fewer 128x128 tiles than the device has
  // multiprocessors (cuBLAS then splits the inner dimension, at a cost the fit prices), so a
  // few-row layer with long rows is not priced as if the whole device worked on it.
  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json&) const override {
    const plan::SpmmProblem& p = in.problem;
    const double vb = value_bytes(p);
    const double rows = in.features.basic.rows, cols = in.features.basic.cols, k = p.k;
    const double outer = p.transpose_a ? cols : rows;
    const double inner = p.transpose_a ? rows : cols;
    const double flops = 2.0 * rows * cols * k;
    const double tiles = ceil_div(outer, kGemmTile) * ceil_div(k, kGemmTile);
    return {{"launch", 1.0},
            {"dense_flops", flops},
            {"dense_bytes", (rows * cols + inner * k + outer * k) * vb},
            {"dense_serial_flops", flops / std::max(1.0, std::min<double>(tiles, in.device.multiprocessors))}};
  }

  // cuBLAS, and the tensor-core GEMM at 1 to 16 splits where it serves.
  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    if (!rejected(in).empty()) return {};
    std::vector<DecisionStep> unused;
    nlohmann::json planned = defaults(in, unused);
    nlohmann::json cublas = planned;
    cublas["gemm"] = "cublas";
    std::vector<nlohmann::json> space{cublas};
    if (planned.at("gemm") != "mma") return space;
    for (int splits = 1; splits <= kMaxSplits; splits *= 2) {
      planned["splits"] = splits;
      space.push_back(planned);
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem&) const override {
    if (d.params.at("gemm") != "mma") return {};
    return {mma_spec(d.params)};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    auto copy = cached_dense_copy(p.a);
    copy->current(p.a);  // expand now, not in the first timed call
    if constexpr (std::is_same_v<T, float>) {
      if (p.decision.params.at("gemm") == "mma") return make_mma(p, std::move(copy));
    }
    std::lock_guard<std::mutex> lock(p.rt.cublas_mutex);
    p.rt.cublas_handle();  // create the handle now too
    return std::make_unique<DenseExecution<T>>(std::move(copy), p.problem.transpose_a);
  }

 private:
  std::unique_ptr<SpmmExecution<float>> make_mma(const SpmmPreparation<float>& p, std::shared_ptr<CachedDenseCopy<float>> copy) const {
    Decision& d = p.decision;
    const int vec = d.params.at("vec_width").get<int>();
    if (vec > 1 && p.a.cols() % vec != 0)
      throw InvalidInputError("dense: vec_width = " + std::to_string(vec) + " needs A's column count (" + std::to_string(p.a.cols()) +
                              ", the dense copy's row length) to be a multiple of it");
    if (!mma_fits_grid(p.a.rows()))
      throw UnsupportedError("dense: gemm = mma takes at most " + std::to_string(kMaxRowTiles * kMmaTileRows) + " rows (A has " +
                             std::to_string(p.a.rows()) + "); force gemm = cublas");
    const int per = mma_inner_per_split(p.a.cols(), d.params.at("splits").get<int>());
    const unsigned parts = unsigned((p.a.cols() + per - 1) / per);
    const ops::LoadedKernel loaded = load(p.rt, d, mma_spec(d.params));
    const unsigned shared_bytes = mma_shared_bytes();
    loaded.kernel.set_max_dynamic_shared(int(shared_bytes));
    Launch launch{loaded.kernel,
                  {unsigned((p.problem.k + kMmaTileCols - 1) / kMmaTileCols), unsigned((p.a.rows() + kMmaTileRows - 1) / kMmaTileRows),
                   std::max(1u, parts)},
                  {unsigned(kMmaThreads), 1, 1},
                  shared_bytes};
    return std::make_unique<DenseMmaExecution>(std::move(copy), std::move(launch), per);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, dense, sparsejit::variants::spmm::Dense)
