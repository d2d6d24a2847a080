// Measured selection (Options::measure, Options::reuse) for any op executor: the call that
// settles a reused pattern times the planner's shortlist (plan::measured_shortlist) on the
// runtime's measure stream, then the settings plan::next_round names, within the budget of
// plan/measure_policy.hpp, hands back the fastest plan and stores the times as a record
// (ops/selection_records.hpp) that later runtimes and processes take without timing. The op
// supplies how to prepare a forced plan, how to run one and which settings neighbour a timed
// one; what is timed, how much, and how times are read stay in plan/.
#pragma once
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/log.hpp"
#include "cuda/graph.hpp"
#include "ops/call_common.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "ops/selection_records.hpp"
#include "plan/choose.hpp"
#include "plan/measure_policy.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "variants/catalog.hpp"

namespace sparsejit::ops {

// What measured times are kept under in the runtime: the pattern's fingerprint and the problem
// key (op, type, K, layout, options). Built only when a plan is prepared or measured, not on
// every call.
inline std::string pattern_key(const Features& features, const std::string& problem_key) {
  return fingerprint_hex(features.fingerprint) + ":" + problem_key;
}

// Times of this pattern and problem taken before the call that plans: by this runtime
// (source Measured) or stored in the cache database by another (source Recorded).
struct EarlierTimes {
  std::vector<plan::TimedChoice> times;
  DecisionSource source = DecisionSource::Measured;
};

// Whether auto may take times for this call: it may measure (Options::measure false: the
// model's choice always) and nothing forces a variant.
inline bool takes_times(Op op, const Options& options) {
  return options.measure && !with_environment_force(op, options).forces_variant();
}

// The cache database's record of this pattern and problem on `device` (this library, driver
// and model), for a call that takes times; what explain shows as well.
inline std::optional<EarlierTimes> recorded_earlier(Op op, const plan::DeviceTarget& device, const Features& features,
                                                    const std::string& problem_key, const Options& options) {
  if (!takes_times(op, options)) return std::nullopt;
  if (auto recorded = recorded_times(measured_key(op, device, features, problem_key)))
    return EarlierTimes{std::move(*recorded), DecisionSource::Recorded};
  return std::nullopt;
}

// The times auto may take instead of timing: this runtime's own first, then the record.
inline std::optional<EarlierTimes> earlier_times(detail::RuntimeState& rt, Op op, const Features& features,
                                                 const std::string& problem_key, const Options& options) {
  if (!takes_times(op, options)) return std::nullopt;
  if (auto own = rt.measured.find(pattern_key(features, problem_key))) return EarlierTimes{std::move(*own), DecisionSource::Measured};
  return recorded_earlier(op, rt.target, features, problem_key, options);
}

// Makes a freshly planned decision take `earlier`'s fastest (plan::take_fastest); true when it
// did. A forced decision is left alone.
inline bool take_earlier(Decision& d, const std::optional<EarlierTimes>& earlier, double vendor_margin) {
  return earlier && d.source != DecisionSource::Forced &&
         plan::take_fastest(d, earlier->times, variants::vendor_variant(d.op), vendor_margin, earlier->source);
}

// Whether this call times the shortlist of a plan (`settled`: its one measurement is claimed
// or not needed): auto may measure, the pattern is reused (the plan served a call before, or
// Reuse::Many), there is work, and the caller's stream is not being captured (a later call
// tries again). Claims the measurement when it answers true.
inline bool claims_measurement(std::atomic<bool>& settled, int64_t nnz, const Options& options, bool plan_reused,
                               const Context& context) {
  if (!options.measure || settled.load() || nnz == 0) return false;
  if (!plan_reused && options.reuse != Reuse::Many) return false;
  if (cuda::is_capturing(context, static_cast<CUstream>(options.stream))) return false;
  return !settled.exchange(true);
}

// What measured selection needs from an op. Plan: the op's prepared plan, with
// `std::shared_ptr<const Decision> decision` and `std::atomic<bool> settled`.
template <class Plan>
struct SelectionHooks {
  const char* op;
  double vendor_margin;  // plan::kSpmmVendorMargin, plan::kSddmmVendorMargin
  double prepare_ms_per_nonzero;  // plan::kSpmmPrepareMsPerNonzero, plan::kSddmmPrepareMsPerNonzero
  // A plan forced to a timed setting (variant and params in the options).
  std::function<std::shared_ptr<Plan>(const Options& forced)> prepare_forced;
  // A new plan of the call's options that takes the fastest of `times`.
  std::function<std::shared_ptr<Plan>(const std::vector<plan::TimedChoice>& times)> prepare_measured;
  // Enqueues one call of a plan on the stream, with the caller's operands.
  std::function<void(Plan&, CUstream)> run;
  // The settings next to a timed one (may be empty).
  std::function<std::vector<plan::TimedChoice>(const plan::TimedChoice&)> neighbors;
  // Whether preparing a forced setting would compile a kernel with NVRTC (its kernels are not
  // in the cache): the budget then counts plan::kCompileMs for it.
  std::function<bool(const Options& forced)> compiles;
};

// One setting timed by measure_selection: its time and the plan that ran it (the planned plan
// when its own preparation failed).
template <class Plan>
struct TimedPlan {
  plan::TimedChoice choice;
  std::shared_ptr<Plan> plan;
  MeasureStep step;
};

// The call's options forced to `setting`.
inline Options forced_options(const Options& options, const plan::TimedChoice& setting) {
  Options forced = options;
  forced.variant = setting.variant;
  forced.params = setting.params;
  return forced;
}

// hooks.compiles, false when the setting does not plan (time_setting then reports its error).
template <class Plan>
bool would_compile(const SelectionHooks<Plan>& hooks, const Options& forced) {
  try {
    return hooks.compiles(forced);
  } catch (const Error&) {
    return false;
  }
}

// Times `setting` (the planned plan for the first, a forced plan for the others) and reports
// it to `budget`: its call time, and its host time besides the calls (the preparation, and
// what the untimed first call does lazily, such as uploads and the vendor's analysis); a
// setting that fails to prepare or run gets infinity, with a warning, and its step (MeasureStep).
template <class Plan>
TimedPlan<Plan> time_setting(detail::RuntimeState& rt, const std::shared_ptr<Plan>& planned, const Options& options,
                             plan::TimedChoice setting, bool first, CUstream stream, plan::SelectionBudget& budget,
                             const std::function<double()>& elapsed_ms, const SelectionHooks<Plan>& hooks) {
  std::shared_ptr<Plan> p = planned;
  const double start_ms = elapsed_ms();
  int repeats = 0;
  try {
    if (!first) p = hooks.prepare_forced(forced_options(options, setting));
    setting.ms = time_device_calls(rt.context, stream, [&] { hooks.run(*p, stream); }, [&](double probe_ms) {
      repeats = budget.repeats(probe_ms, elapsed_ms());
      return repeats;
    });
  } catch (const Error& e) {
    log(LogLevel::Warn,
        std::string(hooks.op) + ": shortlisted " + setting.variant + " " + setting.params.dump() + " did not run: " + e.what());
    setting.ms = std::numeric_limits<double>::infinity();
  }
  const int calls = std::isfinite(setting.ms) ? 2 + repeats : 0;
  const double host_ms = elapsed_ms() - start_ms;
  budget.note_setting(setting.ms, std::max(0.0, host_ms - calls * setting.ms));
  MeasureStep step{setting.variant, setting.params, setting.ms, calls, host_ms};
  return {std::move(setting), std::move(p), std::move(step)};
}

template <class Plan>
std::vector<plan::TimedChoice> choices_of(const std::vector<TimedPlan<Plan>>& timed) {
  std::vector<plan::TimedChoice> out;
  for (const TimedPlan<Plan>& t : timed) out.push_back(t.choice);
  return out;
}

// What a record keeps of each timed setting: its time and what its plan priced it at.
template <class Plan>
std::vector<plan::RecordedTiming> recorded_of(const std::vector<TimedPlan<Plan>>& timed) {
  std::vector<plan::RecordedTiming> out;
  for (const TimedPlan<Plan>& t : timed) {
    plan::RecordedTiming r{t.choice.variant, t.choice.params, t.choice.ms, std::numeric_limits<double>::quiet_NaN(),
                           nlohmann::json::object()};
    const Candidate* priced = plan::chosen_candidate(*t.plan->decision);
    if (priced != nullptr && t.plan->decision->variant == t.choice.variant) {
      r.predicted_ms = priced->predicted_ms;
      r.terms = priced->terms;
    }
    out.push_back(std::move(r));
  }
  return out;
}

// Times the shortlist of `planned` (the planner's choice and the vendor first: both are always
// timed) and then plan::next_round's settings, within the selection's plan::SelectionBudget,
// remembers the times for the pattern and `problem_key` in the runtime and stores them in the
// cache database (ops/selection_records.hpp), and returns the fastest plan (its decision: the
// planned one with the times marked, source measured, measure_ms the host time this took), or
// nullptr when the model's margin makes timing pointless (plan::skip_threshold), the
// budget cannot cover the two settings always timed, there was nothing to choose between, or
// nothing ran.
template <class Plan>
std::shared_ptr<Plan> measure_selection(detail::RuntimeState& rt, const std::shared_ptr<Plan>& planned, const Options& options,
                                        const Features& features, const std::string& problem_key,
                                        const SelectionHooks<Plan>& hooks) {
  const auto start = std::chrono::steady_clock::now();
  const std::function<double()> elapsed_ms = [&] {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  if (plan::margin_skips_measuring(*planned->decision, plan::skip_threshold(*planned->decision, options))) return nullptr;
  // The op's vendor variant is always on the shortlist, and the selection's floor.
  const std::string vendor = variants::vendor_variant(planned->decision->op);
  plan::SelectionBudget budget(*planned->decision, vendor, options, features.basic.nnz, hooks.prepare_ms_per_nonzero);
  if (budget.skips_measuring()) return nullptr;
  std::vector<plan::TimedChoice> shortlist = plan::measured_shortlist(*planned->decision, vendor);
  if (shortlist.empty()) return nullptr;
  std::stable_partition(shortlist.begin() + 1, shortlist.end(), [&](const plan::TimedChoice& t) { return t.variant == vendor; });
  std::lock_guard<std::mutex> lock(rt.measuring);
  ++rt.shortlists_timed;
  Stream::wrap(rt.context, static_cast<CUstream>(options.stream)).synchronize();  // the caller's operands are ready
  const CUstream stream = rt.measure_stream().handle();
  std::vector<TimedPlan<Plan>> timed;
  const auto time_each = [&](const std::vector<plan::TimedChoice>& settings) {
    for (const plan::TimedChoice& setting : settings) {
      const std::vector<plan::TimedChoice> so_far = choices_of(timed);
      const bool new_variant =
          std::none_of(so_far.begin(), so_far.end(), [&](const plan::TimedChoice& t) { return t.variant == setting.variant; });
      // Whether a setting compiles is asked only of one the budget admits otherwise: the
      // question plans the setting and looks its kernels up (5 ms a selection when asked of all).
      if (!plan::always_timed(so_far, setting, vendor) &&
          (!budget.allows_next(elapsed_ms(), new_variant) ||
           !budget.allows_next(elapsed_ms(), new_variant, would_compile(hooks, forced_options(options, setting)))))
        continue;
      timed.push_back(time_setting(rt, planned, options, setting, timed.empty(), stream, budget, elapsed_ms, hooks));
    }
  };
  time_each(shortlist);
  time_each(plan::next_round(choices_of(timed), hooks.neighbors));
  const std::vector<plan::TimedChoice> times = choices_of(timed);
  Decision d = *planned->decision;
  if (!plan::take_fastest(d, times, vendor, hooks.vendor_margin)) return nullptr;
  rt.measured.remember(pattern_key(features, problem_key), times);
  store_selection(measured_key(d.op, rt.target, features, problem_key), d, recorded_of(timed));
  std::size_t fastest = 0;
  while (times[fastest].variant != d.variant || times[fastest].params != d.params) ++fastest;
  // The planned plan may be running on another thread: when it won, a new plan of the same
  // choice carries the measured decision (its kernels and formats are cached already).
  const std::shared_ptr<Plan> chosen = fastest == 0 ? hooks.prepare_measured(times) : timed[fastest].plan;
  d.kernel_origin = chosen->decision->kernel_origin;
  d.measure_ms = elapsed_ms();
  for (const TimedPlan<Plan>& t : timed) d.measure_steps.push_back(t.step);
  chosen->decision = std::make_shared<const Decision>(std::move(d));
  chosen->settled = true;
  return chosen;
}

// The step both executors take after finding or preparing a handle's plan: when the call claims
// the measurement (claims_measurement), the hooks are made and the shortlist timed, and the
// fastest plan replaces `prepared` on the handle under `handle_key` (the call then counts as not
// reusing a plan). Handle: the matrix handle the plan is cached on (attach, nnz).
template <class Plan, class Handle, class MakeHooks>
void settle_by_measurement(detail::RuntimeState& rt, const Handle& handle, const std::string& problem_key,
                           const std::string& handle_key, const Features& features, const Options& options,
                           std::shared_ptr<Plan>& prepared, bool& reused, MakeHooks&& make_hooks) {
  if (!claims_measurement(prepared->settled, handle.nnz(), options, reused, rt.context)) return;
  if (auto fastest = measure_selection(rt, prepared, options, features, problem_key, make_hooks())) {
    handle.attach(handle_key, fastest);
    prepared = std::move(fastest);
    reused = false;
  }
}

}  // namespace sparsejit::ops
