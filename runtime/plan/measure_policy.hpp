// How much measured selection times, decided from numbers only (pure, so the rules are tested
// without a GPU): whether the model's margin makes timing pointless, how many calls time one
// setting, and whether a selection's time budget allows another setting. The executor
// (ops/measured_selection.hpp) asks these before each step and only runs and times.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/choose.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::plan {

// The model's margin: the cheapest predicted cost among the eligible candidates other than the
// choice's variant, over the choice's predicted cost (> 1: the model sees nothing close), both
// without the neighbours' regret term (Candidate::regret). The regret term only breaks near ties
// in the choice; counted in the margin it made near ties look clear: SpMM v12 left Cornell5 at
// K = 128 untimed at a margin of 1.37 over cuSPARSE, whose price it had raised by its regret,
// and ran 0.95x cuSPARSE's time (bench/results/2026-12-04-h200-spmm-margin-without-regret/).
// nullopt when the choice or no other candidate is priced with a finite cost.
std::optional<double> model_margin(const Decision& decision);

// The skip margin of a model that carries none (see margin_skips_measuring).
inline constexpr double kDefaultSkipMargin = 1.5;

// The margin from which the model's choice stands untimed: Options::measure_skip_margin when
// set, else the model's own (Decision::model_skip_margin: SpMM v12's 1.3. Under cross-validation
// by matrix over the H200's 329 patterns, fold seeds 1-5, the margin without the regret term was
// at least 1.3 in 1603 of 4935 cases, every choice there within 10% of the fastest, worst 1.033x;
// with it, 2431 cases and worst 1.19x: bench/results/2026-12-01-h200-spmm-model-v12/skip_margins.txt,
// beta 0.0 and 0.5), else kDefaultSkipMargin.
double skip_threshold(const Decision& decision, const Options& options);

// Whether timing the shortlist is skipped because the margin is at least `threshold`
// (skip_threshold). kDefaultSkipMargin, 1.5: no choice made at that margin was off on
// the H200 (2026-11-28, bench/results/2026-11-28-h200-spmm-model-v10/). SpMM v10's choices
// under 5-fold cross-validation by matrix over 329 patterns (the correction made without the
// judged matrix): the margin was >= 1.5 in 225-227 of 987 (pattern, K) cases and every one of
// them was the fastest variant (at 1.3, one was 1.13x the fastest). SDDMM v10 (fitted on the
// H100) on the H200's SDDMM set: >= 1.5 in 83 of 282 cases, every one the fastest. It was 2
// (kShortlistSpread, where the shortlist would time the vendor alone) until the models
// carried those numbers.
bool margin_skips_measuring(const Decision& decision, double threshold);

// What one measured selection may spend and has spent, in host ms (pure arithmetic: the
// executor, ops/measured_selection.hpp, reports each setting and asks before each step). The
// limit is Options::measure_budget_ms, lowered to Options::measure_budget_calls calls of the
// reference call: the model's predicted time of its choice until a setting has run, then the
// fastest measured call, which is what auto runs afterwards, so "calls of auto" is what the
// limit counts. A setting costs its preparation on the host (formats, kernels from the cache,
// a synchronization) and its calls: one untimed, one probe, then repeats.
class SelectionBudget {
 public:
  // vendor: the op's vendor variant, always timed; prepare_ms_per_nonzero: the op's host cost
  // of formats a nonzero (kSpmmPrepareMsPerNonzero, kSddmmPrepareMsPerNonzero).
  SelectionBudget(const Decision& decision, const std::string& vendor, const Options& options, int64_t nnz,
                  double prepare_ms_per_nonzero);

