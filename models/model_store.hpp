// Where models come from: the defaults shipped in models/*.json (embedded in the library).
// Tuned models of this device, when the tuner has written them, override these by name
// (cache/ holds them; the planner asks the cache first, then falls back here).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparsejit::models {

// The shipped model `name` (file models/<name>.json); throws InvalidInputError listing the
// known names when there is none. Parsed once per process.
const nlohmann::json& shipped_model(const std::string& name);
std::vector<std::string> shipped_model_names();

}  // namespace sparsejit::models
