// The correction of a model's cost formulas by timed patterns near the one being planned: a
// linear formula per variant is right on average and off in regions of the feature space
// (few long rows at wide K, many short rows), and where it is off it is off for every pattern
// there. The model's optional "neighbours" section keeps, for the patterns its costs were
// judged on, how far each variant's formula was from its measured time (the log of measured
// over predicted), and a candidate's price is multiplied by the distance-weighted mean ratio
// of the nearest of them that timed its variant.
//
//   "neighbours": {
//     "features": ["rows", "cols", ...],  names in the Decision's features, compared as logs
//     "scale": [s, ...],                  one per feature: the log differences are divided by it
//     "count": 6,                         neighbours averaged (the nearest that timed the variant)
//     "softening": 0.3,                   weight of a neighbour at distance d: 1 / (d + softening)
//     "points": [{"at": [log values], "log_ratio": {"variant": number, ...}}, ...]
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

// The factor of every variant some point timed, at `features` (a Decision's features), in one
// pass over the points (a planner prices all its candidates at once); empty when the model has
// no "neighbours" section. The section must be valid (neighbours_problem); a feature it names
// that `features` lacks is an InvalidInputError.
std::map<std::string, double> neighbour_factors(const nlohmann::json& model, const nlohmann::json& features);
// One variant's factor: 1 when the model has no section or no point timed the variant.
double neighbour_factor(const nlohmann::json& model, const std::string& variant, const nlohmann::json& features);

}  // namespace sparsejit::models
