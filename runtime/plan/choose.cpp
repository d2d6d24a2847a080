#include "plan/choose.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "models/cost_model.hpp"
#include "models/neighbour_correction.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::plan {

std::optional<ForcedChoice> forced_from_options(Op op, const Options& options) {
  if (!options.forces_variant()) return std::nullopt;
  return ForcedChoice{op, options.variant, options.params};
}

namespace {

// A forced value must have its default's kind, and an integer must fit the int the variants
// read it as: a string or 2^32 + 8 reaching a variant's check would escape as a JSON type
// error or wrap around to 8.
void check_kind(const std::string& variant, const std::string& key, const nlohmann::json& value, const nlohmann::json& def) {
  const auto refuse = [&](const char* expected) {
    throw InvalidInputError("variant " + variant + ": parameter " + key + " = " + value.dump() + " is not " + expected);
  };
  if (def.is_boolean() && !value.is_boolean()) refuse("true or false");
  if (def.is_string() && !value.is_string()) refuse("a string");
  if (def.is_number_float() && !value.is_number()) refuse("a number");
  if (def.is_number_integer()) {
    if (!value.is_number_integer()) refuse("an integer");
    const bool fits = value.is_number_unsigned()
                          ? value.get<uint64_t>() <= uint64_t(std::numeric_limits<int32_t>::max())
                          : value.get<int64_t>() >= std::numeric_limits<int32_t>::min() &&
                                value.get<int64_t>() <= std::numeric_limits<int32_t>::max();
    if (!fits) refuse("an integer in the range of int32");
  }
}

}  // namespace

nlohmann::json merge_params(const std::string& variant, const nlohmann::json& defaults, const nlohmann::json& forced) {
  nlohmann::json merged = defaults;
  for (const auto& [key, value] : forced.items()) {
    if (!defaults.contains(key)) {
      std::string known;
      for (const auto& [k, _] : defaults.items()) known += (known.empty() ? "" : ", ") + k;
      throw InvalidInputError("variant " + variant + " has no parameter '" + key + "' (it takes: " + (known.empty() ? "none" : known) + ")");
    }
    check_kind(variant, key, value, defaults[key]);
    merged[key] = value;
  }
  return merged;
}

namespace {

// The model's formula for the candidate's terms, times its variant's neighbour correction
// (models::neighbour_factors at the decision's features; none listed: 1).
void price(Candidate& c, const nlohmann::json& costs, const std::map<std::string, models::NeighbourCorrection>& corrections,
           const CostTerms& cost_terms) {
  c.terms = cost_terms(c.variant, c.params);
  if (!costs.contains(c.variant)) {
    c.predicted_ms = std::numeric_limits<double>::infinity();
    return;
  }
  const auto correction = corrections.find(c.variant);
  const models::NeighbourCorrection none;
  const models::NeighbourCorrection& found = correction == corrections.end() ? none : correction->second;
  c.correction = found.factor;
  c.regret = found.regret;
  c.predicted_ms = models::linear_cost(costs.at(c.variant), c.terms) * c.correction;
}

// Why the candidates were turned down, each reason once ("value type f16 not supported"
// for every variant reads as one line).
std::string distinct_reasons(const std::vector<Candidate>& candidates) {
  std::vector<std::string> reasons;
  for (const Candidate& c : candidates)
    if (std::find(reasons.begin(), reasons.end(), c.rejected_because) == reasons.end()) reasons.push_back(c.rejected_because);
  std::string text;
  for (const std::string& reason : reasons) text += (text.empty() ? "" : "; ") + reason;
  return text;
}

}  // namespace

void choose(Decision& decision, const std::vector<VariantSpec>& variants, const nlohmann::json& model,
            const CostTerms& cost_terms, const std::optional<ForcedChoice>& forced, const ParamsCheck& check_forced) {
  decision.model_id = model.value("id", "");
  decision.model_version = model.value("version", "");
  if (model.contains("measure_skip_margin")) decision.model_skip_margin = model["measure_skip_margin"].get<double>();
  const nlohmann::json& costs = model.at("cost");
  const std::map<std::string, models::NeighbourCorrection> corrections = models::neighbour_factors(model, decision.features);
  double best = std::numeric_limits<double>::infinity();
  const VariantSpec* chosen = nullptr;
  for (const auto& v : variants) {
    Candidate c{v.name, v.default_params, 0.0,
                v.rejected_because.empty() && !v.declined_because.empty() ? "runs only when forced: " + v.declined_because
                                                                           : v.rejected_because};
    if (c.rejected_because.empty()) {
      price(c, costs, corrections, cost_terms);
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
      c.rejected_because.clear();  // declined, maybe, but forced
      price(c, costs, corrections, cost_terms);
    }
    return;
  }
  if (chosen == nullptr)
    throw UnsupportedError(std::string("no ") + to_string(decision.op) + " variant can run this problem: " +
                           distinct_reasons(decision.candidates));
  decision.variant = chosen->name;
  decision.params = chosen->default_params;
  decision.source = DecisionSource::Model;
}

