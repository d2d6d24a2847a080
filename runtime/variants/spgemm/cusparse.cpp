// cusparse: the vendor's generic SpGEMM, its documented whole call (work estimation, compute,
// C allocated, copy; vendor/cusparse_spgemm.hpp): a candidate and the baseline. alg 0 (the
// default) runs CUSPARSE_SPGEMM_ALG1 when its buffers fit the device memory the call may take,
// else ALG2, else ALG3 in chunks, as cuSPARSE documents for products ALG1 cannot allocate; 1 to
// 3 run that algorithm alone. Its size queries synchronize, and so does the release of its
// buffers.
#include <mutex>
#include <optional>
#include <vector>

#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/spgemm/spgemm_variant.hpp"
#include "vendor/cusparse_spgemm.hpp"

namespace sparsejit::variants::spgemm {

namespace {

// The algorithms alg names, in the order they are tried.
std::vector<vendor::SpgemmAlgorithm> algorithms_of(int alg) {
  using vendor::SpgemmAlgorithm;
  switch (alg) {
    case 1: return {SpgemmAlgorithm::Alg1};
    case 2: return {SpgemmAlgorithm::Alg2};
    case 3: return {SpgemmAlgorithm::Alg3};
    default: return {SpgemmAlgorithm::Alg1, SpgemmAlgorithm::Alg2, SpgemmAlgorithm::Alg3};
  }
}

template <class T>
class VendorExecution final : public SpgemmExecution<T> {
 public:
  // limit: Options::memory_limit_bytes (none: the device's free memory alone).
  VendorExecution(int alg, std::optional<int64_t> limit) : algorithms_(algorithms_of(alg)), limit_(limit) {}

  SpgemmOutput run(detail::RuntimeState& rt, const SpgemmOperands<T>& o) const override {
    std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
    // cuSPARSE's buffers come from cuMemAlloc, which cannot take what the runtime's pools hold
    // unused: when the device's free memory is short, that reserve goes back to the device first.
    const auto fits = [&](std::size_t held, std::size_t more) {
      if (limit_ && int64_t(held + more) > *limit_) return false;
      if (more <= rt.context.free_bytes()) return true;
      rt.scratch_pool().release_idle();
      cuda::result_pool(rt.context).release_idle();
      return more <= rt.context.free_bytes();
    };
    vendor::CusparseSpgemmResult r = vendor::cusparse_spgemm(
        rt.cusparse, o.a, o.b, algorithms_, o.stream,
        [&](std::size_t bytes) { return new_output_array(rt.context, nullptr, bytes, o.stream); }, fits);
    SpgemmOutput c;
    c.row_ptr = std::move(r.row_ptr);
    c.col_idx = std::move(r.col_idx);
    c.values = std::move(r.values);
    c.nnz = r.nnz;
    return c;
  }

  // The whole call again, its values copied into c (the same pattern, so the same order): what
  // a caller of the one-call API would pay; cusparseSpGEMMreuse is the bench's baseline.
  void recompute(detail::RuntimeState& rt, const SpgemmOperands<T>& o, const SpgemmTarget& c) const override {
    recompute_by_running(*this, rt, o, c);
  }

 private:
  std::vector<vendor::SpgemmAlgorithm> algorithms_;
  std::optional<int64_t> limit_;
};

}  // namespace

class Cusparse final : public SpgemmVariantOf<Cusparse> {
 public:
  Cusparse()
      : SpgemmVariantOf("cusparse", 90,
                        "cuSPARSE generic SpGEMM (ALG1, or ALG2/ALG3 when ALG1's buffers do not fit: work estimation, "
                        "compute, copy; allocates its buffers)",
                        Traits{}.as_vendor()) {}

  // Its CSR inputs are taken as sorted with unique columns per row (as cuSPARSE's CSR is
  // defined); unsorted operands are left to our kernels, which take any order.
  std::string rejected(const SpgemmPlanInputs& in) const override {
    std::string reason = SpgemmVariant::rejected(in);
    if (!reason.empty()) return reason;
    if (!in.features.a_sorted || !in.features.b_sorted)
      return std::string("cuSPARSE takes rows with sorted, unique columns; ") + (in.features.a_sorted ? "B" : "A") + "'s are not";
    return "";
  }

  // alg: 0, the first of ALG1, ALG2, ALG3 whose buffers fit when run; 1 to 3: that one.
  nlohmann::json defaults(const SpgemmPlanInputs&, std::vector<DecisionStep>&) const override { return {{"alg", 0}}; }

  void check(const plan::SpgemmProblem&, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    const int alg = params.at("alg").get<int>();
    if (alg < 0 || alg > 3)
      throw InvalidInputError("cusparse: alg = " + std::to_string(alg) +
                              " must be 0 (the first of ALG1, ALG2, ALG3 that fits) or 1 to 3 (CUSPARSE_SPGEMM_ALG<n>)");
  }

  // cuSPARSE sizes its buffers by its own queries on the device, so the plan knows only C's
  // arrays (workspace 0: a lower bound); the algorithm is chosen when run, against the device's
  // free memory then (the buffers come from cuMemAlloc).
  int64_t workspace_bytes(const SpgemmPlanInputs&, const nlohmann::json&) const override { return 0; }

  // A fixed cost (its allocations and synchronizations: 0.3 ms on the smallest inputs of the
  // H200 record in ANCHORS.md), rows and products.
  nlohmann::json cost_terms(const SpgemmPlanInputs& in, const nlohmann::json&) const override {
    return {{"launch", 1.0}, {"rows", double(in.problem.m)}, {"products", double(in.features.products)}};
  }

  std::vector<nlohmann::json> search_space(const SpgemmPlanInputs&) const override { return {{{"alg", 0}}}; }

  template <class T>
  std::unique_ptr<SpgemmExecution<T>> make(const SpgemmPreparation<T>& p) const {
    const nlohmann::json& limit = p.decision.features.at("memory").at("limit_bytes");
    return std::make_unique<VendorExecution<T>>(p.decision.params.at("alg").template get<int>(),
                                                limit.is_null() ? std::nullopt : std::optional<int64_t>(limit.get<int64_t>()));
  }
};

}  // namespace sparsejit::variants::spgemm

SPARSEJIT_REGISTER_VARIANT(spgemm, cusparse, sparsejit::variants::spgemm::Cusparse)
