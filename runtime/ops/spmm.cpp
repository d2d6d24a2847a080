// SpMM executor: plan -> prepare -> compile -> launch for C = A·B and C = Aᵀ·B. What each
// variant launches and prepares is its definition's (runtime/variants/spmm/); this file finds
// the planned variant in the registry and drives it.
// Preparation (once per handle, K, value type, transpose, vector alignment and forced choice):
// plan with the sources of this device (ops/plan_sources.hpp), then the variant's prepare:
// kernels loaded, formats built and uploaded (cached on the handle). A call after that does one
// plan-cache lookup and the variant's launches.
// Measured selection (Options::reuse, Options::measure): on a reused pattern the call times
// the planner's shortlist once (each entry prepared as a forced choice, run on the runtime's
// measure stream), replaces the handle's plan with the fastest and remembers the times per
// pattern fingerprint, so other handles of the pattern take the fastest without timing.
#include <atomic>

#include "ops/kernel_loader.hpp"
#include "ops/call_common.hpp"
#include "ops/measured_selection.hpp"
#include "ops/plan_sources.hpp"
#include "ops/problem_keys.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit {

namespace {

// A plan ready to launch: the decision and the chosen variant's execution.
template <class T>
struct PreparedSpmm {
  std::shared_ptr<const Decision> decision;
  std::unique_ptr<variants::SpmmExecution<T>> execution;
  // Measured selection has run for this plan's pattern and problem, or will not (forced, or
  // taken from earlier times): set once, by the call that decides.
  std::atomic<bool> settled{false};
  // The execution's launches as a graph (Options::replay_launches), built by the first call.
  cuda::LaunchGraph graph;
};

void check_spmm_shapes(int32_t a_rows, int32_t a_cols, bool transpose, int32_t b_rows, int32_t b_cols,
                       int32_t c_rows, int32_t c_cols) {
  const int32_t inner = transpose ? a_rows : a_cols;
  const int32_t outer = transpose ? a_cols : a_rows;
  if (b_rows == inner && c_rows == outer && c_cols == b_cols) return;  // the messages are built on failure only
  const std::string op = transpose ? "Aᵀ·B" : "A·B";
  const std::string a_shape = std::to_string(a_rows) + "x" + std::to_string(a_cols);
  if (b_rows != inner)
    throw InvalidInputError("spmm: A is " + a_shape + " but B has " + std::to_string(b_rows) + " rows (" + op + " needs " + std::to_string(inner) + ")");
  throw InvalidInputError("spmm: C is " + std::to_string(c_rows) + "x" + std::to_string(c_cols) + " but " + op + " is " +
                          std::to_string(outer) + "x" + std::to_string(b_cols));
}

// The largest of 4, 2, 1 dividing both leading dimensions: all the planner's vector choice
// depends on besides K, so plans are shared between operands that agree on it.
int64_t ld_alignment(int64_t ldb, int64_t ldc) {
  for (int64_t w : {4, 2})
    if (ldb % w == 0 && ldc % w == 0) return w;
  return 1;
}

// Split statistics for the planner, measured once per (W, T) and cached on the handle.
template <class T>
plan::SplitStatsSource cached_split_stats(const DeviceCsr<T>& a) {
  return [&a](int32_t w, int32_t t) {
    return *a.template get_or_create<SplitStats>("rs_stats:" + std::to_string(w) + ":" + std::to_string(t), [&] {
      return std::make_shared<SplitStats>(row_segment_split(a.host_pattern(), w, t));
    });
  };
}

// The plan for `options`; with `earlier` (times of this pattern's shortlist, this runtime's or
// recorded) the fastest of them instead of the model's choice, unless the choice was forced.
template <class T>
std::shared_ptr<PreparedSpmm<T>> prepare_spmm(detail::RuntimeState& rt, const DeviceCsr<T>& a, const Features& f,
                                              const plan::SpmmProblem& problem, const Options& options,
                                              const std::optional<ops::EarlierTimes>& earlier = std::nullopt) {
  auto prepared = std::make_shared<PreparedSpmm<T>>();
  Decision d = plan::plan_spmm(f, problem, rt.target, ops::with_environment_force(Op::SpMM, options), cached_split_stats(a),
                               ops::plan_sources(Op::SpMM, rt.target));
  const bool took_times = ops::take_earlier(d, earlier, plan::kSpmmVendorMargin);
  if (d.source == DecisionSource::Forced || took_times) prepared->settled = true;
  if constexpr (ops::kFloatOrDouble<T>) {  // the planner offers no variant for other value types
    const variants::SpmmVariant* variant = variants::SpmmRegistry::find(d.variant);
    prepared->execution = variant->prepare(variants::SpmmPreparation<T>{rt, a, f, problem, d});
  }
  prepared->decision = std::make_shared<const Decision>(std::move(d));
  return prepared;
}

// replay: Options::replay_launches (ops::launch_plan). Returns whether the graph was launched.
template <class T>
bool run_prepared(detail::RuntimeState& rt, PreparedSpmm<T>& p, const DeviceCsr<T>& a, const DeviceDense<T>& b,
                  DeviceDense<T>& c, CUstream stream, bool early, bool replay) {
  if (a.nnz() == 0 && c.rows() > 0) {  // nothing to multiply: C = 0
    c.clear_async(stream);
    return false;
  }
  if (!p.execution) return false;
  const variants::SpmmOperands<T> operands{a, b, c, stream, early};
  return ops::launch_plan(rt.context, p.graph, replay, p.execution->launches_only(), stream,
                          [&] { p.execution->run(rt, operands); });
}

}  // namespace

