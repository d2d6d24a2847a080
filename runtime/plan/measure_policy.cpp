#include "plan/measure_policy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "plan/choose.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::plan {

namespace {

// The choice's predicted time, when the model priced it with a positive finite cost.
std::optional<double> priced_choice_ms(const Decision& decision) {
  const Candidate* chosen = chosen_candidate(decision);
  if (chosen == nullptr || !(chosen->predicted_ms > 0) || !std::isfinite(chosen->predicted_ms)) return std::nullopt;
  return chosen->predicted_ms;
}

}  // namespace

std::optional<double> model_margin(const Decision& decision) {
  const std::optional<double> chosen_ms = priced_choice_ms(decision);
  if (!chosen_ms) return std::nullopt;
  double runner_up = std::numeric_limits<double>::infinity();
  for (const Candidate& c : decision.candidates)
    if (c.variant != decision.variant && c.rejected_because.empty() && std::isfinite(c.predicted_ms))
      runner_up = std::min(runner_up, c.predicted_ms);
  if (!std::isfinite(runner_up)) return std::nullopt;
  return runner_up / *chosen_ms;
}

bool margin_skips_measuring(const Decision& decision, double threshold) {
  const std::optional<double> margin = model_margin(decision);
  return margin && *margin >= threshold;
}

int measure_repeats(double probe_ms, double budget_left_ms) {
  if (!(probe_ms < kRepeatTargetMs)) return 0;
  const double wanted = probe_ms > 0 ? std::floor(kRepeatTargetMs / probe_ms) : kMaxMeasureCalls;
  const int repeats = int(std::clamp(wanted, double(kMinMeasureCalls), double(kMaxMeasureCalls)));
  const double affordable = probe_ms > 0 ? std::floor(budget_left_ms / (2 * probe_ms)) : kMaxMeasureCalls;
  return int(std::clamp(std::min(double(repeats), affordable), 0.0, double(kMaxMeasureCalls)));
}

bool budget_allows_next(double elapsed_ms, int settings_timed, double budget_ms) {
  const double per_setting = settings_timed > 0 ? elapsed_ms / settings_timed : 0;
  return elapsed_ms + per_setting <= budget_ms;
}

double selection_budget_ms(const Decision& decision, const Options& options) {
  const std::optional<double> chosen_ms = priced_choice_ms(decision);
  return chosen_ms ? std::min(options.measure_budget_ms, options.measure_budget_calls * *chosen_ms) : options.measure_budget_ms;
}

bool budget_skips_measuring(double budget_ms) { return budget_ms < 2 * kSettingCostMs; }

void check_measure_options(const Options& options) {
  const auto refuse = [](const char* field, double value, const char* expected) {
    std::ostringstream text;
    text << "Options::" << field << " = " << value << " must be " << expected;
    throw InvalidInputError(text.str());
  };
  if (!(options.measure_skip_margin >= 1)) refuse("measure_skip_margin", options.measure_skip_margin, ">= 1 (infinity: always time)");
  if (!(options.measure_budget_ms > 0)) refuse("measure_budget_ms", options.measure_budget_ms, "> 0 ms");
  if (!(options.measure_budget_calls > 0))
    refuse("measure_budget_calls", options.measure_budget_calls, "> 0 calls (infinity: measure_budget_ms alone)");
}

}  // namespace sparsejit::plan
