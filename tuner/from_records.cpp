#include "tuner/from_records.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "base/sha256.hpp"
#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "models/neighbour_correction.hpp"
#include "ops/plan_sources.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::tuner {

namespace {

// A tune record is one candidate of the case its params name; a measured selection is a case
// of its own.
std::string case_of(const cache::TuningRecord& r) {
  if (r.kind == cache::RecordKind::Measured) return r.fingerprint + " " + r.plan_key;
  const auto on = r.params.find(plan::kMeasuredOn);
  if (on != r.params.end() && on->is_object() && on->contains("case") && (*on)["case"].is_string())
    return (*on)["case"].get<std::string>();
  return r.fingerprint + " " + r.feature_bucket;
}

// An integer feature, or `fallback` when the record lacks it (or holds something else).
int int_feature(const nlohmann::json& features, const char* key, int fallback) {
  const auto it = features.find(key);
  return it != features.end() && it->is_number() ? it->get<int>() : fallback;
}

DType dtype_of_bytes(int bytes) { return bytes == 8 ? DType::F64 : bytes == 2 ? DType::F16 : DType::F32; }

Measurement to_measurement(const cache::TuningRecord& r, const std::string& case_id, const plan::RecordedTiming& t) {
  Measurement m;
  m.case_id = case_id;
  m.matrix = case_id.substr(0, case_id.find(' '));
  m.k = int_feature(r.features, "k", 0);
  m.dtype = dtype_of_bytes(int_feature(r.features, "value_bytes", 4));
  m.features = r.features;
  m.variant = t.variant;
  m.params = t.params;
  m.ok = std::isfinite(t.ms) && t.ms > 0 && (r.kind == cache::RecordKind::Measured || r.checked);
  m.time_ms = m.ok ? t.ms : 0;
  m.predicted_ms = std::isfinite(t.predicted_ms) ? t.predicted_ms : 0;
  m.terms = t.terms;
  return m;
}

// The model's neighbour correction of every variant at a case's features, in one pass for all
// of the case's settings (they share the pattern and K); nullopt when the features lack one the
// correction reads, so that none of the case is priced.
std::optional<std::map<std::string, models::NeighbourCorrection>> case_corrections(const nlohmann::json& model, const nlohmann::json& features) {
  try {
    return models::neighbour_factors(model, features);
  } catch (const Error&) {
    return std::nullopt;
  }
}

// The model's price of a measurement from its stored terms, as the planner prices it (times its
// variant's neighbour correction); nullopt when it cannot be priced.
std::optional<double> price(const nlohmann::json& model, const std::optional<std::map<std::string, models::NeighbourCorrection>>& corrections,
                            const Measurement& m) {
  const nlohmann::json& cost = model.value("cost", nlohmann::json::object());
  if (m.terms.empty() || !cost.contains(m.variant) || !corrections) return std::nullopt;
  const auto correction = corrections->find(m.variant);
  try {
    return models::linear_cost(cost.at(m.variant), m.terms) * (correction == corrections->end() ? 1.0 : correction->second.factor);
  } catch (const Error&) {
    return std::nullopt;  // a term the coefficients need is missing from the record
  }
}

// The variant SDDMM's tree names for these features (the planner runs the tree's leaf when it
// can); nullopt for SpMM, whose planner has no variant tree, or a model without one.
std::optional<std::string> tree_variant(Op op, const nlohmann::json& model, const nlohmann::json& features) {
  if (op != Op::SDDMM || !model.contains("tree")) return std::nullopt;
  try {
    const nlohmann::json leaf = models::evaluate_tree(model["tree"], features).leaf;
    if (leaf.is_string()) return leaf.get<std::string>();
  } catch (const Error&) {
    // a feature the tree asks for is missing from the record: no leaf
  }
  return std::nullopt;
}

std::map<std::string, std::vector<const Measurement*>> by_case(const std::vector<Measurement>& ms) {
  std::map<std::string, std::vector<const Measurement*>> groups;
  for (const Measurement& m : ms) groups[m.case_id].push_back(&m);
  return groups;
}

}  // namespace

std::vector<Measurement> measurements_from_records(const std::vector<cache::TuningRecord>& records, int& skipped) {
  // Newest per case and setting: a case measured again (tune --restart, two processes that
  // measured one pattern at once) counts once. Records come oldest first.
  std::map<std::string, Measurement> newest;
  std::vector<std::string> order;
  for (const cache::TuningRecord& r : records) {
    if (r.features.empty()) {
      ++skipped;
      continue;
    }
    const std::string case_id = case_of(r);
    for (const plan::RecordedTiming& t : plan::recorded_timings(r)) {
      const std::string key = case_id + "\n" + t.variant + "\n" + t.params.dump();
      if (newest.count(key) == 0) order.push_back(key);
      newest[key] = to_measurement(r, case_id, t);
    }
  }
  std::vector<Measurement> out;
  for (const std::string& key : order) out.push_back(std::move(newest[key]));
  return out;
}

