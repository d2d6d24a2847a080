// Decision trees stored as JSON and evaluated by the runtime (the trainer lives in tuner/).
//
// A node is either a leaf {"leaf": <any JSON value>} or a split
// {"feature": "<feature key>", "threshold": <number>, "left": <node>, "right": <node>}:
// `left` is taken when feature <= threshold, `right` otherwise. Feature keys are those of
// to_json(Features) plus the per-call values the planner adds (e.g. "k").
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/decision.hpp"

namespace sparsejit::models {

struct TreeResult {
  nlohmann::json leaf;
  std::vector<DecisionStep> path;
};

// Throws InvalidInputError naming the node path when the tree is malformed or a feature it
// asks for is missing from `features`.
TreeResult evaluate_tree(const nlohmann::json& tree, const nlohmann::json& features);

// Checks a tree's structure without evaluating it (every split has a numeric threshold and
// two children); throws InvalidInputError naming the bad node.
void validate_tree(const nlohmann::json& tree);

}  // namespace sparsejit::models
