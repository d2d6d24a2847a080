// A model as the planner reads it from the cache database (a tuned model is JSON written by
// the tuner, and a damaged or hand-edited one must not crash a call): parsed, accepted as
// ops/plan_sources.cpp accepts it (an object with a "cost" object), then its tree validated
// and evaluated and every cost formula priced, as the planners do. Each step returns or
// throws a sparsejit::Error; anything else is a finding.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "sparsejit/error.hpp"

namespace {

// Feature and term values as a planner provides them (names from the shipped models).
const nlohmann::json& features() {
  static const nlohmann::json f = {{"k", 128},        {"rows", 1000},       {"cols", 1000},    {"nnz", 20000},
                                   {"row_cv", 0.5},   {"density", 0.02},    {"tile_fill", 0.1}, {"value_bytes", 4},
                                   {"row_max", 64},   {"pattern_reused", 0}};
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const nlohmann::json model = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (!model.is_object() || !model.contains("cost") || !model["cost"].is_object()) return 0;
  if (model.contains("tree")) {
    try {
      sparsejit::models::validate_tree(model["tree"]);
    } catch (const sparsejit::Error&) {
    }
    try {
      sparsejit::models::evaluate_tree(model["tree"], features());
    } catch (const sparsejit::Error&) {
    }
  }
  for (const auto& [variant, coefficients] : model["cost"].items()) {
    try {
      sparsejit::models::linear_cost(coefficients, features());
    } catch (const sparsejit::Error&) {
    }
  }
  return 0;
}
