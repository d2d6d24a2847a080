// cusparse: the vendor's SpMM (CSR_ALG3 for A·B, the fastest for A·B on most shapes of the
// H200 benchmark; CSR_ALG2 for Aᵀ·B, which ALG3 does not compute; `alg` forces 1, 2 or 3).
// cuSPARSE binds A's values, B and C when a call is prepared, so a prepared call is kept per
// operand set (vendor/kept_calls.hpp).
#include <memory>
#include <mutex>
#include <tuple>

#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_common.hpp"
#include "vendor/cusparse_spmm.hpp"
#include "vendor/kept_calls.hpp"

namespace sparsejit::variants::spmm {

namespace {

int vendor_algorithm(const plan::SpmmProblem& p) { return p.transpose_a ? 2 : 3; }

template <class T>
class VendorExecution final : public SpmmExecution<T> {
 public:
  VendorExecution(vendor::SpmmAlgorithm alg, bool transpose) : alg_(alg), transpose_(transpose) {}
  void run(detail::RuntimeState& rt, const SpmmOperands<T>& o) override {
    std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
    // A's values too: the matrix's values may be replaced by other memory (use_values).
    const OperandKey key{o.a.values().ptr(), o.b.data(), o.b.ld(), o.c.data(), o.c.ld(), o.b.cols()};
    calls_
        .get(key, [&] { return std::make_unique<vendor::CusparseSpmm<T>>(rt.cusparse, o.a, transpose_, o.b, o.c, alg_, o.stream); })
        .run(o.stream);
  }

 private:
  using OperandKey = std::tuple<CUdeviceptr, const void*, int64_t, const void*, int64_t, int32_t>;
  vendor::SpmmAlgorithm alg_;
  bool transpose_;
  vendor::KeptCalls<OperandKey, vendor::CusparseSpmm<T>> calls_;  // under rt.cusparse_mutex
};

}  // namespace

class Cusparse final : public SpmmVariantOf<Cusparse> {
 public:
  Cusparse() : SpmmVariantOf("cusparse", 70, "cuSPARSE SpMM (CSR_ALG3 for A·B, CSR_ALG2 for Aᵀ·B)", Traits{}.as_vendor()) {}

  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>&) const override {
    return {{"alg", vendor_algorithm(in.problem)}};
  }

  void check(const plan::SpmmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    require_one_of(name, params, "alg", {1, 2, 3});
    if (problem.transpose_a && params.at("alg").get<int>() == 3)
      throw InvalidInputError("cusparse: alg = 3 (CSR_ALG3) computes A·B only, not Aᵀ·B");
  }

  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json&) const override {
    return base_terms(in);
  }

  // Its other algorithms.
  std::vector<nlohmann::json> neighbour_changes(const plan::SpmmProblem&, const nlohmann::json&) const override {
    return {{{"alg", 1}}, {{"alg", 2}}, {{"alg", 3}}};
  }

  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    return {{{"alg", vendor_algorithm(in.problem)}}};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    const auto alg = vendor::SpmmAlgorithm(p.decision.params.at("alg").template get<int>() - 1);
    return std::make_unique<VendorExecution<T>>(alg, p.problem.transpose_a);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, cusparse, sparsejit::variants::spmm::Cusparse)
