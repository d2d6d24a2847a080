// SpGEMM executor: C = A·B, both sparse, C a new DeviceCsr. What each variant launches and
// allocates is its definition's (runtime/variants/spgemm/); this file finds the planned
// variant in the registry and drives it.
// Per call: A's and B's fingerprints (cached on their handles), the pair's features (cached on
// A's handle per B pattern), the plan (cached on A's handle per B pattern, value type, forced
// choice and runtime; prepared once: kernels loaded), then the variant's run, which allocates
// C; C's handle records the pair of patterns it is the product of, so that spgemm_numeric
// (the numeric phase alone, for new values) can check it is given a C of A·B's pattern. A pair
// without products gives an empty C without running anything. SpGEMM has no measured
// selection yet: Options::reuse and measure do not apply.
#include <type_traits>

#include "ops/call_common.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit {

namespace {

// A plan ready to run: the decision and the chosen variant's execution (none when the pair
// has no products: nothing runs).
template <class T>
struct PreparedSpgemm {
  std::shared_ptr<const Decision> decision;
  std::unique_ptr<variants::SpgemmExecution<T>> execution;
};

std::string dims(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

void check_spgemm_call(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols, const Options& options) {
  if (a_cols != b_rows)
    throw InvalidInputError("spgemm: A is " + dims(a_rows, a_cols) + " but B has " + std::to_string(b_rows) + " rows (A·B needs " +
                            std::to_string(a_cols) + "; B is " + dims(b_rows, b_cols) + ")");
  if (options.transpose_a) throw UnsupportedError("spgemm: Options::transpose_a (Aᵀ·B) is not supported; C = A·B only");
}

template <class T>
uint64_t cached_fingerprint(const DeviceCsr<T>& m) {
  return *m.template get_or_create<uint64_t>("fingerprint", [&] { return std::make_shared<uint64_t>(fingerprint(m.host_pattern())); });
}

template <class T>
std::shared_ptr<PreparedSpgemm<T>> prepare_spgemm(detail::RuntimeState& rt, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                                  const SpgemmFeatures& f, const plan::SpgemmProblem& problem,
                                                  const Options& options) {
  auto prepared = std::make_shared<PreparedSpgemm<T>>();
  Decision d = plan::plan_spgemm(f, problem, rt.target, ops::with_environment_force(Op::SpGEMM, options),
                                 ops::plan_sources(Op::SpGEMM, rt.target));
  if constexpr (ops::kFloatOrDouble<T>) {  // the planner offers no variant for other value types
    if (f.products > 0)
      prepared->execution = variants::SpgemmRegistry::find(d.variant)->prepare(variants::SpgemmPreparation<T>{rt, a, b, f, problem, d});
  }
  prepared->decision = std::make_shared<const Decision>(std::move(d));
  return prepared;
}

// The vendor's SpGEMM can fail for want of memory of its own where our kernels still run
// (ALG1's work estimation on power-law products: CUSPARSE_STATUS_INSUFFICIENT_RESOURCES). An
// automatic choice of it then falls back to the cheapest-predicted eligible variant of ours,
// which replaces the plan on A's handle; the Decision's vendor candidate says why. A forced
// choice, or a failure of our own, is the caller's error.
template <class T>
variants::SpgemmOutput run_or_fall_back(detail::RuntimeState& rt, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                        const SpgemmFeatures& f, const plan::SpgemmProblem& problem, const std::string& key,
                                        std::shared_ptr<PreparedSpgemm<T>>& prepared, const variants::SpgemmOperands<T>& operands) {
  try {
    return prepared->execution->run(rt, operands);
  } catch (const CudaError& e) {
    if constexpr (!ops::kFloatOrDouble<T>) throw;  // no variant runs other value types
    const Decision& failed = *prepared->decision;
    if (failed.source == DecisionSource::Forced || !variants::SpgemmRegistry::find(failed.variant)->traits.vendor) throw;
    const Candidate* ours = nullptr;
    for (const Candidate& c : failed.candidates)
      if (c.variant != failed.variant && c.rejected_because.empty() && (ours == nullptr || c.predicted_ms < ours->predicted_ms)) ours = &c;
    if (ours == nullptr) throw;
    Decision d = failed;
    d.variant = ours->variant;
    d.params = ours->params;
    for (Candidate& c : d.candidates)
      if (c.variant == failed.variant) c.rejected_because = std::string("failed when run: ") + e.what();
    auto replacement = std::make_shared<PreparedSpgemm<T>>();
    if constexpr (ops::kFloatOrDouble<T>)
      replacement->execution = variants::SpgemmRegistry::find(d.variant)->prepare(variants::SpgemmPreparation<T>{rt, a, b, f, problem, d});
    replacement->decision = std::make_shared<const Decision>(std::move(d));
    a.attach(key, replacement);
    prepared = std::move(replacement);
    return prepared->execution->run(rt, operands);
  }
}

// An m×n product without entries, complete when returned.
template <class T>
DeviceCsr<T> empty_product(const Context& context, int32_t m, int32_t n) {
  Csr<T> c;
  c.rows = m;
  c.cols = n;
  c.row_ptr.assign(std::size_t(m) + 1, 0);
  return DeviceCsr<T>(context, c);
}


// The key on C's handle naming the pair of patterns it is the product of (spgemm_numeric
// checks it).
constexpr const char* kProductOf = "spgemm_product_of";

// One pair's plan, from the caches on A's handle (features and plan per B pattern).
template <class T>
struct PairPlan {
  std::string product_tag;  // A's and B's patterns (fingerprints and shapes)
  std::string key;          // the plan's key on A's handle
  std::shared_ptr<SpgemmFeatures> features;
  std::shared_ptr<PreparedSpgemm<T>> prepared;
  bool reused = true;
};

template <class T>
PairPlan<T> pair_plan(detail::RuntimeState& rt, const DeviceCsr<T>& a, const DeviceCsr<T>& b, const Options& options) {
  const plan::SpgemmProblem problem{dtype_of<T>::value, a.rows(), a.cols(), b.cols()};
  PairPlan<T> p;
  // B's pattern, for the caches on A's handle: its fingerprint covers its shape and every index.
  const std::string b_tag = ":b=" + fingerprint_hex(cached_fingerprint(b)) + ":" + dims(b.rows(), b.cols());
  p.product_tag = "a=" + fingerprint_hex(cached_fingerprint(a)) + ":" + dims(a.rows(), a.cols()) + b_tag;
  p.features = a.template get_or_create<SpgemmFeatures>(
      "spgemm_features" + b_tag, [&] { return std::make_shared<SpgemmFeatures>(spgemm_features(a.host_pattern(), b.host_pattern())); });
  p.key = ops::plan_key(Op::SpGEMM, problem.dtype, 0, false, options, rt.id) + b_tag;
  p.prepared = a.template get_or_create<PreparedSpgemm<T>>(p.key, [&] {
    p.reused = false;
    return prepare_spgemm<T>(rt, a, b, *p.features, problem, options);
  });
  return p;
}

template <class T>
void check_value_type(const char* call) {
  if constexpr (!ops::kFloatOrDouble<T>)
    throw UnsupportedError(std::string(call) + ": value type " + to_string(dtype_of<T>::value) + " not supported (f32 and f64)");
}

}  // namespace

template <class T>
DeviceCsr<T> Runtime::spgemm(const DeviceCsr<T>& a, const DeviceCsr<T>& b, const Options& options, CallInfo* info) {
  check_spgemm_call(a.rows(), a.cols(), b.rows(), b.cols(), options);
  check_value_type<T>("spgemm");
  detail::RuntimeState& rt = *state_;
  PairPlan<T> p = pair_plan(rt, a, b, options);
  if (!p.prepared->execution) {
    if (info != nullptr) *info = CallInfo{p.prepared->decision, p.reused};
    DeviceCsr<T> empty = empty_product<T>(rt.context, a.rows(), b.cols());
    empty.attach(kProductOf, std::make_shared<std::string>(p.product_tag));
    return empty;
  }
  const plan::SpgemmProblem problem{dtype_of<T>::value, a.rows(), a.cols(), b.cols()};
  const CUstream stream = static_cast<CUstream>(options.stream);
  const variants::SpgemmOperands<T> operands{a, b, stream, ops::launches_early(options, rt.target.sm)};
  variants::SpgemmOutput c = run_or_fall_back(rt, a, b, *p.features, problem, p.key, p.prepared, operands);
  if (info != nullptr) *info = CallInfo{p.prepared->decision, p.reused};  // after a fallback: the plan that ran
  Event ready(rt.context);
  ready.record(stream);
  DeviceCsr<T> product(rt.context, a.rows(), b.cols(), c.nnz, std::move(c.row_ptr), std::move(c.col_idx), std::move(c.values),
                       std::move(ready));
  product.attach(kProductOf, std::make_shared<std::string>(p.product_tag));
  return product;
}

template <class T>
CallInfo Runtime::spgemm_numeric(const DeviceCsr<T>& a, const DeviceCsr<T>& b, DeviceCsr<T>& c, const Options& options) {
  check_spgemm_call(a.rows(), a.cols(), b.rows(), b.cols(), options);
  check_value_type<T>("spgemm_numeric");
  if (c.rows() != a.rows() || c.cols() != b.cols())
    throw InvalidInputError("spgemm_numeric: C is " + dims(c.rows(), c.cols()) + " but A·B is " + dims(a.rows(), b.cols()));
  detail::RuntimeState& rt = *state_;
  PairPlan<T> p = pair_plan(rt, a, b, options);
  const auto made_from = std::static_pointer_cast<const std::string>(c.find(kProductOf));
  if (!made_from || *made_from != p.product_tag)
    throw InvalidInputError(std::string("spgemm_numeric: C ") + (made_from ? "was made by spgemm from other patterns than A's and B's"
                                                                           : "was not made by spgemm") +
                            " (its pattern must be A·B's: call spgemm(A, B) once, then spgemm_numeric for new values)");
  const CallInfo info{p.prepared->decision, p.reused};
  if (!p.prepared->execution) return info;  // no products: C has no entries to compute
  const CUstream stream = static_cast<CUstream>(options.stream);
  const variants::SpgemmOperands<T> operands{a, b, stream, ops::launches_early(options, rt.target.sm)};
  p.prepared->execution->recompute(rt, operands, {c.row_ptr().ptr(), c.col_idx().ptr(), c.values().ptr(), c.nnz()});
  ++c.values_version_;
  return info;
}

Decision explain_spgemm(PatternView a, PatternView b, DType dtype, const Options& options, int device) {
  check_spgemm_call(a.rows, a.cols, b.rows, b.cols, options);
  const SpgemmFeatures features = spgemm_features(a, b);
  const plan::DeviceTarget target = detail::explain_target(device);
  const plan::SpgemmProblem problem{dtype, a.rows, a.cols, b.cols};
  Decision d = plan::plan_spgemm(features, problem, target, ops::with_environment_force(Op::SpGEMM, options),
                                 ops::plan_sources(Op::SpGEMM, target));
  if (features.products == 0) return d;  // nothing would run
  for (const jit::KernelSpec& spec : variants::SpgemmRegistry::find(d.variant)->kernel_specs(d, problem)) {
    const jit::CompiledKernel compiled = ops::compile_only(spec, target.sm);
    const KernelOrigin origin = ops::to_origin(compiled.source);
    if (int(origin) > int(d.kernel_origin)) d.kernel_origin = origin;  // the slowest way any kernel came
    d.compile_ms += compiled.compile_ms;
    d.load_ms += compiled.load_ms;
  }
  return d;
}

#define SPARSEJIT_INSTANTIATE(T)                                                                            \
  template DeviceCsr<T> Runtime::spgemm<T>(const DeviceCsr<T>&, const DeviceCsr<T>&, const Options&, CallInfo*); \
  template CallInfo Runtime::spgemm_numeric<T>(const DeviceCsr<T>&, const DeviceCsr<T>&, DeviceCsr<T>&, const Options&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
