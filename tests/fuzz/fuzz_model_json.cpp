// A model as the planner reads it from the cache database (a tuned model is JSON written by
// the tuner, and a damaged or hand-edited one must not crash a call): parsed, checked as
// ops/plan_sources.cpp checks it (models::model_problem), then, when accepted, its trees
// evaluated and every cost formula priced with its neighbour correction, as the planners do.
// Each step returns or throws a sparsejit::Error; anything else is a finding.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "models/model_check.hpp"
#include "models/neighbour_correction.hpp"
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
  // Refused as ops/plan_sources.cpp refuses it (without the shipped models, which this build
  // does not embed: every launch value must then be a number).
  if (sparsejit::models::model_problem(model, nlohmann::json())) return 0;
  for (const char* tree : {"tree", "threshold_tree"}) {
    if (!model.contains(tree)) continue;
    try {
      sparsejit::models::evaluate_tree(model[tree], features());
    } catch (const sparsejit::Error&) {
    }
  }
  if (model.contains("launch"))
    for (const auto& [variant, values] : model["launch"].items())
      for (const auto& [key, value] : values.items()) (void)value.get<int64_t>();  // as launch_value reads them
  for (const auto& [variant, coefficients] : model["cost"].items()) {
    try {
      sparsejit::models::linear_cost(coefficients, features());
      sparsejit::models::neighbour_factor(model, variant, features());
    } catch (const sparsejit::Error&) {
    }
  }
  return 0;
}
