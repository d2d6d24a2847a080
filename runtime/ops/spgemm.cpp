// SpGEMM executor: C = A·B, both sparse, C a new DeviceCsr. What each variant launches and
// allocates is its definition's (runtime/variants/spgemm/); this file finds the planned
// variant in the registry and drives it.
// Per call: A's and B's fingerprints (cached on their handles), the pair's features (cached on
// A's handle per B pattern), the plan (cached on A's handle per B pattern, value type, forced
// choice and runtime; prepared once: kernels loaded), then the variant's run, which allocates
// C; C's handle records the pair of patterns it is the product of, so that spgemm_numeric
// (the numeric phase alone, for new values) can check it is given a C of A·B's pattern; that
// phase runs by positions kept on C (ops/spgemm_reuse.hpp) where they fit, else the plan's
// variant again. A pair
// without products gives an empty C without running anything. The planner is given the
// device memory free when the pair is planned (available_bytes) besides
// Options::memory_limit_bytes. SpGEMM has no measured
// selection yet: Options::reuse and measure do not apply.
#include <mutex>
#include <type_traits>
#include <utility>

#include "ops/call_common.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "ops/spgemm_reuse.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "variants/spgemm/spgemm_variant.hpp"
#include "vendor/cusparse_transpose.hpp"

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

// The operands as multiplied (transposed where the options say) must chain.
void check_spgemm_call(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols, const Options& options) {
  const char* a_name = options.transpose_a ? "Aᵀ" : "A";
  const char* b_name = options.transpose_b ? "Bᵀ" : "B";
  if (options.transpose_a) std::swap(a_rows, a_cols);
  if (options.transpose_b) std::swap(b_rows, b_cols);
  if (a_cols != b_rows)
    throw InvalidInputError(std::string("spgemm: ") + a_name + " is " + dims(a_rows, a_cols) + " but " + b_name + " has " +
                            std::to_string(b_rows) + " rows (" + a_name + "·" + b_name + " needs " + std::to_string(a_cols) + "; " +
                            b_name + " is " + dims(b_rows, b_cols) + ")");
}

template <class T>
uint64_t cached_fingerprint(const DeviceCsr<T>& m) {
  return *m.template get_or_create<uint64_t>("fingerprint", [&] { return std::make_shared<uint64_t>(fingerprint(m.host_pattern())); });
}

// The device memory a call can take: what the device has free, and what the runtime's pools
// hold unused (an allocation from them takes it, and they give it back to the device when the
// device runs short).
int64_t available_bytes(detail::RuntimeState& rt) {
  return int64_t(rt.context.free_bytes() + rt.scratch_pool().idle_bytes() + cuda::result_pool(rt.context).idle_bytes());
}

