#include "plan/measure_policy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "plan/choose.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::plan {

namespace {

// A candidate's price without the neighbours' regret term: the model's estimate of its time.
double estimated_ms(const Candidate& c) { return c.predicted_ms / c.regret; }

// The choice's candidate, when the model priced it with a positive finite cost; else nullptr.
const Candidate* priced_choice(const Decision& decision) {
  const Candidate* chosen = chosen_candidate(decision);
  if (chosen == nullptr || !(chosen->predicted_ms > 0) || !std::isfinite(chosen->predicted_ms)) return nullptr;
  return chosen;
}

// The choice's predicted time, when the model priced it (priced_choice).
std::optional<double> priced_choice_ms(const Decision& decision) {
  const Candidate* chosen = priced_choice(decision);
  if (chosen == nullptr) return std::nullopt;
  return chosen->predicted_ms;
}

double predicted_ms_of(const Decision& decision, const std::string& variant) {
  for (const Candidate& c : decision.candidates)
    if (c.variant == variant && c.predicted_ms > 0 && std::isfinite(c.predicted_ms)) return c.predicted_ms;
  return std::numeric_limits<double>::quiet_NaN();
}

// The untimed call, the probe and the fewest repeats.
constexpr int kLeastCallsASetting = 2 + kMinMeasureCalls;

}  // namespace

std::optional<double> model_margin(const Decision& decision) {
  const Candidate* chosen = priced_choice(decision);
  if (chosen == nullptr) return std::nullopt;
  const double chosen_ms = estimated_ms(*chosen);
  double runner_up = std::numeric_limits<double>::infinity();
  for (const Candidate& c : decision.candidates)
    if (c.variant != decision.variant && c.rejected_because.empty() && std::isfinite(c.predicted_ms))
      runner_up = std::min(runner_up, estimated_ms(c));
  if (!std::isfinite(runner_up)) return std::nullopt;
  return runner_up / chosen_ms;
}

double skip_threshold(const Decision& decision, const Options& options) {
  return options.measure_skip_margin.value_or(decision.model_skip_margin.value_or(kDefaultSkipMargin));
}

bool margin_skips_measuring(const Decision& decision, double threshold) {
  const std::optional<double> margin = model_margin(decision);
  return margin && *margin >= threshold;
}

double setting_prepare_ms(int64_t nnz, double prepare_ms_per_nonzero) {
  return kSettingCostMs + prepare_ms_per_nonzero * double(std::max<int64_t>(nnz, 0));
}

SelectionBudget::SelectionBudget(const Decision& decision, const std::string& vendor, const Options& options, int64_t nnz,
                                 double prepare_ms_per_nonzero)
    : cap_ms_(options.measure_budget_ms),
      calls_(options.measure_budget_calls),
      predicted_choice_ms_(priced_choice_ms(decision).value_or(std::numeric_limits<double>::quiet_NaN())),
      predicted_vendor_ms_(predicted_ms_of(decision, vendor)),
      prepare_floor_ms_(setting_prepare_ms(nnz, prepare_ms_per_nonzero)),
      fastest_call_ms_(std::numeric_limits<double>::infinity()) {}

double SelectionBudget::limit_ms() const {
  const double reference = std::isfinite(fastest_call_ms_) ? fastest_call_ms_ : predicted_choice_ms_;
  return std::isnan(reference) ? cap_ms_ : std::min(cap_ms_, calls_ * reference);
}

double SelectionBudget::prepare_estimate_ms() const { return std::max(prepare_floor_ms_, largest_overhead_ms_); }

bool SelectionBudget::skips_measuring() const {
  if (std::isnan(predicted_choice_ms_)) return limit_ms() < 2 * kSettingCostMs;
  // The choice is prepared already: a synchronization and its calls. The vendor's price
  // stands in for its own calls; where it is unpriced, the choice's. Its preparation is
  // counted at kSettingCostMs, not by nonzeros: the two settings are what keeps auto from
  // losing to the vendor, and with the nonzeros counted the H100's SDDMM set timed none of
  // its 95 patterns, where auto then fell to 0.34x of cuSPARSE.
  const double vendor_call = std::isnan(predicted_vendor_ms_) ? predicted_choice_ms_ : predicted_vendor_ms_;
  const double choice = kSettingCostMs + kLeastCallsASetting * predicted_choice_ms_;
  const double vendor = kSettingCostMs + kLeastCallsASetting * vendor_call;
  return choice + vendor > limit_ms();
}

bool SelectionBudget::allows_next(double elapsed_ms, bool new_variant, bool compiles) const {
  const double call = std::isfinite(fastest_call_ms_) ? fastest_call_ms_ : predicted_choice_ms_;
  const double calls = std::isnan(call) ? 0 : kLeastCallsASetting * call;
  const double prepare = (new_variant ? 2 : 1) * prepare_estimate_ms() + (compiles ? kCompileMs : 0);
  return elapsed_ms + prepare + calls <= limit_ms();
}

int SelectionBudget::repeats(double probe_ms, double elapsed_ms) const {
  if (!(probe_ms < kRepeatTargetMs)) return 0;
  if (std::isfinite(fastest_call_ms_) && probe_ms > kClearlySlower * fastest_call_ms_) return 0;
  if (!(probe_ms > 0)) return kMaxMeasureCalls;
  const double wanted = std::clamp(std::floor(kRepeatTargetMs / probe_ms), double(kMinMeasureCalls), double(kMaxMeasureCalls));
  const double room_ms = std::min(limit_ms() - elapsed_ms, limit_ms() / kSharedSettings);
  const double affordable = std::floor(room_ms / probe_ms);
  return int(std::clamp(std::min(wanted, affordable), 0.0, double(kMaxMeasureCalls)));
}

void SelectionBudget::note_setting(double call_ms, double overhead_ms) {
  if (call_ms > 0 && std::isfinite(call_ms)) fastest_call_ms_ = std::min(fastest_call_ms_, call_ms);
  if (std::isfinite(overhead_ms)) largest_overhead_ms_ = std::max(largest_overhead_ms_, overhead_ms);
}

bool vendor_beat_the_choice(const std::vector<TimedChoice>& timed, const std::string& vendor) {
  return timed.size() == 2 && timed[0].variant != vendor && timed[1].variant == vendor && timed[1].ms < timed[0].ms;
}

bool always_timed(const std::vector<TimedChoice>& timed, const TimedChoice& setting, const std::string& vendor) {
  if (timed.empty()) return true;
  if (setting.variant != vendor) return vendor_beat_the_choice(timed, vendor);
  return std::none_of(timed.begin(), timed.end(), [&](const TimedChoice& t) { return t.variant == vendor; });
}

void check_measure_options(const Options& options) {
  const auto refuse = [](const char* field, double value, const char* expected) {
    std::ostringstream text;
    text << "Options::" << field << " = " << value << " must be " << expected;
    throw InvalidInputError(text.str());
  };
  if (options.measure_skip_margin && !(*options.measure_skip_margin >= 1))
    refuse("measure_skip_margin", *options.measure_skip_margin, ">= 1 (infinity: always time)");
  if (!(options.measure_budget_ms > 0)) refuse("measure_budget_ms", options.measure_budget_ms, "> 0 ms");
  if (!(options.measure_budget_calls > 0))
    refuse("measure_budget_calls", options.measure_budget_calls, "> 0 calls (infinity: measure_budget_ms alone)");
}

}  // namespace sparsejit::plan
