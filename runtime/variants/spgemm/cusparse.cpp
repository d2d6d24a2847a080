// cusparse: the vendor's generic SpGEMM, its documented whole call (work estimation, compute,
// C allocated, copy; vendor/cusparse_spgemm.hpp) with CUSPARSE_SPGEMM_ALG1: a candidate and
// the baseline. Its size query synchronizes, and so does the release of its buffers.
#include <mutex>

#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/spgemm/spgemm_variant.hpp"
#include "vendor/cusparse_spgemm.hpp"

namespace sparsejit::variants::spgemm {

namespace {

template <class T>
class VendorExecution final : public SpgemmExecution<T> {
 public:
  SpgemmOutput run(detail::RuntimeState& rt, const SpgemmOperands<T>& o) const override {
    std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
    vendor::CusparseSpgemmResult r = vendor::cusparse_spgemm(
        rt.cusparse, o.a, o.b, vendor::SpgemmAlgorithm::Alg1, o.stream,
        [&](std::size_t bytes) { return new_output_array(rt.context, nullptr, bytes, o.stream); });
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
    const SpgemmOutput fresh = run(rt, o);
    if (fresh.nnz != c.nnz)
      throw InvalidInputError("spgemm_numeric: C has " + std::to_string(c.nnz) + " entries but A·B has " + std::to_string(fresh.nnz));
    SPARSEJIT_CU(cuMemcpyDtoDAsync_v2, c.values, fresh.values.ptr(), std::size_t(c.nnz) * sizeof(T), o.stream);
    SPARSEJIT_CU(cuStreamSynchronize, o.stream);  // before fresh's arrays are freed
  }
};

}  // namespace

class Cusparse final : public SpgemmVariantOf<Cusparse> {
 public:
  Cusparse()
      : SpgemmVariantOf("cusparse", 90, "cuSPARSE generic SpGEMM (ALG1: work estimation, compute, copy; allocates its buffers)",
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

  nlohmann::json defaults(const SpgemmPlanInputs&, std::vector<DecisionStep>&) const override { return {{"alg", 1}}; }

  void check(const plan::SpgemmProblem&, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    const int alg = params.at("alg").get<int>();
    if (alg != 1) throw InvalidInputError("cusparse: alg = " + std::to_string(alg) + " is not wrapped (only 1, CUSPARSE_SPGEMM_ALG1)");
  }

  // A fixed cost (its allocations and synchronizations: 0.3 ms on the smallest inputs of the
  // H200 record in ANCHORS.md), rows and products.
  nlohmann::json cost_terms(const SpgemmPlanInputs& in, const nlohmann::json&) const override {
    return {{"launch", 1.0}, {"rows", double(in.problem.m)}, {"products", double(in.features.products)}};
  }

  std::vector<nlohmann::json> search_space(const SpgemmPlanInputs&) const override { return {{{"alg", 1}}}; }

  template <class T>
  std::unique_ptr<SpgemmExecution<T>> make(const SpgemmPreparation<T>&) const {
    return std::make_unique<VendorExecution<T>>();
  }
};

}  // namespace sparsejit::variants::spgemm

SPARSEJIT_REGISTER_VARIANT(spgemm, cusparse, sparsejit::variants::spgemm::Cusparse)
