// SDDMM executor: plan -> prepare -> compile -> launch for P = S ∘ (A·Bᵀ). The decision's
// variant (variants/sddmm/) prepares its execution: kernels, formats on the handle, launch.
// Measured selection (ops/measured_selection.hpp): on a reused pattern the call times the
// planner's shortlist once, replaces the handle's plan with the fastest and remembers the times
// per pattern fingerprint for other handles.
#include <atomic>
#include <memory>
#include <optional>
#include <type_traits>

#include "formats/sddmm_dense_tiles.hpp"
#include "ops/kernel_loader.hpp"
#include "ops/call_common.hpp"
#include "ops/measured_selection.hpp"
#include "ops/plan_sources.hpp"
#include "ops/problem_keys.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "variants/catalog.hpp"
#include "variants/sddmm/sddmm_variant.hpp"

namespace sparsejit {

namespace {

// Handle cache entry present once the handle has served an SDDMM call.
constexpr const char* kPatternSeenKey = "sddmm:pattern_seen";

template <class T>
struct PreparedSddmm {
  std::shared_ptr<const Decision> decision;
  std::unique_ptr<variants::SddmmExecution<T>> execution;
  // Measured selection has run for this plan's pattern and problem, or will not.
  std::atomic<bool> settled{false};
  // The execution's launches as a graph (Options::replay_launches), built by the first call.
  cuda::LaunchGraph graph;
};

template <class T>
void check_sddmm_shapes(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, const DeviceBuffer& p) {
  // Built on failure only: a call's host time is a few microseconds.
  const auto s_shape = [&s] { return std::to_string(s.rows()) + "x" + std::to_string(s.cols()); };
  if (a.rows() != s.rows())
    throw InvalidInputError("sddmm: S is " + s_shape() + " but A has " + std::to_string(a.rows()) + " rows");
  if (b.rows() != s.cols())
    throw InvalidInputError("sddmm: S is " + s_shape() + " but B has " + std::to_string(b.rows()) + " rows (B is n x k)");
  if (a.cols() != b.cols())
    throw InvalidInputError("sddmm: A has " + std::to_string(a.cols()) + " columns but B has " + std::to_string(b.cols()));
  if (a.cols() < 1) throw InvalidInputError("sddmm: k = " + std::to_string(a.cols()) + " must be >= 1");
  const std::size_t need = std::size_t(s.nnz()) * sizeof(T);
  if (p.bytes() < need)
    throw InvalidInputError("sddmm: P has " + std::to_string(p.bytes()) + " bytes, nnz(S) values need " + std::to_string(need));
}

// The plan for `options`; with `earlier` (times of this pattern's shortlist, this runtime's or
// recorded) the fastest of them instead of the model's choice, unless the choice was forced.
template <class T>
std::shared_ptr<PreparedSddmm<T>> prepare_sddmm(detail::RuntimeState& rt, const DeviceCsr<T>& s, const Features& f,
                                                const plan::SddmmProblem& problem, const Options& options,
                                                const std::optional<ops::EarlierTimes>& earlier = std::nullopt) {
  auto prepared = std::make_shared<PreparedSddmm<T>>();
  Decision d = plan::plan_sddmm(f, problem, rt.target, ops::with_environment_force(Op::SDDMM, options),
                                ops::plan_sources(Op::SDDMM, rt.target));
  const bool took_times = ops::take_earlier(d, earlier, plan::kSddmmVendorMargin);
  if (d.source == DecisionSource::Forced || took_times) prepared->settled = true;
  if constexpr (ops::kFloatOrDouble<T>) {
    prepared->execution = variants::sddmm_variant(d.variant).prepare(variants::SddmmPreparation<T>{rt, s, f, problem, d});
  } else {
    // Unreachable: every variant rejects other value types, so the planner has thrown.
    throw UnsupportedError(std::string("sddmm: value type ") + to_string(problem.dtype) + " not supported");
  }
  prepared->decision = std::make_shared<const Decision>(std::move(d));
  return prepared;
}

// replay: Options::replay_launches (ops::launch_plan). Returns whether the graph was launched.
template <class T>
bool run_prepared(detail::RuntimeState& rt, PreparedSddmm<T>& prepared, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                  const DeviceDense<T>& b, DeviceBuffer& p, CUstream stream, bool early, bool replay) {
  const variants::SddmmOperands<T> operands{s, a, b, p, stream, early};
  return ops::launch_plan(rt.context, prepared.graph, replay, prepared.execution->launches_only(), stream,
                          [&] { prepared.execution->run(rt, operands); });
}

}  // namespace

std::string ops::sddmm_problem_key(const plan::SddmmProblem& problem, const Options& options) {
  return problem_key(Op::SDDMM, problem.dtype, problem.k, false, options) + ":ld" + std::to_string(problem.lda) + "," +
         std::to_string(problem.ldb) + ":reuse=" + to_string(options.reuse);
}

template <class T>
CallInfo Runtime::sddmm(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceBuffer& p,
                        const Options& options) {
  if (options.transpose_a || options.transpose_b)
    throw UnsupportedError("sddmm: Options::transpose_a/transpose_b do not apply (P = S ∘ (A·Bᵀ) takes B as given)");
  check_sddmm_shapes(s, a, b, p);
  plan::check_measure_options(options);
  detail::RuntimeState& rt = *state_;
  // A handle that has served an SDDMM call before has a reused pattern (see SddmmProblem).
  const bool seen = s.find(kPatternSeenKey) != nullptr;
  plan::SddmmProblem problem{a.cols(), dtype_of<T>::value, a.ld(), b.ld(), seen};
  problem.tile_count = [&s](int32_t tile_rows, int32_t tile_cols) {
    const std::string key = "sddmm_tile_count:" + std::to_string(tile_rows) + "x" + std::to_string(tile_cols);
    return *s.template get_or_create<int64_t>(key, [&] {
      return std::make_shared<int64_t>(formats::count_tiles(s.host_pattern(), tile_rows, tile_cols));
    });
  };
  const auto features = ops::cached_features(s);
  bool reused = true;
  const std::string problem_key = ops::sddmm_problem_key(problem, options);
  const std::string key = ops::handle_key(problem_key, rt.id);
  std::shared_ptr<PreparedSddmm<T>> prepared = s.template get_or_create<PreparedSddmm<T>>(key, [&] {
    reused = false;
    return prepare_sddmm<T>(rt, s, *features, problem, options, ops::earlier_times(rt, Op::SDDMM, *features, problem_key, options));
  });
  if (!seen) s.attach(kPatternSeenKey, std::make_shared<bool>(true));
  if (s.nnz() == 0) return {prepared->decision, reused};
  const bool early = ops::launches_early(options, rt.target.sm);
  ops::settle_by_measurement(rt, s, problem_key, key, *features, options, prepared, reused, [&] {
    return ops::SelectionHooks<PreparedSddmm<T>>{
        "sddmm",
        plan::kSddmmVendorMargin,
        plan::kSddmmPrepareMsPerNonzero,
        [&](const Options& forced) { return prepare_sddmm<T>(rt, s, *features, problem, forced); },
        [&](const std::vector<plan::TimedChoice>& times) {
          return prepare_sddmm<T>(rt, s, *features, problem, options, ops::EarlierTimes{times, DecisionSource::Measured});
        },
        [&](PreparedSddmm<T>& plan, CUstream stream) { run_prepared(rt, plan, s, a, b, p, stream, early, false); },
        [&](const plan::TimedChoice& t) { return plan::sddmm_neighbors(t.variant, t.params, problem, rt.target); },
        [&](const Options& forced) {
          const Decision d = plan::plan_sddmm(*features, problem, rt.target, forced, ops::plan_sources(Op::SDDMM, rt.target));
          return !ops::kernels_cached(variants::sddmm_variant(d.variant).kernel_specs(d, problem, rt.target), rt.target.sm);
        }};
  });
  const bool as_graph = run_prepared(rt, *prepared, s, a, b, p, static_cast<CUstream>(options.stream), early, options.replay_launches);
  return {prepared->decision, reused, as_graph};
}

Decision explain_sddmm(PatternView s, int32_t k, DType dtype, const Options& options, int device) {
  if (k < 1) throw InvalidInputError("sddmm: k = " + std::to_string(k) + " must be >= 1");
  const plan::DeviceTarget target = detail::explain_target(device);
  plan::SddmmProblem problem{k, dtype, k, k};
  problem.tile_count = formats::tile_counter(s);
  const Features features = inspect(s);
  Decision d = plan::plan_sddmm(features, problem, target, ops::with_environment_force(Op::SDDMM, options),
                                ops::plan_sources(Op::SDDMM, target));
  // What a call on this device would run first: a measured selection recorded for the pattern.
  ops::take_earlier(d, ops::recorded_earlier(Op::SDDMM, target, features, ops::sddmm_problem_key(problem, options), options),
                    plan::kSddmmVendorMargin);
  for (const jit::KernelSpec& spec : variants::sddmm_variant(d.variant).kernel_specs(d, problem, target)) {
    const jit::CompiledKernel compiled = ops::compile_only(spec, target.sm);
    d.kernel_origin = ops::to_origin(compiled.source);
    d.compile_ms += compiled.compile_ms;
    d.load_ms += compiled.load_ms;
  }
  return d;
}

#define SPARSEJIT_INSTANTIATE(T)                                                                              \
  template CallInfo Runtime::sddmm<T>(const DeviceCsr<T>&, const DeviceDense<T>&, const DeviceDense<T>&, \
                                      DeviceBuffer&, const Options&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
