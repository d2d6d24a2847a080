// cusparse: cuSPARSE's SDDMM, which computes the sampled dot products only (S's values are not
// read: vendor/cusparse_sddmm.hpp), and a scale kernel multiplying P by S's values. cuSPARSE
// binds A, B and P when a call is prepared, so a prepared call is kept per operand set
// (vendor/kept_calls.hpp).
#include <memory>
#include <mutex>
#include <tuple>

#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "variants/sddmm/sddmm_common.hpp"
#include "vendor/cusparse_sddmm.hpp"
#include "vendor/kept_calls.hpp"

namespace sparsejit::variants::sddmm {

namespace {

constexpr int kScaleBlock = 256;

jit::KernelSpec scale_spec(DType dtype) {
  return {"sddmm_scale.cu", "sj_sddmm_scale", {{"value_t", cuda_type_name(dtype)}, {"block_size", kScaleBlock}}, {}};
}

template <class T>
class VendorExecution final : public SddmmExecution<T> {
 public:
  explicit VendorExecution(Launch scale) : scale_(std::move(scale)) {}
  void run(detail::RuntimeState& rt, const SddmmOperands<T>& o) override {
    {
      std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
      const OperandKey key{o.a.data(), o.a.ld(), o.b.data(), o.b.ld(), o.p.ptr()};
      calls_.get(key, [&] { return std::make_unique<vendor::CusparseSampledDots<T>>(rt.cusparse, o.s, o.a, o.b, o.p, o.stream); })
          .run(o.stream);
    }
    long long nnz = o.s.nnz();
    CUdeviceptr sv = o.s.values().ptr(), pv = o.p.ptr();
    void* args[] = {&nnz, &sv, &pv};
    scale_(args, o.stream, o.early);
  }

 private:
  using OperandKey = std::tuple<const void*, int64_t, const void*, int64_t, CUdeviceptr>;
  Launch scale_;
  vendor::KeptCalls<OperandKey, vendor::CusparseSampledDots<T>> calls_;  // under rt.cusparse_mutex
};

}  // namespace

class Cusparse final : public SddmmVariantOf<Cusparse> {
 public:
  Cusparse()
      : SddmmVariantOf("cusparse", 90, "cuSPARSE SDDMM (sampled dot products) and a scale kernel", Traits{}.as_vendor()) {}

  nlohmann::json defaults(const SddmmPlanInputs&) const override { return nlohmann::json::object(); }

  // No parameters: nothing to refuse.
  void check(const plan::SddmmProblem&, const plan::DeviceTarget&, const nlohmann::json&) const override {}

  // cuSPARSE's call and the scale kernel: its dot products' rows (gather_bytes) and row_bytes,
  // a row of A per row of the pattern. On the H100 (2026-11-25, K = 128) its time followed the
  // rows more than the nonzeros, about 1.3 us per thousand rows against 0.11 us per thousand
  // nonzeros on the uniform and FEM patterns of 4-50 nonzeros a row (bfly, wing, 2M x 2M), 3x
  // slower there than row_gather; without row_bytes the fit priced it at a sixth of its time on
  // such patterns and the model chose it. No per-nonzero term (S's indices): fitted at K = 32
  // and 64 it took weight from gather_bytes and priced K = 128 at half its time (MIT8: chosen
  // over a 1.56x faster row_gather under cross-validation; without it, worst 1.20x).
  // scale_bytes: the scale kernel reads S's and P's values and writes P's. On the H100
  // (2026-11-28) the runtime's variant took 1.02-1.52x cuSPARSE's bare call: the scale's launch
  // on the small DLMC layers, its bytes on the large patterns. Fitted on the bare call's time,
  // v9 priced neither and chose cuSPARSE where row_gather was 1.34x faster.
  nlohmann::json cost_terms(const SddmmPlanInputs& in, const nlohmann::json&) const override {
    const double vb = double(size_of(in.problem.dtype)), k = double(in.problem.k), nnz = double(in.features.basic.nnz);
    return {{"launch", 2.0},
            {"gather_bytes", 2.0 * nnz * k * vb},
            {"row_bytes", double(in.features.basic.rows) * k * vb},
            {"scale_bytes", 3.0 * nnz * vb}};
  }

  std::vector<nlohmann::json> search_space(const SddmmPlanInputs&) const override { return {nlohmann::json::object()}; }

  std::vector<jit::KernelSpec> kernel_specs(const Decision&, const plan::SddmmProblem& problem,
                                            const plan::DeviceTarget&) const override {
    return {scale_spec(problem.dtype)};
  }

  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const {
    const cuda::Kernel kernel = load_kernel(p.rt, p.decision, scale_spec(p.problem.dtype));
    return std::make_unique<VendorExecution<T>>(
        Launch{kernel, {ops::blocks_for(p.s.nnz(), kScaleBlock), 1, 1}, {unsigned(kScaleBlock), 1, 1}});
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, cusparse, sparsejit::variants::sddmm::Cusparse)
