#include "models/neighbour_correction.hpp"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "sparsejit/error.hpp"

namespace sparsejit::models {
namespace {

bool finite_number(const nlohmann::json& v) { return v.is_number() && std::isfinite(v.get<double>()); }

std::optional<std::string> point_problem(const nlohmann::json& point, std::size_t index, std::size_t dimensions) {
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
  return std::nullopt;
}

// The log position of `features` along the section's features, each divided by its scale.
std::vector<double> position(const nlohmann::json& section, const nlohmann::json& features) {
  const nlohmann::json& names = section["features"];
  const nlohmann::json& scale = section["scale"];
  std::vector<double> at;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string name = names[i].get<std::string>();
    if (!features.contains(name) || !features[name].is_number())
      throw InvalidInputError("the model's neighbour correction needs feature '" + name + "', which the planner did not provide");
    at.push_back(std::log(std::max(features[name].get<double>(), kFeatureFloor)) / scale[i].get<double>());
  }
  return at;
}

double distance(const std::vector<double>& at, const nlohmann::json& point, const nlohmann::json& scale) {
  double sum = 0;
  for (std::size_t i = 0; i < at.size(); ++i) {
    const double d = at[i] - point[i].get<double>() / scale[i].get<double>();
    sum += d * d;
  }
  return std::sqrt(sum);
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
  if (!section["points"].is_array()) return "\"neighbours\": \"points\" is not an array";
  for (std::size_t i = 0; i < section["points"].size(); ++i)
    if (auto problem = point_problem(section["points"][i], i, names.size())) return problem;
  return std::nullopt;
}

double neighbour_factor(const nlohmann::json& model, const std::string& variant, const nlohmann::json& features) {
  if (!model.contains("neighbours")) return 1.0;
  const nlohmann::json& section = model["neighbours"];
  const std::vector<double> at = position(section, features);
  std::vector<std::pair<double, double>> timed;  // (distance, log ratio) of the points that timed the variant
  for (const auto& point : section["points"]) {
    const nlohmann::json& ratios = point["log_ratio"];
    if (ratios.contains(variant)) timed.emplace_back(distance(at, point["at"], section["scale"]), ratios[variant].get<double>());
  }
  if (timed.empty()) return 1.0;
  const std::size_t count = std::min(timed.size(), std::size_t(section["count"].get<int64_t>()));
  std::partial_sort(timed.begin(), timed.begin() + std::ptrdiff_t(count), timed.end());
  const double softening = section["softening"].get<double>();
  double weighted = 0, weights = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const double w = 1.0 / (timed[i].first + softening);
    weighted += w * timed[i].second;
    weights += w;
  }
  return std::exp(weighted / weights);
}

}  // namespace sparsejit::models