template <class T>
std::shared_ptr<PreparedSpgemm<T>> prepare_spgemm(detail::RuntimeState& rt, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                                  const SpgemmFeatures& f, const plan::SpgemmProblem& problem,
                                                  const Options& options) {
  auto prepared = std::make_shared<PreparedSpgemm<T>>();
  plan::DeviceTarget target = rt.target;
  target.free_bytes = available_bytes(rt);
  Decision d = plan::plan_spgemm(f, problem, target, ops::with_environment_force(Op::SpGEMM, options),
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


// A transposed operand (Options::transpose_a/_b), kept on the operand's handle: Aᵀ as a device
// CSR of its own (so its features and plans are cached on it like any operand's), converted by
// cuSPARSE on first use and its values converted again when the operand's values change.
template <class T>
struct Transposed {
  std::mutex mutex;
  uint64_t values_version = 0;
  std::shared_ptr<DeviceCsr<T>> handle;
};

template <class T>
const DeviceCsr<T>& as_multiplied(detail::RuntimeState& rt, const DeviceCsr<T>& m, bool transposed, CUstream stream) {
  if constexpr (!ops::kFloatOrDouble<T>) return m;  // refused before: no transpose for other value types
  if (!transposed) return m;
  const auto t = m.template get_or_create<Transposed<T>>("spgemm_transposed", [&] {
    auto made = std::make_shared<Transposed<T>>();
    std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
    vendor::TransposedArrays arrays = vendor::transpose_csr(rt.cusparse, m, stream);
    Event ready(rt.context);
    ready.record(stream);
    made->values_version = m.values_version();
    made->handle = rt.adopt_csr<T>(m.cols(), m.rows(), m.nnz(), std::move(arrays.row_ptr), std::move(arrays.col_idx),
                                   std::move(arrays.values), std::move(ready));
    return made;
  });
  std::lock_guard<std::mutex> lock(t->mutex);
  if (t->values_version != m.values_version()) {  // the same pattern, new values
    std::lock_guard<std::mutex> vendor_lock(rt.cusparse_mutex);
    const vendor::TransposedArrays fresh = vendor::transpose_csr(rt.cusparse, m, stream);
    SPARSEJIT_CU(cuMemcpyDtoDAsync_v2, t->handle->values().ptr(), fresh.values.ptr(), std::size_t(m.nnz()) * sizeof(T), stream);
    SPARSEJIT_CU(cuStreamSynchronize, stream);  // before fresh's arrays are freed
    t->values_version = m.values_version();
  }
  return *t->handle;
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
  if (options.memory_limit_bytes) p.key += ":memory<=" + std::to_string(*options.memory_limit_bytes);
  // The plan is made once per pair, key and runtime, for the memory free then: a later call
  // reuses it (C's size is the pattern's, so a plan that fitted fits while the device has as
  // much free).
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
DeviceCsr<T> Runtime::spgemm(const DeviceCsr<T>& a_given, const DeviceCsr<T>& b_given, const Options& options, CallInfo* info) {
  check_spgemm_call(a_given.rows(), a_given.cols(), b_given.rows(), b_given.cols(), options);
  check_value_type<T>("spgemm");
  detail::RuntimeState& rt = *state_;
  const CUstream stream = static_cast<CUstream>(options.stream);
  const DeviceCsr<T>& a = as_multiplied(rt, a_given, options.transpose_a, stream);
  const DeviceCsr<T>& b = as_multiplied(rt, b_given, options.transpose_b, stream);
  PairPlan<T> p = pair_plan(rt, a, b, options);
  if (!p.prepared->execution) {
    if (info != nullptr) *info = CallInfo{p.prepared->decision, p.reused};
    DeviceCsr<T> empty = empty_product<T>(rt.context, a.rows(), b.cols());
    empty.attach(kProductOf, std::make_shared<std::string>(p.product_tag));
    return empty;
  }
  const plan::SpgemmProblem problem{dtype_of<T>::value, a.rows(), a.cols(), b.cols()};
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
NumericCallInfo Runtime::spgemm_numeric(const DeviceCsr<T>& a_given, const DeviceCsr<T>& b_given, DeviceCsr<T>& c, const Options& options) {
  check_spgemm_call(a_given.rows(), a_given.cols(), b_given.rows(), b_given.cols(), options);
  check_value_type<T>("spgemm_numeric");
  const int32_t m = options.transpose_a ? a_given.cols() : a_given.rows();
  const int32_t n = options.transpose_b ? b_given.rows() : b_given.cols();
  if (c.rows() != m || c.cols() != n)
    throw InvalidInputError("spgemm_numeric: C is " + dims(c.rows(), c.cols()) + " but the product is " + dims(m, n));
  detail::RuntimeState& rt = *state_;
  const CUstream stream = static_cast<CUstream>(options.stream);
  const DeviceCsr<T>& a = as_multiplied(rt, a_given, options.transpose_a, stream);
  const DeviceCsr<T>& b = as_multiplied(rt, b_given, options.transpose_b, stream);
  PairPlan<T> p = pair_plan(rt, a, b, options);
  const auto made_from = std::static_pointer_cast<const std::string>(c.find(kProductOf));
  if (!made_from || *made_from != p.product_tag)
    throw InvalidInputError(std::string("spgemm_numeric: C ") + (made_from ? "was made by spgemm from other patterns than A's and B's"
                                                                           : "was not made by spgemm") +
                            " (its pattern must be A·B's: call spgemm(A, B) once, then spgemm_numeric for new values)");
  NumericCallInfo info{{p.prepared->decision, p.reused}, {}};
  if (!p.prepared->execution) return info;  // no products: C has no entries to compute
  const variants::SpgemmOperands<T> operands{a, b, stream, ops::launches_early(options, rt.target.sm)};
  c.order_after_producer(stream);  // spgemm may have written C on another stream
  if constexpr (ops::kFloatOrDouble<T>) {
    if (!ops::recompute_by_positions(rt, operands, c, *p.features, options, info.numeric, info.launched_as_graph))
      p.prepared->execution->recompute(rt, operands, {c.row_ptr().ptr(), c.col_idx().ptr(), c.values().ptr(), c.nnz()});
  }
  ++c.values_version_;
  return info;
}

Decision explain_spgemm(PatternView a, PatternView b, DType dtype, const Options& options, int device) {
  if (options.transpose_a || options.transpose_b)
    throw UnsupportedError("explain_spgemm: transposed operands are planned as their transposes: pass transpose(A) or "
                           "transpose(B) (matrix.hpp) with the flags off");
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
  template NumericCallInfo Runtime::spgemm_numeric<T>(const DeviceCsr<T>&, const DeviceCsr<T>&, DeviceCsr<T>&, const Options&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
