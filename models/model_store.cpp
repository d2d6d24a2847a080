#include "models/model_store.hpp"

#include <map>
#include <mutex>

#include "models/embedded_models.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::models {

namespace {

const std::map<std::string, nlohmann::json>& parsed_models() {
  static const std::map<std::string, nlohmann::json> all = [] {
    std::map<std::string, nlohmann::json> out;
    for (const auto& file : embedded_models()) {
      try {
        out[file.name] = nlohmann::json::parse(file.text);
      } catch (const nlohmann::json::parse_error& e) {
        throw InvalidInputError(std::string("shipped model models/") + file.name + ".json: " + e.what());
      }
    }
    return out;
  }();
  return all;
}

}  // namespace

const nlohmann::json& shipped_model(const std::string& name) {
  const auto& all = parsed_models();
  const auto it = all.find(name);
  if (it != all.end()) return it->second;
  std::string known;
  for (const auto& [n, _] : all) known += (known.empty() ? "" : ", ") + n;
  throw InvalidInputError("no shipped model '" + name + "' (known: " + known + ")");
}

std::vector<std::string> shipped_model_names() {
  std::vector<std::string> names;
  for (const auto& [n, _] : parsed_models()) names.push_back(n);
  return names;
}

}  // namespace sparsejit::models
