#include "tuner/decision_tree_trainer.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "sparsejit/error.hpp"

namespace sparsejit::tuner {

namespace {

using Indices = std::vector<std::size_t>;

struct Split {
  std::size_t feature = 0;
  double threshold = 0;
  double impurity = 0;  // weighted Gini of the two children
};

double gini(const std::map<double, int>& counts, int total) {
  if (total == 0) return 0;
  double sum_sq = 0;
  for (const auto& [_, c] : counts) sum_sq += double(c) * double(c);
  return 1.0 - sum_sq / (double(total) * double(total));
}

std::map<double, int> label_counts(const std::vector<TreeSample>& samples, const Indices& at) {
  std::map<double, int> counts;
  for (std::size_t i : at) ++counts[samples[i].label];
  return counts;
}

// Most frequent label; std::map iterates labels in increasing order, so a tie keeps the smaller.
double majority(const std::map<double, int>& counts) {
  double best = counts.begin()->first;
  int best_count = -1;
  for (const auto& [label, c] : counts)
    if (c > best_count) { best = label; best_count = c; }
  return best;
}

nlohmann::json label_json(double label) {
  if (label == std::floor(label) && std::fabs(label) < 9e15) return int64_t(label);
  return label;
}

// The best split of `at` on one feature: samples sorted by the feature, then every boundary
// between distinct values that leaves min_leaf samples on both sides.
bool best_split_on(const std::vector<TreeSample>& samples, Indices at, std::size_t feature, int min_leaf, Split& best) {
  std::sort(at.begin(), at.end(), [&](std::size_t a, std::size_t b) {
    return samples[a].features[feature] < samples[b].features[feature];
  });
  std::map<double, int> left, right = label_counts(samples, at);
  const int n = int(at.size());
  bool found = false;
  for (int i = 0; i + 1 < n; ++i) {
    const double label = samples[at[i]].label;
    ++left[label];
    if (--right[label] == 0) right.erase(label);
    const double here = samples[at[i]].features[feature], next = samples[at[i + 1]].features[feature];
    if (here == next || i + 1 < min_leaf || n - (i + 1) < min_leaf) continue;
    const double impurity = (double(i + 1) * gini(left, i + 1) + double(n - i - 1) * gini(right, n - i - 1)) / n;
    if (!found || impurity < best.impurity - 1e-12) {
      best = {feature, here + (next - here) / 2, impurity};
      found = true;
    }
  }
  return found;
}

nlohmann::json grow(const std::vector<TreeSample>& samples, const std::vector<std::string>& names, const Indices& at,
                    int depth_left, const TreeOptions& options) {
  const auto counts = label_counts(samples, at);
  const nlohmann::json leaf = {{"leaf", label_json(majority(counts))}, {"samples", at.size()}};
  if (counts.size() == 1 || depth_left == 0 || int(at.size()) < 2 * options.min_samples_leaf) return leaf;
  const double parent = gini(counts, int(at.size()));
  Split best;
  bool found = false;
  for (std::size_t f = 0; f < names.size(); ++f) {
    Split candidate;
    if (best_split_on(samples, at, f, options.min_samples_leaf, candidate) && (!found || candidate.impurity < best.impurity - 1e-12)) {
      best = candidate;
      found = true;
    }
  }
  if (!found || best.impurity >= parent - 1e-12) return leaf;  // no split separates anything
  Indices left, right;
  for (std::size_t i : at) (samples[i].features[best.feature] <= best.threshold ? left : right).push_back(i);
  return {{"feature", names[best.feature]},
          {"threshold", best.threshold},
          {"samples", at.size()},
          {"left", grow(samples, names, left, depth_left - 1, options)},
          {"right", grow(samples, names, right, depth_left - 1, options)}};
}

void check_samples(const std::vector<TreeSample>& samples, const std::vector<std::string>& names, const TreeOptions& options) {
  if (samples.empty()) throw InvalidInputError("tree trainer: no samples");
  if (options.max_depth < 0) throw InvalidInputError("tree trainer: max_depth " + std::to_string(options.max_depth) + " < 0");
  if (options.min_samples_leaf < 1)
    throw InvalidInputError("tree trainer: min_samples_leaf " + std::to_string(options.min_samples_leaf) + " < 1");
  for (std::size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].features.size() != names.size())
      throw InvalidInputError("tree trainer: sample " + std::to_string(i) + " has " + std::to_string(samples[i].features.size()) +
                              " features, expected " + std::to_string(names.size()));
    if (!std::isfinite(samples[i].label)) throw InvalidInputError("tree trainer: sample " + std::to_string(i) + " has a non-finite label");
    for (std::size_t f = 0; f < names.size(); ++f)
      if (!std::isfinite(samples[i].features[f]))
        throw InvalidInputError("tree trainer: sample " + std::to_string(i) + " feature " + names[f] + " is not finite");
  }
}

}  // namespace

nlohmann::json fit_tree(const std::vector<TreeSample>& samples, const std::vector<std::string>& feature_names,
                        const TreeOptions& options) {
  check_samples(samples, feature_names, options);
  Indices all(samples.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  return grow(samples, feature_names, all, options.max_depth, options);
}

int tree_depth(const nlohmann::json& tree) {
  if (!tree.is_object() || tree.contains("leaf") || !tree.contains("left")) return 0;
  return 1 + std::max(tree_depth(tree["left"]), tree_depth(tree["right"]));
}

}  // namespace sparsejit::tuner