std::string ops::spmm_problem_key(const plan::SpmmProblem& problem, const Options& options) {
  return problem_key(Op::SpMM, problem.dtype, problem.k, problem.transpose_a, options) + ":ld" +
         std::to_string(ld_alignment(problem.ldb, problem.ldc));
}

template <class T>
CallInfo Runtime::spmm(const DeviceCsr<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, const Options& options) {
  if (options.transpose_b) throw UnsupportedError("spmm: Options::transpose_b applies to spgemm only (B is dense here)");
  check_spmm_shapes(a.rows(), a.cols(), options.transpose_a, b.rows(), b.cols(), c.rows(), c.cols());
  plan::check_measure_options(options);
  detail::RuntimeState& rt = *state_;
  const plan::SpmmProblem problem{b.cols(), dtype_of<T>::value, options.transpose_a, b.ld(), c.ld()};
  const auto features = ops::cached_features(a);
  const std::string problem_key = ops::spmm_problem_key(problem, options);
  const std::string key = ops::handle_key(problem_key, rt.id);
  bool reused = true;
  std::shared_ptr<PreparedSpmm<T>> prepared = a.template get_or_create<PreparedSpmm<T>>(key, [&] {
    reused = false;
    return prepare_spmm<T>(rt, a, *features, problem, options, ops::earlier_times(rt, Op::SpMM, *features, problem_key, options));
  });
  const bool early = ops::launches_early(options, rt.target.sm);
  ops::settle_by_measurement(rt, a, problem_key, key, *features, options, prepared, reused, [&] {
    return ops::SelectionHooks<PreparedSpmm<T>>{
        "spmm",
        plan::kSpmmVendorMargin,
        plan::kSpmmPrepareMsPerNonzero,
        [&](const Options& forced) { return prepare_spmm<T>(rt, a, *features, problem, forced); },
        [&](const std::vector<plan::TimedChoice>& times) {
          return prepare_spmm<T>(rt, a, *features, problem, options, ops::EarlierTimes{times, DecisionSource::Measured});
        },
        [&](PreparedSpmm<T>& p, CUstream stream) { run_prepared(rt, p, a, b, c, stream, early, false); },
        [&](const plan::TimedChoice& t) { return plan::spmm_neighbors(t.variant, t.params, problem, rt.target); },
        [&](const Options& forced) {
          const Decision d = plan::plan_spmm(*features, problem, rt.target, forced, cached_split_stats(a),
                                             ops::plan_sources(Op::SpMM, rt.target));
          return !ops::kernels_cached(variants::SpmmRegistry::find(d.variant)->kernel_specs(d, problem), rt.target.sm);
        }};
  });
  const bool as_graph = run_prepared(rt, *prepared, a, b, c, static_cast<CUstream>(options.stream), early, options.replay_launches);
  return {prepared->decision, reused, as_graph};
}

Decision explain_spmm(PatternView a, int32_t k, DType dtype, const Options& options, int device) {
  if (k < 1) throw InvalidInputError("spmm: k = " + std::to_string(k) + " must be >= 1");
  const plan::DeviceTarget target = detail::explain_target(device);
  const plan::SpmmProblem problem{k, dtype, options.transpose_a, k, k};
  const Features features = inspect(a);
  Decision d = plan::plan_spmm(features, problem, target, ops::with_environment_force(Op::SpMM, options),
                               [&a](int32_t w, int32_t t) { return row_segment_split(a, w, t); },
                               ops::plan_sources(Op::SpMM, target));
  // What a call on this device would run first: a measured selection recorded for the pattern.
  ops::take_earlier(d, ops::recorded_earlier(Op::SpMM, target, features, ops::spmm_problem_key(problem, options), options),
                    plan::kSpmmVendorMargin);
  for (const jit::KernelSpec& spec : variants::SpmmRegistry::find(d.variant)->kernel_specs(d, problem)) {
    const jit::CompiledKernel compiled = ops::compile_only(spec, target.sm);
    d.kernel_origin = ops::to_origin(compiled.source);
    d.compile_ms += compiled.compile_ms;
    d.load_ms += compiled.load_ms;
  }
  return d;
}

#define SPARSEJIT_INSTANTIATE(T) \
  template CallInfo Runtime::spmm<T>(const DeviceCsr<T>&, const DeviceDense<T>&, DeviceDense<T>&, const Options&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
