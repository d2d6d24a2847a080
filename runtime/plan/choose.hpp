// The steps every planner shares: apply a forced choice, price candidates with the model's
// cost formulas, and pick the cheapest. Op-specific terms and parameters stay in the op's
// planner file.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/decision.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::plan {

struct VariantSpec {
  std::string name;
  nlohmann::json default_params;           // every parameter the variant takes, with its default
  std::string rejected_because;            // non-empty: not eligible for this problem
  // Non-empty: runs this problem when forced, but is not proposed for it (the model's choice,
  // the tree's leaf, measured selection's shortlist): a planner's judgement that it is slow
  // here. The candidate's rejected_because shows it, unless the variant is forced.
  std::string declined_because;
};

// The forced choice of a call: options.variant and options.params, unless the variant is
// empty or "auto". (SPARSEJIT_FORCE is folded into the options before planning:
// ops::with_environment_force.)
std::optional<ForcedChoice> forced_from_options(Op op, const Options& options);

// Merges `forced` over `defaults`; a key the variant does not take is an InvalidInputError
// naming it and the variant.
nlohmann::json merge_params(const std::string& variant, const nlohmann::json& defaults, const nlohmann::json& forced);

// The cost terms of a variant run with these parameters (an op's planner computes them).
using CostTerms = std::function<nlohmann::json(const std::string& variant, const nlohmann::json& params)>;
// Throws an Error naming the value when a variant cannot run with these parameters.
using ParamsCheck = std::function<void(const std::string& variant, const nlohmann::json& params)>;

// Fills decision.candidates (priced by the model's "cost" section with each eligible variant's
// terms at its default params, terms kept in the candidate) and the chosen variant: the
// forced one when given (source forced), else the cheapest eligible one (source model). The
// forced candidate's entry is priced at the forced params instead (checked first by
// check_forced when given), so its terms are those of what runs: the tuner fits the cost
// coefficients on them. Throws InvalidInputError for an unknown forced variant and
// UnsupportedError for a forced variant that is not eligible.
void choose(Decision& decision, const std::vector<VariantSpec>& variants, const nlohmann::json& model,
            const CostTerms& cost_terms, const std::optional<ForcedChoice>& forced, const ParamsCheck& check_forced = {});

// Measured selection (DecisionSource::Measured): on a pattern the caller reuses, the executor
// times a shortlist of the planned candidates on the device once and the fastest runs from
// then on, so a model error near a crossover costs one measurement, not every call.
struct TimedChoice {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
  double ms = 0;  // device ms of one call; infinity when it failed to run
};

// How many of our own candidates the shortlist holds, and how far above the cheapest
// predicted cost one may be priced and still be timed: the cost formulas are within 2x of
// the measured time for nearly every benchmarked case, and the third-cheapest is the
// fastest on few.
inline constexpr int kShortlistOwn = 3;
inline constexpr double kShortlistSpread = 2.0;

// What to time for a decision that `choose` (and maybe a tuning record) made: the decision's
// own choice first, then the cheapest-predicted other eligible candidates of ours (at their
// planned params, at most kShortlistOwn in all, priced within kShortlistSpread of the
// cheapest), then `vendor` when it is eligible, so the vendor's speed is a floor the
// selection never falls under. Empty for a forced decision or one with nothing else to try.
std::vector<TimedChoice> measured_shortlist(const Decision& decision, const std::string& vendor);

// The settings of `variant` that differ from `centre` by one entry of `changes` each (an object
// of parameters merged over it), other than `centre` itself, that `check` accepts (an Error
// from it drops the setting: past a parameter's range for the problem). What an op's
// neighbours function returns.
std::vector<TimedChoice> valid_neighbours(const std::string& variant, const nlohmann::json& centre,
                                          const std::vector<nlohmann::json>& changes,
                                          const std::function<void(const nlohmann::json&)>& check);

// The second round of timing: the settings `neighbors` names next to the kNeighbourLeaders
// fastest of `timed` (finite times only), leaving out any already in `timed` or named twice.
inline constexpr int kNeighbourLeaders = 2;
std::vector<TimedChoice> next_round(const std::vector<TimedChoice>& timed,
                                    const std::function<std::vector<TimedChoice>(const TimedChoice&)>& neighbors);

// How much faster than the vendor one of our settings must time to be taken over it.
// SpMM: the shortlist is timed on one operand set, whose B stays in L2 between calls; callers
// who rotate operands (a benchmark, a model's layers) see our row-per-group kernels lose more
// to L2 misses than cuSPARSE does (12% against 4%, a 256x2304 layer at K = 512), so a near tie
// goes to the vendor, whose speed is the floor the selection promises.
// SDDMM: none. Our cusparse variant is cuSPARSE's sampled dot products plus a pass scaling P
// by S's values (cuSPARSE computes the first only), so it is no floor of the vendor's own
// time, and rotated operands slow it more than our kernels (1.17x of the vendor in the median
// where it was chosen); ties go to the shortlist's order, the planner's choice first.
inline constexpr double kSpmmVendorMargin = 0.05;
inline constexpr double kSddmmVendorMargin = 0.0;

// Takes the fastest finite time of `times` (ties within kTieTolerance go to the earlier
// entry: the shortlist's order; `vendor` keeps the choice unless beaten by vendor_margin),
// marks every candidate matching a timed (variant, params) with its time, appends the timed
// settings no candidate matches (unpriced: predicted_ms NaN), and sets `source` (Measured, or
// Recorded for times stored by an earlier process). Returns false and leaves the decision
// unchanged when no time is finite, or when the fastest is a variant this decision rejects:
// times taken for another handle or process must never run what this problem cannot.
bool take_fastest(Decision& decision, const std::vector<TimedChoice>& times, const std::string& vendor, double vendor_margin,
                  DecisionSource source = DecisionSource::Measured);

// The candidate of the decision's own variant (its priced entry), or nullptr.
const Candidate* chosen_candidate(const Decision& decision);

}  // namespace sparsejit::plan
