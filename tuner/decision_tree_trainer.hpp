// Our CART trainer for the decision trees the runtime evaluates (models/decision_tree.hpp).
// RS-SpMM 4.2 trains a classification tree (clustering bins and accumulations -> best
// threshold T); this is the same kind of tree: every split is `feature <= threshold`, chosen
// to minimize the weighted Gini impurity of the two children, and a leaf holds the most
// frequent label of its samples.
//
// Configuration defaults (TreeOptions):
//   max_depth        = 4  splits on the longest root-to-leaf path (0: the root is a leaf)
//   min_samples_leaf = 2  samples each child of a split must keep (Weka's J48 -M 2)
//
// Determinism: among equally good splits the earlier feature (in feature_names order) and
// then the smaller threshold wins; a leaf whose labels tie picks the smaller label. The same
// samples always give the same tree.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparsejit::tuner {

struct TreeSample {
  std::vector<double> features;  // one value per TreeOptions feature name, in that order
  double label = 0;              // the class (e.g. the best T); integral labels stay integers
};

struct TreeOptions {
  int max_depth = 4;
  int min_samples_leaf = 2;
};

// Trains a tree over samples whose features are named by feature_names. The JSON uses the
// evaluator's format ({"feature", "threshold", "left", "right"} / {"leaf"}), each node also
// carrying "samples" (how many training samples reached it). A split's threshold is the
// midpoint between the two neighbouring feature values it separates. Throws
// InvalidInputError when there are no samples, a sample has the wrong number of features,
// a value is not finite, or max_depth / min_samples_leaf is negative / below 1.
nlohmann::json fit_tree(const std::vector<TreeSample>& samples, const std::vector<std::string>& feature_names,
                        const TreeOptions& options = {});

// The depth of a tree in that format (a lone leaf has depth 0).
int tree_depth(const nlohmann::json& tree);

}  // namespace sparsejit::tuner
