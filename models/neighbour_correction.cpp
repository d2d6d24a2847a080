#include "models/neighbour_correction.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "sparsejit/error.hpp"

namespace sparsejit::models {
namespace {

bool finite_number(const nlohmann::json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

std::optional<std::string> point_problem(const nlohmann::json& point, std::size_t index, std::size_t dimensions, bool with_regret) {
  const std::string where = "\"neighbours\" point " + std::to_string(index);
  if (!point.is_object() || !point.contains("at") || !point.contains("log_ratio"))
    return where + " is not an object with \"at\" and \"log_ratio\"";
  const nlohmann::json& at = point["at"];
  if (!at.is_array() || at.size() != dimensions)
    return where + ": \"at\" is not an array of " + std::to_string(dimensions) + " numbers (one per feature)";
  for (const auto& v : at)
    if (!finite_number(v)) return where + ": \"at\" holds " + v.dump() + ", not a finite number";
  if (!point["log_ratio"].is_object()) return where + ": \"log_ratio\" is not an object";
  for (const auto& [variant, ratio] : point["log_ratio"].items())
    if (!finite_number(ratio)) return where + ": log_ratio of " + variant + " is " + ratio.dump() + ", not a finite number";
  if (!with_regret) return std::nullopt;
  if (!point.contains("log_regret") || !point["log_regret"].is_object())
    return where + " has no \"log_regret\" object (the section has a \"regret_weight\")";
  for (const auto& timed : point["log_ratio"].items()) {
    const std::string& variant = timed.key();
    const auto regret = point["log_regret"].find(variant);
    if (regret == point["log_regret"].end()) return where + ": log_regret has no " + variant + ", which log_ratio has";
    if (!finite_number(*regret) || regret->get<double>() < 0)
      return where + ": log_regret of " + variant + " is " + regret->dump() + ", not a number >= 0";
  }
  return std::nullopt;
}

std::vector<double> numbers(const nlohmann::json& array) {
  std::vector<double> out;
  for (const auto& v : array) out.push_back(v.get<double>());
  return out;
}

// The log position of `features` along the section's features, each divided by its scale.
std::vector<double> position(const nlohmann::json& section, const std::vector<double>& scale, const nlohmann::json& features) {
  const nlohmann::json& names = section["features"];
  std::vector<double> at;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string name = names[i].get<std::string>();
    if (!features.contains(name) || !features[name].is_number())
      throw InvalidInputError("the model's neighbour correction needs feature '" + name + "', which the planner did not provide");
    at.push_back(std::log(std::max(features[name].get<double>(), kFeatureFloor)) / scale[i]);
  }
  return at;
}

// A timed point as one variant's neighbour: how far, and its log ratio and log regret.
struct NearPoint {
  double distance, log_ratio, log_regret;
};

double distance(const std::vector<double>& at, const nlohmann::json& point, const std::vector<double>& scale) {
  double sum = 0;
  for (std::size_t i = 0; i < at.size(); ++i) {
    const double d = at[i] - point[i].get<double>() / scale[i];
    sum += d * d;
  }
  return std::sqrt(sum);
}

// The regrets say which variant was fastest for the problems the section's points were timed
// on (their precision, A or Aᵀ): "regret_when" names those features, and a problem that
// differs in one of them gets no regret term (f64's fastest variants are not f32's), only the
// ratio correction, whose formulas price the bytes themselves.
bool regret_applies(const nlohmann::json& section, const nlohmann::json& features) {
  if (!section.contains("regret_weight")) return false;
  // A boolean feature (transpose_a) compares as 0 or 1, as the writer's Python compares it.
  const auto number = [](const nlohmann::json& v) { return v.is_boolean() ? double(v.get<bool>()) : v.get<double>(); };
  for (const auto& [name, value] : section["regret_when"].items()) {
    const auto it = features.find(name);
    if (it == features.end() || !(it->is_number() || it->is_boolean()) || number(*it) != number(value)) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> neighbours_problem(const nlohmann::json& section) {
  if (!section.is_object()) return "\"neighbours\" is not an object";
  for (const char* key : {"features", "scale", "count", "softening", "points"})
    if (!section.contains(key)) return std::string("\"neighbours\" has no \"") + key + "\"";
  const nlohmann::json& names = section["features"];
  if (!names.is_array() || names.empty()) return "\"neighbours\": \"features\" is not a non-empty array of names";
  for (const auto& n : names)
    if (!n.is_string()) return "\"neighbours\": feature " + n.dump() + " is not a name";
  const nlohmann::json& scale = section["scale"];
  if (!scale.is_array() || scale.size() != names.size())
    return "\"neighbours\": \"scale\" is not an array of " + std::to_string(names.size()) + " numbers (one per feature)";
  for (const auto& s : scale)
    if (!finite_number(s) || s.get<double>() <= 0) return "\"neighbours\": scale " + s.dump() + " is not a positive number";
  if (!section["count"].is_number_integer() || section["count"].get<int64_t>() < 1)
    return "\"neighbours\": \"count\" " + section["count"].dump() + " is not an integer >= 1";
  if (!finite_number(section["softening"]) || section["softening"].get<double>() <= 0)
    return "\"neighbours\": \"softening\" " + section["softening"].dump() + " is not a positive number";
  const bool with_regret = section.contains("regret_weight");
  if (with_regret && (!finite_number(section["regret_weight"]) || section["regret_weight"].get<double>() < 0))
    return "\"neighbours\": \"regret_weight\" " + section["regret_weight"].dump() + " is not a number >= 0";
  if (with_regret && (!section.contains("regret_when") || !section["regret_when"].is_object()))
    return "\"neighbours\": a \"regret_weight\" needs a \"regret_when\" object (the features its timings share)";
  if (with_regret)
    for (const auto& [name, value] : section["regret_when"].items())
      if (!(finite_number(value) || value.is_boolean()))
        return "\"neighbours\": regret_when's " + name + " is " + value.dump() + ", not a number or a boolean";
  if (!section["points"].is_array()) return "\"neighbours\": \"points\" is not an array";
  for (std::size_t i = 0; i < section["points"].size(); ++i)
    if (auto problem = point_problem(section["points"][i], i, names.size(), with_regret)) return problem;
  return std::nullopt;
}

std::map<std::string, NeighbourCorrection> neighbour_factors(const nlohmann::json& model, const nlohmann::json& features) {
  std::map<std::string, NeighbourCorrection> factors;
  if (!model.contains("neighbours")) return factors;
  const nlohmann::json& section = model["neighbours"];
  const std::vector<double> scale = numbers(section["scale"]);  // read once, not once a point
  const std::vector<double> at = position(section, scale, features);
  const double regret_weight = regret_applies(section, features) ? section["regret_weight"].get<double>() : 0.0;
  // Each point's distance once, then what it says of each variant it timed.
  std::map<std::string, std::vector<NearPoint>> timed;
  for (const auto& point : section["points"]) {
    const double d = distance(at, point["at"], scale);
    for (const auto& [variant, ratio] : point["log_ratio"].items())
      timed[variant].push_back({d, ratio.get<double>(), regret_weight > 0 ? point["log_regret"][variant].get<double>() : 0.0});
  }
  const auto most = std::size_t(section["count"].get<int64_t>());
  const double softening = section["softening"].get<double>();
  for (auto& [variant, near] : timed) {
    const std::size_t count = std::min(near.size(), most);
    std::partial_sort(near.begin(), near.begin() + std::ptrdiff_t(count), near.end(),
                      [](const NearPoint& x, const NearPoint& y) {
                        return x.distance < y.distance || (x.distance == y.distance && x.log_ratio < y.log_ratio);
                      });
    double ratio = 0, regret = 0, weights = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const double w = 1.0 / (near[i].distance + softening);
      ratio += w * near[i].log_ratio;
      regret += w * near[i].log_regret;
      weights += w;
    }
    factors[variant] = {std::exp((ratio + regret_weight * regret) / weights), std::exp(regret_weight * regret / weights)};
  }
  return factors;
}

double neighbour_factor(const nlohmann::json& model, const std::string& variant, const nlohmann::json& features) {
  const std::map<std::string, NeighbourCorrection> factors = neighbour_factors(model, features);
  const auto it = factors.find(variant);
  return it == factors.end() ? 1.0 : it->second.factor;
}

}  // namespace sparsejit::models
