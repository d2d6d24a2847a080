// cublas: the whole product A·B by cuBLAS in the call's precision class (vendor/cublas_gemm_ex.hpp:
// SGEMM for full f32, DGEMM for f64, TF32 GEMM, or fp16/bf16 GemmEx on 16-bit operands (f32
// ones through the executor's converted copies) with f32 accumulation: the conversion pass and
// an HGEMM took 1.5 ms at N = 8192 on an H100, cuBLAS's own FAST_16F GEMM of the f32 operands
// 2.4 ms. Nothing is skipped, so its result is the exact
// product to the precision's rounding: an error of at most the bound. The planner takes it
// above the model's crossover share of kept products, where skipping no longer pays.
#include <mutex>

#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/spamm/spamm_variant.hpp"
#include "vendor/cublas_gemm_ex.hpp"

namespace sparsejit::variants::spamm {

namespace {

vendor::GemmPrecision gemm_precision(const plan::SpammProblem& p) {
  if (p.dtype == DType::F64) return vendor::GemmPrecision::F64;
  switch (p.precision) {
    case SpammPrecision::Full: return vendor::GemmPrecision::F32;
    case SpammPrecision::TF32: return vendor::GemmPrecision::TF32;
    case SpammPrecision::FP16: return vendor::GemmPrecision::F16;
    case SpammPrecision::BF16: return vendor::GemmPrecision::BF16;
  }
  return vendor::GemmPrecision::F32;
}

template <class T>
class VendorExecution final : public SpammExecution<T> {
 public:
  VendorExecution(vendor::GemmPrecision precision, plan::SpammProblem problem) : precision_(precision), problem_(problem) {}
  void run(detail::RuntimeState& rt, const SpammOperands<T>& o) const override {
    vendor::GemmOperands g;
    g.a = o.a.data;
    g.b = o.b.data;
    g.c = o.c.buffer().ptr();
    g.lda = o.a.ld;
    g.ldb = o.b.ld;
    g.ldc = o.c.ld();
    g.m = o.c.rows();  // the rows of this call (a block of a spread call), not the prepared problem's
    g.k = problem_.k;
    g.n = problem_.n;
    std::lock_guard<std::mutex> lock(rt.cublas_mutex);
    vendor::gemm_row_major(rt.cublas_handle(), precision_, g, o.stream);
  }

 private:
  vendor::GemmPrecision precision_;
  plan::SpammProblem problem_;
};

}  // namespace

class Cublas final : public SpammVariantOf<Cublas> {
 public:
  Cublas()
      : SpammVariantOf("cublas", 90, "the whole product by cuBLAS in the same precision class (SGEMM, DGEMM, TF32, fp16/bf16 GemmEx); skips nothing",
                       Traits{}.as_vendor()) {}

  std::string rejected(const SpammPlanInputs&) const override { return ""; }
  nlohmann::json defaults(const SpammPlanInputs&) const override { return nlohmann::json::object(); }

  // launch; the whole product's flops at the precision's GEMM rate.
  nlohmann::json cost_terms(const SpammPlanInputs& in, const nlohmann::json&) const override {
    const std::string rate = rate_class(in.problem, false);
    const double flops = dense_flops(in.problem);
    nlohmann::json terms = {{"launch", 1.0}};
    for (const char* r : {"f32", "f64", "tf32", "f16"}) terms[std::string("gemm_") + r + "_flops"] = rate == r ? flops : 0.0;
    return terms;
  }

  template <class T>
  std::unique_ptr<SpammExecution<T>> make(const SpammPreparation<T>& p) const {
    return std::make_unique<VendorExecution<T>>(gemm_precision(p.problem), p.problem);
  }
};

}  // namespace sparsejit::variants::spamm

SPARSEJIT_REGISTER_VARIANT(spamm, cublas, sparsejit::variants::spamm::Cublas)
