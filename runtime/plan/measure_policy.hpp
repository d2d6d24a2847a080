// How much measured selection times, decided from numbers only (pure, so the rules are tested
// without a GPU): whether the model's margin makes timing pointless, how many calls time one
// setting, and whether a selection's time budget allows another setting. The executor
// (ops/measured_selection.hpp) asks these before each step and only runs and times.
#pragma once
#include <optional>

#include "sparsejit/decision.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::plan {

// The model's margin: the cheapest predicted cost among the eligible candidates other than the
// choice's variant, over the choice's predicted cost (> 1: the model sees nothing close).
// nullopt when the choice or no other candidate is priced with a finite cost.
std::optional<double> model_margin(const Decision& decision);

// Whether timing the shortlist is skipped because the margin is at least `threshold`
// (Options::measure_skip_margin). Its default, 2, is kShortlistSpread: the cost formulas are
// within 2x of the measured time for nearly every benchmarked case, so the shortlist leaves out
// what is priced beyond 2x of the cheapest, and at that margin it would time the vendor alone
// (itself priced 2x slower). With the shipped models the margin reached 2 in 1 of 62 SpMM and
// none of 62 SDDMM cases (every third shared matrix, K = 32 and 128; medians 1.18 and 1.05).
bool margin_skips_measuring(const Decision& decision, double threshold);

// Calls timed per setting: one captured graph replay of this many calls. A setting whose one
// probe call (probe_ms, device time) takes kRepeatTargetMs or more is timed by that call alone
// (0: the probe is the measurement; launches cost microseconds, noise is small next to it);
// shorter calls repeat until about kRepeatTargetMs, between kMinMeasureCalls and
// kMaxMeasureCalls, and no more than half of `budget_left_ms` allows (a graph runs twice:
// once to upload it, once timed).
inline constexpr double kRepeatTargetMs = 2.0;
inline constexpr int kMinMeasureCalls = 2;
inline constexpr int kMaxMeasureCalls = 12;
int measure_repeats(double probe_ms, double budget_left_ms);

// Whether a selection that has spent `elapsed_ms` timing `settings_timed` settings may start
// another optional one within `budget_ms` (Options::measure_budget_ms): the next is assumed to
// cost what the ones before did on average. The planner's choice and the vendor are always
// timed (the vendor is the floor), whatever the budget.
bool budget_allows_next(double elapsed_ms, int settings_timed, double budget_ms);

// The host time one setting of a selection costs besides its runs, with a warm kernel cache:
// its plan's preparation (kernels from the cache, formats) and a synchronization. Measured on
// the H100 (2026-11-24, bench sets): 0.24-0.34 ms a setting where the calls take microseconds.
inline constexpr double kSettingCostMs = 0.25;

// The host time a selection of `decision` may spend: Options::measure_budget_ms, lowered to
// Options::measure_budget_calls times the choice's predicted time where the model priced it.
double selection_budget_ms(const Decision& decision, const Options& options);

// Whether `budget_ms` is too small for the two settings every selection times (the choice and
// the vendor): the selection is skipped, and the model's choice stands.
bool budget_skips_measuring(double budget_ms);

// InvalidInputError naming the value when Options::measure_skip_margin is below 1 or NaN, or
// Options::measure_budget_ms or measure_budget_calls is not positive.
void check_measure_options(const Options& options);

}  // namespace sparsejit::plan