  // Whether the two settings every selection times (the choice and the vendor), each at
  // kSettingCostMs and four calls, are predicted to cost more than the limit: then nothing is
  // timed and the model's choice stands.
  bool skips_measuring() const;
  // Whether an optional setting may start after `elapsed_ms`: its predicted cost still fits
  // the limit. That cost is its preparation (the larger of the estimate from the nonzeros and
  // the largest overhead seen, doubled for a variant not prepared yet in this selection: its
  // formats are not built yet, and differ by variant) plus the untimed call, the probe and
  // kMinMeasureCalls calls of the fastest so far.
  // `compiles`: its kernels are not in the cache, so preparing it adds kCompileMs.
  bool allows_next(double elapsed_ms, bool new_variant, bool compiles = false) const;
  // Calls timed after a setting's probe took `probe_ms`, with `elapsed_ms` spent so far: none
  // when the probe is long enough to be the measurement (kRepeatTargetMs) or already
  // kClearlySlower times the fastest setting (it cannot win, and a slow setting's repeats are
  // what overran budgets); else enough to reach kRepeatTargetMs, between kMinMeasureCalls and
  // kMaxMeasureCalls, within the limit left and within a kSharedSettings-th of the limit.
  int repeats(double probe_ms, double elapsed_ms) const;
  // Reports a setting: its time per call and the host ms it took besides its timed calls
  // (its preparation and what its untimed first call did lazily).
  void note_setting(double call_ms, double overhead_ms);

  double limit_ms() const;

 private:
  double prepare_estimate_ms() const;

  double cap_ms_;
  double calls_;
  double predicted_choice_ms_;  // NaN when the model did not price its choice
  double predicted_vendor_ms_;  // NaN when the vendor is not priced
  double prepare_floor_ms_;     // setting_prepare_ms(nnz, prepare_ms_per_nonzero)
  double largest_overhead_ms_ = 0;
  double fastest_call_ms_;      // infinity until a setting ran
};

// Repeats: short calls repeat until about kRepeatTargetMs of device time.
inline constexpr double kRepeatTargetMs = 2.0;
inline constexpr int kMinMeasureCalls = 2;
inline constexpr int kMaxMeasureCalls = 12;
// A probe this many times the fastest setting so far is the setting's time: no repeats.
inline constexpr double kClearlySlower = 1.25;
// The settings a selection usually times (the choice, one more of ours, the vendor): no
// setting's repeats take more than this share of the limit.
inline constexpr int kSharedSettings = 3;

// Whether the vendor's setting, timed second, beat the model's choice, timed first: the model
// is wrong here, so one more of ours (its next-cheapest) is timed whatever the budget. On the
// H100's SDDMM set at K = 128 the budget left room for the choice and the vendor alone on most
// patterns, and auto took cuSPARSE at 0.81-0.88x of its best run where ours were faster.
bool vendor_beat_the_choice(const std::vector<TimedChoice>& timed, const std::string& vendor);

// Whether `setting` is timed whatever the budget, after the settings `timed` so far: the first
// (the model's choice), the vendor's planned setting (its other algorithms are optional), and
// one more of ours when vendor_beat_the_choice.
bool always_timed(const std::vector<TimedChoice>& timed, const TimedChoice& setting, const std::string& vendor);

// The host time one setting costs besides its runs, with a warm kernel cache: a plan's
// preparation and a synchronization, plus the formats built on the host, per nonzero and op.
// Measured on the H100 (2026-11-24 records run: measure_ms less the device time of each timed
// setting): SpMM 0.2-0.8 ms a setting up to 1 M nonzeros, 6.5-25 ms at 10-13 M; SDDMM (dense
// tiles and chunks are built on the host) 1.5-2.5 ms at 200-700 K, 15-66 ms at 10-12 M.
inline constexpr double kSettingCostMs = 0.25;
// One NVRTC compile of a kernel missing from the cache: 65 ms on the build machine, 113-281 ms
// on the H100's host (2026-11-25: a csr_merge neighbour at nnz_per_group 512, outside what
// `tune --precompile` compiled, took 281 ms of a 387 ms selection).
inline constexpr double kCompileMs = 100;
inline constexpr double kSpmmPrepareMsPerNonzero = 1e-6;
inline constexpr double kSddmmPrepareMsPerNonzero = 4e-6;
double setting_prepare_ms(int64_t nnz, double prepare_ms_per_nonzero);

// InvalidInputError naming the value when Options::measure_skip_margin is set below 1 or NaN, or
// Options::measure_budget_ms or measure_budget_calls is not positive.
void check_measure_options(const Options& options);

}  // namespace sparsejit::plan