std::vector<TimedChoice> measured_shortlist(const Decision& decision, const std::string& vendor) {
  if (decision.source == DecisionSource::Forced) return {};
  std::vector<TimedChoice> list{{decision.variant, decision.params}};
  std::vector<const Candidate*> own;
  const Candidate* vendor_candidate = nullptr;
  for (const auto& c : decision.candidates) {
    if (!c.rejected_because.empty() || !std::isfinite(c.predicted_ms)) continue;
    if (c.variant == vendor) vendor_candidate = &c;
    else own.push_back(&c);
  }
  std::stable_sort(own.begin(), own.end(), [](const Candidate* a, const Candidate* b) { return a->predicted_ms < b->predicted_ms; });
  const bool chose_own = decision.variant != vendor;
  int own_count = chose_own ? 1 : 0;
  for (const Candidate* c : own) {
    if (own_count >= kShortlistOwn || c->predicted_ms > own.front()->predicted_ms * kShortlistSpread) break;
    if (c->variant == decision.variant && c->params == decision.params) continue;
    list.push_back({c->variant, c->params});
    ++own_count;
  }
  if (vendor_candidate != nullptr && chose_own) list.push_back({vendor_candidate->variant, vendor_candidate->params});
  if (list.size() < 2) return {};
  return list;
}

std::vector<TimedChoice> valid_neighbours(const std::string& variant, const nlohmann::json& centre,
                                          const std::vector<nlohmann::json>& changes,
                                          const std::function<void(const nlohmann::json&)>& check) {
  std::vector<TimedChoice> out;
  for (const nlohmann::json& change : changes) {
    nlohmann::json setting = centre;
    for (const auto& [key, value] : change.items()) setting[key] = value;
    if (setting == centre) continue;
    try {
      check(setting);
    } catch (const Error&) {
      continue;
    }
    out.push_back({variant, setting});
  }
  return out;
}

std::vector<TimedChoice> next_round(const std::vector<TimedChoice>& timed,
                                    const std::function<std::vector<TimedChoice>(const TimedChoice&)>& neighbors) {
  std::vector<const TimedChoice*> leaders;
  for (const auto& t : timed)
    if (std::isfinite(t.ms)) leaders.push_back(&t);
  std::stable_sort(leaders.begin(), leaders.end(), [](const TimedChoice* x, const TimedChoice* y) { return x->ms < y->ms; });
  if (leaders.size() > std::size_t(kNeighbourLeaders)) leaders.resize(kNeighbourLeaders);
  std::vector<TimedChoice> round;
  const auto known = [&](const TimedChoice& n) {
    const auto same = [&](const TimedChoice& t) { return t.variant == n.variant && t.params == n.params; };
    return std::any_of(timed.begin(), timed.end(), same) || std::any_of(round.begin(), round.end(), same);
  };
  for (const TimedChoice* leader : leaders)
    for (TimedChoice& n : neighbors(*leader))
      if (!known(n)) round.push_back(std::move(n));
  return round;
}

namespace {

bool eligible(const Decision& decision, const std::string& variant) {
  return std::any_of(decision.candidates.begin(), decision.candidates.end(),
                     [&](const Candidate& c) { return c.variant == variant && c.rejected_because.empty(); });
}

}  // namespace

const Candidate* chosen_candidate(const Decision& decision) {
  for (const Candidate& c : decision.candidates)
    if (c.variant == decision.variant) return &c;
  return nullptr;
}

bool take_fastest(Decision& decision, const std::vector<TimedChoice>& times, const std::string& vendor, double vendor_margin,
                  DecisionSource source) {
  const TimedChoice* best = nullptr;
  const TimedChoice* fastest_vendor = nullptr;
  for (const auto& t : times) {
    if (!std::isfinite(t.ms)) continue;
    if (best == nullptr || t.ms < best->ms * (1 - kTieTolerance)) best = &t;
    if (t.variant == vendor && (fastest_vendor == nullptr || t.ms < fastest_vendor->ms)) fastest_vendor = &t;
  }
  if (best == nullptr) return false;
  if (fastest_vendor != nullptr && best->ms > fastest_vendor->ms * (1 - vendor_margin)) best = fastest_vendor;
  if (!eligible(decision, best->variant)) return false;
  for (const auto& t : times) {
    if (!std::isfinite(t.ms)) continue;
    bool matched = false;
    for (auto& c : decision.candidates) {
      if (c.variant != t.variant || c.params != t.params) continue;
      c.measured_ms = t.ms;
      matched = true;
    }
    if (!matched) {  // a setting the planner did not price (a neighbour, a tuned choice)
      Candidate timed{t.variant, t.params, std::numeric_limits<double>::quiet_NaN(), ""};
      timed.measured_ms = t.ms;
      decision.candidates.push_back(timed);
    }
  }
  decision.variant = best->variant;
  decision.params = best->params;
  decision.source = source;
  return true;
}

}  // namespace sparsejit::plan
