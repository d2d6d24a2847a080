#include "models/model_check.hpp"

#include "models/decision_tree.hpp"
#include "models/neighbour_correction.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::models {
namespace {

// Whether `shipped`[section][name][key] is a string.
bool shipped_string(const nlohmann::json& shipped, const char* section, const std::string& name, const std::string& key) {
  return shipped.is_object() && shipped.contains(section) && shipped[section].is_object() && shipped[section].contains(name) &&
         shipped[section][name].is_object() && shipped[section][name].contains(key) && shipped[section][name][key].is_string();
}

// "section" is an object whose every entry is an object of numbers (or of strings where the
// shipped model has a string).
std::optional<std::string> table_problem(const nlohmann::json& model, const nlohmann::json& shipped, const char* section) {
  const nlohmann::json& table = model[section];
  if (!table.is_object()) return std::string("\"") + section + "\" is not an object";
  for (const auto& [name, entry] : table.items()) {
    if (!entry.is_object()) return std::string("\"") + section + "\" entry '" + name + "' is not an object";
    for (const auto& [key, value] : entry.items()) {
      const bool string = shipped_string(shipped, section, name, key);
      if (string ? !value.is_string() : !value.is_number())
        return std::string("\"") + section + "\" entry '" + name + "': '" + key + "' is not a " + (string ? "string" : "number");
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> model_problem(const nlohmann::json& model, const nlohmann::json& shipped) {
  if (!model.is_object()) return "the model is not a JSON object";
  for (const char* text : {"id", "version"})
    if (model.contains(text) && !model[text].is_string()) return std::string("\"") + text + "\" is not a string";
  if (!model.contains("cost")) return "no \"cost\" section";
  if (auto problem = table_problem(model, shipped, "cost")) return problem;
  if (model.contains("launch"))
    if (auto problem = table_problem(model, shipped, "launch")) return problem;
  if (model.contains("neighbours"))
    if (auto problem = neighbours_problem(model["neighbours"])) return problem;
  if (model.contains("measure_skip_margin")) {
    const nlohmann::json& margin = model["measure_skip_margin"];
    if (!margin.is_number() || !(margin.get<double>() >= 1))
      return "\"measure_skip_margin\" " + margin.dump() + " is not a number >= 1";
  }
  for (const char* tree : {"tree", "threshold_tree"}) {
    if (!model.contains(tree)) continue;
    try {
      validate_tree(model[tree]);
    } catch (const InvalidInputError& e) {
      return std::string("\"") + tree + "\": " + e.what();
    }
  }
  return std::nullopt;
}

}  // namespace sparsejit::models
