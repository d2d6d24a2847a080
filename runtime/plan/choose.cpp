#include "plan/choose.hpp"

#include <limits>

#include "models/cost_model.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::plan {

nlohmann::json merge_params(const std::string& variant, const nlohmann::json& defaults, const nlohmann::json& forced) {
  nlohmann::json merged = defaults;
  for (const auto& [key, value] : forced.items()) {
    if (!defaults.contains(key)) {
      std::string known;
      for (const auto& [k, _] : defaults.items()) known += (known.empty() ? "" : ", ") + k;
      throw InvalidInputError("variant " + variant + " has no parameter '" + key + "' (it takes: " + (known.empty() ? "none" : known) + ")");
    }
    merged[key] = value;
  }
  return merged;
}

namespace {

void price(Candidate& c, const nlohmann::json& costs, const CostTerms& cost_terms) {
  c.terms = cost_terms(c.variant, c.params);
  c.predicted_ms = costs.contains(c.variant) ? models::linear_cost(costs.at(c.variant), c.terms)
                                             : std::numeric_limits<double>::infinity();
}

}  // namespace

void choose(Decision& decision, const std::vector<VariantSpec>& variants, const nlohmann::json& model,
            const CostTerms& cost_terms, const std::optional<ForcedChoice>& forced, const ParamsCheck& check_forced) {
  decision.model_id = model.value("id", "");
  decision.model_version = model.value("version", "");
  const nlohmann::json& costs = model.at("cost");
  double best = std::numeric_limits<double>::infinity();
  const VariantSpec* chosen = nullptr;
  for (const auto& v : variants) {
    Candidate c{v.name, v.default_params, 0.0, v.rejected_because};
    if (c.rejected_because.empty()) {
      price(c, costs, cost_terms);
      if (c.predicted_ms < best) { best = c.predicted_ms; chosen = &v; }
    }
    decision.candidates.push_back(c);
  }
  if (forced) {
    const VariantSpec* match = nullptr;
    for (const auto& v : variants) if (v.name == forced->variant) match = &v;
    if (match == nullptr) {
      std::string known;
      for (const auto& v : variants) known += (known.empty() ? "" : ", ") + v.name;
      throw InvalidInputError(std::string("unknown ") + to_string(decision.op) + " variant '" + forced->variant + "' (known: " + known + ")");
    }
    if (!match->rejected_because.empty())
      throw UnsupportedError(std::string(to_string(decision.op)) + " variant " + match->name + " cannot run this problem: " + match->rejected_because);
    decision.variant = match->name;
    decision.params = merge_params(match->name, match->default_params, forced->params);
    decision.source = DecisionSource::Forced;
    if (check_forced) check_forced(decision.variant, decision.params);
    for (auto& c : decision.candidates) {
      if (c.variant != decision.variant) continue;
      c.params = decision.params;
      price(c, costs, cost_terms);
    }
    return;
  }
  if (chosen == nullptr) throw UnsupportedError(std::string("no ") + to_string(decision.op) + " variant can run this problem");
  decision.variant = chosen->name;
  decision.params = chosen->default_params;
  decision.source = DecisionSource::Model;
}

}  // namespace sparsejit::plan
