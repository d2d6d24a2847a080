// The correction of a model's cost formulas by timed patterns near the one being planned: a
// linear formula per variant is right on average and off in regions of the feature space
// (few long rows at wide K, many short rows), and where it is off it is off for every pattern
// there. The model's optional "neighbours" section keeps, for the patterns its costs were
// judged on, how far each variant's formula was from its measured time (the log of measured
// over predicted), and a candidate's price is multiplied by the distance-weighted mean ratio
// of the nearest of them that timed its variant.
//
// A correct price does not make a correct pick where two candidates are close: the pick then
// turns on a few percent of error. With "regret_weight" the section also keeps how far each
// variant was from the fastest one at each point (the log of its time over the oracle's,
// capped by the writer), and the factor gains exp(regret_weight x the same neighbours' mean
// regret): a variant that lost clearly at every nearby pattern needs a clear price lead to be
// chosen. The regrets hold for the problems the points were timed on: "regret_when" names the
// features those share (value_bytes, transpose_a), and another problem gets no regret term.
// Under cross-validation on the H200's SpMM timings (5 folds, seeds 1-10) it left 1 of 30
// (seed, K) cells with a pick over 1.3x of the fastest, against 10 without it
// (bench/results/2026-12-01-h200-spmm-model-v12/).
//
//   "neighbours": {
//     "features": ["rows", "cols", ...],  names in the Decision's features, compared as logs
//     "scale": [s, ...],                  one per feature: the log differences are divided by it
//     "count": 6,                         neighbours averaged (the nearest that timed the variant)
//     "softening": 0.3,                   weight of a neighbour at distance d: 1 / (d + softening)
//     "regret_weight": 0.5,               optional, >= 0; with it every point has "log_regret"
//     "regret_when": {"value_bytes": 4},  with regret_weight: features (numbers or booleans)
//                                         a problem must match for the regret term
//     "points": [{"at": [log values], "log_ratio": {"variant": number, ...},
//                 "log_regret": {"variant": number >= 0, ...}}, ...]   (one per log_ratio variant)
//   }
//
// A feature is read as log(max(value, kFeatureFloor)), so an empty row or a density of 0 has
// a finite position. bench/refit_costs.py --neighbours writes the section.
#pragma once
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sparsejit::models {

inline constexpr double kFeatureFloor = 1e-6;

// What is wrong with a "neighbours" section, or nullopt (model_check reads it).
std::optional<std::string> neighbours_problem(const nlohmann::json& section);

// A variant's correction at a pattern: the factor its formula's price is multiplied by, and
// the part of that factor that is the regret term (1 where the section has none or it does not
// apply). The regret term breaks near ties against variants that lost clearly nearby; it is not
// an estimate of the time, so a margin that says "no need to time" divides it out.
struct NeighbourCorrection {
  double factor = 1;
  double regret = 1;
};

// The correction of every variant some point timed, at `features` (a Decision's features), in
// one pass over the points (a planner prices all its candidates at once); empty when the model
// has no "neighbours" section. The section must be valid (neighbours_problem); a feature it
// names that `features` lacks is an InvalidInputError.
std::map<std::string, NeighbourCorrection> neighbour_factors(const nlohmann::json& model, const nlohmann::json& features);
// One variant's factor: 1 when the model has no section or no point timed the variant.
double neighbour_factor(const nlohmann::json& model, const std::string& variant, const nlohmann::json& features);

}  // namespace sparsejit::models