std::string pattern_of(const Measurement& m) { return m.case_id.substr(0, m.case_id.find(' ')); }

PatternSplit split_by_pattern(const std::vector<Measurement>& measurements) {
  std::map<std::string, std::string> by_hash;  // sha256 of the pattern -> pattern: a stable, scattered order
  for (const Measurement& m : measurements) by_hash[sha256_hex(pattern_of(m))] = pattern_of(m);
  std::set<std::string> held;
  std::size_t index = 0;
  if (by_hash.size() >= 2)
    for (const auto& [_, pattern] : by_hash)
      if (index++ % kHoldOutEvery == 0) held.insert(pattern);
  PatternSplit split;
  split.held_out_patterns = held.size();
  split.held_out_set = held;
  split.training_patterns = by_hash.size() - held.size();
  for (const Measurement& m : measurements) (held.count(pattern_of(m)) ? split.held_out : split.training).push_back(m);
  return split;
}

const Measurement* model_pick(Op op, const nlohmann::json& model, const std::vector<const Measurement*>& group) {
  std::vector<const Measurement*> correct;
  for (const Measurement* m : group)
    if (m->ok) correct.push_back(m);
  if (correct.empty()) return nullptr;
  std::vector<const Measurement*> eligible;
  const std::optional<std::string> named = tree_variant(op, model, correct.front()->features);
  if (named)
    for (const Measurement* m : correct)
      if (m->variant == *named) eligible.push_back(m);
  const bool tree_named = !eligible.empty();
  if (!tree_named) eligible = correct;
  const Measurement* pick = nullptr;
  double cheapest = std::numeric_limits<double>::infinity();
  const auto corrections = case_corrections(model, correct.front()->features);
  for (const Measurement* m : eligible) {
    const std::optional<double> cost = price(model, corrections, *m);
    if (cost && *cost < cheapest) {
      cheapest = *cost;
      pick = m;
    }
  }
  if (pick == nullptr && tree_named) pick = eligible.front();
  return pick;
}

PredictionScore score_model(Op op, const nlohmann::json& model, const std::vector<Measurement>& cases) {
  PredictionScore score;
  for (const auto& [_, group] : by_case(cases)) {
    double best = std::numeric_limits<double>::infinity();
    int correct = 0;
    for (const Measurement* m : group)
      if (m->ok) {
        best = std::min(best, m->time_ms);
        ++correct;
      }
    if (correct < 2) continue;  // one correct setting: any pick is the best
    ++score.cases;
    const Measurement* pick = model_pick(op, model, group);
    const double ratio = pick ? pick->time_ms / best : std::numeric_limits<double>::infinity();
    if (ratio <= kWithinOfBest) ++score.within;
    score.worst = std::max(score.worst, ratio);
  }
  return score;
}

RetrainSummary retrain_from_records(cache::CacheStore& store, const cache::DeviceKey& device, Op op,
                                    const nlohmann::json& current) {
  if (op != Op::SpMM && op != Op::SDDMM)
    throw UnsupportedError(std::string("tune --from-records: ") + to_string(op) + " has no tuned model (spmm and sddmm do)");
  RetrainSummary s;
  const std::vector<cache::TuningRecord> records = store.device_records(device, to_string(op));
  s.records = int(records.size());
  const PatternSplit split = split_by_pattern(measurements_from_records(records, s.skipped));
  s.training_patterns = split.training_patterns;
  s.held_out_patterns = split.held_out_patterns;
  s.held_out.assign(split.held_out_set.begin(), split.held_out_set.end());
  if (split.held_out_patterns == 0) {
    s.notes.push_back("not retrained: records of " + std::to_string(split.training_patterns) +
                      " pattern(s) with features; holding patterns out needs at least 2");
    return s;
  }
  s.before = score_model(op, current, split.held_out);
  try {
    s.model = op == Op::SpMM ? train_spmm_model(split.training, current, device.device_name)
                             : train_sddmm_model(split.training, current, device.device_name);
  } catch (const Error& e) {
    s.notes.push_back(std::string("not retrained: ") + e.what());
    return s;
  }
  s.trained = true;
  s.model.model["description"] = s.model.model.value("description", std::string()) +
                                 " Retrained from tuning records by `sparsejit tune --from-records`.";
  s.after = score_model(op, s.model.model, split.held_out);
  if (s.after.cases > 0 && s.after.rate() > s.before.rate()) {
    store.put_model({plan::tuned_model_name(op), 1, device, s.model.model, 0});
    ops::forget_tuned_lookups();
    s.stored = true;
  }
  return s;
}

}  // namespace sparsejit::tuner
