#include "models/decision_tree.hpp"

#include "sparsejit/error.hpp"

namespace sparsejit::models {

namespace {

void check_node(const nlohmann::json& node, const std::string& where) {
  if (!node.is_object()) throw InvalidInputError("decision tree node " + where + " is not an object");
  if (node.contains("leaf")) return;
  if (!node.contains("feature") || !node["feature"].is_string())
    throw InvalidInputError("decision tree node " + where + " has neither \"leaf\" nor a \"feature\" name");
  if (!node.contains("threshold") || !node["threshold"].is_number())
    throw InvalidInputError("decision tree node " + where + " (" + node["feature"].get<std::string>() + ") has no numeric threshold");
  if (!node.contains("left") || !node.contains("right"))
    throw InvalidInputError("decision tree node " + where + " lacks a left or right child");
}

}  // namespace

void validate_tree(const nlohmann::json& tree) {
  std::vector<std::pair<const nlohmann::json*, std::string>> stack{{&tree, "root"}};
  while (!stack.empty()) {
    auto [node, where] = stack.back();
    stack.pop_back();
    check_node(*node, where);
    if (node->contains("leaf")) continue;
    stack.emplace_back(&(*node)["left"], where + ".left");
    stack.emplace_back(&(*node)["right"], where + ".right");
  }
}

TreeResult evaluate_tree(const nlohmann::json& tree, const nlohmann::json& features) {
  TreeResult result;
  const nlohmann::json* node = &tree;
  std::string where = "root";
  while (true) {
    check_node(*node, where);
    if (node->contains("leaf")) {
      result.leaf = (*node)["leaf"];
      return result;
    }
    const std::string feature = (*node)["feature"].get<std::string>();
    if (!features.contains(feature) || !features[feature].is_number())
      throw InvalidInputError("decision tree node " + where + " needs feature '" + feature + "', which the planner did not provide");
    DecisionStep step;
    step.feature = feature;
    step.value = features[feature].get<double>();
    step.comparison = "<=";
    step.threshold = (*node)["threshold"].get<double>();
    step.taken = step.value <= step.threshold;
    result.path.push_back(step);
    node = &(*node)[step.taken ? "left" : "right"];
    where += step.taken ? ".left" : ".right";
  }
}

}  // namespace sparsejit::models
