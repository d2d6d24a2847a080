// Measured selection (Options::measure, Options::reuse) for any op executor: the call that
// settles a reused pattern times the planner's shortlist (plan::measured_shortlist) on the
// runtime's measure stream, then the settings plan::next_round names, and hands back the
// fastest plan. The op supplies how to prepare a forced plan, how to run one and
// which settings neighbour a timed one; what is timed and how times are read stay in plan/.
#pragma once
#include <atomic>
#include <chrono>
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
#include "ops/runtime_state.hpp"
#include "plan/choose.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "variants/catalog.hpp"

namespace sparsejit::ops {

// What measured times are kept under in the runtime: the pattern's fingerprint and the plan key
// (op, type, K, layout, options, runtime). Built only when a plan is prepared or measured, not
// on every call.
inline std::string pattern_key(const Features& features, const std::string& plan_key) {
  return fingerprint_hex(features.fingerprint) + ":" + plan_key;
}

// The times an earlier call measured for this pattern and plan key, when auto may use them.
inline std::optional<std::vector<plan::TimedChoice>> earlier_times(detail::RuntimeState& rt, const Features& features,
                                                                   const std::string& plan_key, const Options& options) {
  if (!options.measure) return std::nullopt;
  return rt.measured.find(pattern_key(features, plan_key));
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
  // A plan forced to a timed setting (variant and params in the options).
  std::function<std::shared_ptr<Plan>(const Options& forced)> prepare_forced;
  // A new plan of the call's options that takes the fastest of `times`.
  std::function<std::shared_ptr<Plan>(const std::vector<plan::TimedChoice>& times)> prepare_measured;
  // Enqueues one call of a plan on the stream, with the caller's operands.
  std::function<void(Plan&, CUstream)> run;
  // The settings next to a timed one (may be empty).
  std::function<std::vector<plan::TimedChoice>(const plan::TimedChoice&)> neighbors;
};

// Times the shortlist of `planned` and then plan::next_round's settings, remembers
// the times for the pattern and `plan_key` in the runtime, and returns the fastest plan (its decision: the
// planned one with the times marked, source measured, measure_ms the host time this took), or
// nullptr when there was nothing to choose between or nothing ran.
template <class Plan>
std::shared_ptr<Plan> measure_selection(detail::RuntimeState& rt, const std::shared_ptr<Plan>& planned, const Options& options,
                                        const Features& features, const std::string& plan_key,
                                        const SelectionHooks<Plan>& hooks) {
  const auto start = std::chrono::steady_clock::now();
  // The op's vendor variant is always on the shortlist, and the selection's floor.
  const std::string vendor = variants::vendor_variant(planned->decision->op);
  std::vector<plan::TimedChoice> shortlist = plan::measured_shortlist(*planned->decision, vendor);
  if (shortlist.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(rt.measuring);
  Stream::wrap(rt.context, static_cast<CUstream>(options.stream)).synchronize();  // the caller's operands are ready
  const CUstream stream = rt.measure_stream().handle();
  std::vector<std::shared_ptr<Plan>> plans;
  const auto time_from = [&](std::size_t first) {
    for (std::size_t i = first; i < shortlist.size(); ++i) {
      plan::TimedChoice& t = shortlist[i];
      std::shared_ptr<Plan> p = planned;
      try {
        if (i > 0) {
          Options forced = options;
          forced.variant = t.variant;
          forced.params = t.params;
          p = hooks.prepare_forced(forced);
        }
        t.ms = time_device_calls(rt.context, stream, [&] { hooks.run(*p, stream); });
      } catch (const Error& e) {
        log(LogLevel::Warn,
            std::string(hooks.op) + ": shortlisted " + t.variant + " " + t.params.dump() + " did not run: " + e.what());
        t.ms = std::numeric_limits<double>::infinity();
      }
      plans.push_back(p);
    }
  };
  time_from(0);
  const std::size_t first_neighbor = shortlist.size();
  for (plan::TimedChoice& n : plan::next_round(shortlist, hooks.neighbors)) shortlist.push_back(std::move(n));
  time_from(first_neighbor);
  Decision d = *planned->decision;
  if (!plan::take_fastest(d, shortlist, vendor, hooks.vendor_margin)) return nullptr;
  rt.measured.remember(pattern_key(features, plan_key), shortlist);
  std::size_t fastest = 0;
  while (shortlist[fastest].variant != d.variant || shortlist[fastest].params != d.params) ++fastest;
  // The planned plan may be running on another thread: when it won, a new plan of the same
  // choice carries the measured decision (its kernels and formats are cached already).
  const std::shared_ptr<Plan> chosen = fastest == 0 ? hooks.prepare_measured(shortlist) : plans[fastest];
  d.kernel_origin = chosen->decision->kernel_origin;
  d.measure_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  chosen->decision = std::make_shared<const Decision>(std::move(d));
  chosen->settled = true;
  return chosen;
}

// The step both executors take after finding or preparing a handle's plan: when the call claims
// the measurement (claims_measurement), the hooks are made and the shortlist timed, and the
// fastest plan replaces `prepared` on the handle under `plan_key` (the call then counts as not
// reusing a plan). Handle: the matrix handle the plan is cached on (attach, nnz).
template <class Plan, class Handle, class MakeHooks>
void settle_by_measurement(detail::RuntimeState& rt, const Handle& handle, const std::string& plan_key,
                           const Features& features, const Options& options, std::shared_ptr<Plan>& prepared, bool& reused,
                           MakeHooks&& make_hooks) {
  if (!claims_measurement(prepared->settled, handle.nnz(), options, reused, rt.context)) return;
  if (auto fastest = measure_selection(rt, prepared, options, features, plan_key, make_hooks())) {
    handle.attach(plan_key, fastest);
    prepared = std::move(fastest);
    reused = false;
  }
}

}  // namespace sparsejit::ops
