// dense: A expanded once per values into a dense copy cached on the handle, then one cuBLAS
// GEMM in full precision (near-dense operands: pruned layers at 50-80% sparsity). Admitted while
// the copy stays within kDenseMaxBytes. It multiplies A's zeros too: an Inf or NaN in B reaches C.
#include <algorithm>
#include <mutex>

#include "formats/dense_copy.hpp"
#include "ops/runtime_state.hpp"
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

// The dense copy lives as long as the handle: 1 GiB keeps it a fraction of any data-centre
// GPU's memory (a 16384 x 16384 fp32 matrix).
constexpr double kDenseMaxBytes = double(1LL << 30);
// cuBLAS's output tile edge for the shapes the dense variant wins (what sets its parallelism).
constexpr double kGemmTile = 128;

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

  nlohmann::json defaults(const SpmmPlanInputs&, std::vector<DecisionStep>&) const override { return nlohmann::json::object(); }

  // One GEMM over all rows x cols entries of A, zeros included (its own terms, none of the
  // sparse kernels'): the flops; the bytes of the dense copy, B and C; and the flops of one
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

  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    if (!rejected(in).empty()) return {};
    return {nlohmann::json::object()};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    auto copy = cached_dense_copy(p.a);
    copy->current(p.a);  // expand now, not in the first timed call
    std::lock_guard<std::mutex> lock(p.rt.cublas_mutex);
    p.rt.cublas_handle();  // create the handle now too
    return std::make_unique<DenseExecution<T>>(std::move(copy), p.problem.transpose_a);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, dense, sparsejit::variants::spmm::Dense)
