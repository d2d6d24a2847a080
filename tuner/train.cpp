#include "tuner/train.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "plan/spmm_params.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "tuner/decision_tree_trainer.hpp"
#include "tuner/least_squares.hpp"
#include "variants/catalog.hpp"

namespace sparsejit::tuner {

const std::vector<std::string> kThresholdTreeFeatures = {
    "cluster_frac_0", "cluster_frac_1", "cluster_frac_2", "cluster_frac_3", "cluster_frac_4", "cluster_frac_5",
    "cluster_frac_6", "cluster_frac_7", "cluster_frac_8", "cluster_frac_9", "cluster_frac_10", "cluster_frac_11",
    "accumulations_per_nnz", "row_mean", "row_cv", "k", "value_bytes"};

// What the pattern is (fill of the dense tiles the dense_tile kernel would run, row lengths,
// density, size) and the problem (K, value size).
const std::vector<std::string> kSddmmTreeFeatures = {"tile_fill", "row_mean", "row_cv", "density", "nnz", "k", "value_bytes"};

std::vector<std::string> sddmm_tree_variants() {
  std::vector<std::string> leaves;
  for (const variants::VariantInfo& v : variants::catalog(Op::SDDMM))
    if (v.traits.tree_leaf) leaves.push_back(v.name);
  return leaves;
}

namespace {

using namespace plan::spmm_param;
using Group = std::vector<const Measurement*>;

// The fastest correct measurement of a case; within the tie tolerance the tie-break order wins.
const Measurement* case_winner(const Group& group) {
  double best = 0;
  for (const Measurement* m : group)
    if (m->ok && (best == 0 || m->time_ms < best)) best = m->time_ms;
  const Measurement* winner = nullptr;
  for (const Measurement* m : group) {
    if (!m->ok || m->time_ms > best * (1 + plan::kTieTolerance)) continue;
    if (!winner || plan::tie_break_before(m->variant, m->params, winner->variant, winner->params)) winner = m;
  }
  return winner;
}

std::map<std::string, Group> by_case(const std::vector<const Measurement*>& ms) {
  std::map<std::string, Group> groups;
  for (const Measurement* m : ms) groups[m->case_id].push_back(m);
  return groups;
}

// The most frequent value; a tie keeps the smaller one.
int mode(const std::map<int, int>& counts) {
  int best = counts.begin()->first, best_count = -1;
  for (const auto& [value, c] : counts)
    if (c > best_count) { best = value; best_count = c; }
  return best;
}

int param(const Measurement& m, const char* name) {
  if (!m.params.contains(name) || !m.params[name].is_number_integer())
    throw InvalidInputError("rs measurement of " + m.matrix + " lacks integer parameter " + name + ": " + m.params.dump());
  return m.params[name].get<int>();
}

double feature(const Measurement& m, const std::string& name) {
  if (!m.features.contains(name) || !m.features[name].is_number())
    throw InvalidInputError("measurement of " + m.matrix + " lacks feature " + name);
  return m.features[name].get<double>();
}

std::vector<const Measurement*> select(const std::vector<const Measurement*>& ms, const std::function<bool(const Measurement&)>& keep) {
  std::vector<const Measurement*> out;
  for (const Measurement* m : ms)
    if (keep(*m)) out.push_back(m);
  return out;
}

// C1,v and C2,v of one CF_V from its phase-1 measurements.
std::optional<nlohmann::json> fit_cf_v_cost(const std::vector<const Measurement*>& ms, int cf_v, std::vector<std::string>& notes) {
  auto heavy_only = select(ms, [](const Measurement& m) {
    return m.ok && m.heavy_nnz >= 0 && double(m.heavy_nnz) >= 0.95 * feature(m, "nnz") && m.heavy_segments > 0;
  });
  if (heavy_only.size() < 2) heavy_only = select(ms, [](const Measurement& m) { return m.ok && m.heavy_nnz >= 0; });
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (const Measurement* m : heavy_only) {
    rows.push_back({double(m->heavy_segments), double(m->heavy_nnz)});
    y.push_back(m->time_ms);
  }
  try {
    const std::vector<double> c = least_squares(rows, y);
    return nlohmann::json{{"acc_dense", c[0]}, {"nnz_d", c[1]}, {"samples", rows.size()}};
  } catch (const InvalidInputError& e) {
    notes.push_back("CF_V=" + std::to_string(cf_v) + ": no cost fit (" + e.what() + ")");
    return std::nullopt;
  }
}

// One value type's phases; its threshold tree samples are also appended to all_samples.
nlohmann::json train_rs_dtype(const std::vector<const Measurement*>& rs, const std::string& dtype, std::vector<TreeSample>& all_samples,
                              std::vector<std::string>& notes) {
  std::map<int, int> cf_h_votes;
  for (const auto& [_, group] : by_case(rs))
    if (const Measurement* w = case_winner(group)) ++cf_h_votes[param(*w, kCfH)];
  if (cf_h_votes.empty()) return nullptr;
  const int cf_h = mode(cf_h_votes);

  const auto phase1 = select(rs, [&](const Measurement& m) { return param(m, kCfH) == cf_h; });
  std::map<int, int> cf_v_votes;
  for (const auto& [_, group] : by_case(phase1))
    if (const Measurement* w = case_winner(group)) ++cf_v_votes[param(*w, kCfV)];
  const int cf_v = mode(cf_v_votes);

  std::vector<TreeSample> samples;
  for (const auto& [_, group] : by_case(select(phase1, [&](const Measurement& m) { return param(m, kCfV) == cf_v; }))) {
    const Measurement* w = case_winner(group);
    if (!w) continue;
    TreeSample s;
    for (const auto& name : kThresholdTreeFeatures) s.features.push_back(feature(*w, name));
    s.label = param(*w, kThreshold);
    samples.push_back(std::move(s));
  }
  all_samples.insert(all_samples.end(), samples.begin(), samples.end());
  nlohmann::json out = {{"cf_h", cf_h}, {"cf_v", cf_v}, {"tree_samples", samples.size()}};
  if (!samples.empty()) out["threshold_tree"] = fit_tree(samples, kThresholdTreeFeatures);
  nlohmann::json costs = nlohmann::json::object();
  std::set<int> cf_vs;
  for (const Measurement* m : phase1) cf_vs.insert(param(*m, kCfV));
  for (int v : cf_vs)
    if (auto c = fit_cf_v_cost(select(phase1, [&](const Measurement& m) { return param(m, kCfV) == v; }), v, notes))
      costs[std::to_string(v)] = *c;
  out["cf_v_cost"] = costs;
  notes.push_back(dtype + ": CF_H=" + std::to_string(cf_h) + " (paper: " + (dtype == "f64" ? "1" : "2") + "), CF_V=" +
                  std::to_string(cf_v) + ", threshold tree from " + std::to_string(samples.size()) + " matrices");
  return out;
}

std::string format_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, std::fabs(x) < 1e-2 && x != 0 ? "%.1e" : "%.3g", x);
  return text;
}

nlohmann::json tuned_header(const nlohmann::json& base, Op op, const std::string& device_name, std::size_t cases) {
  nlohmann::json model = base;
  // The base's neighbour correction is how far the base's coefficients were off; the tuned
  // model's are calibrated here, so the correction would be applied to formulas it never saw.
  model.erase("neighbours");
  // The margin at which the base's choices were trusted was judged with that correction too.
  model.erase("measure_skip_margin");
  model["id"] = plan::tuned_model_id(op, device_name);
  model["version"] = "1";
  model["op"] = to_string(op);
  model["description"] = std::string("Tuned on ") + device_name + " by `sparsejit tune` from " + std::to_string(cases) +
                         " measured cases; cost coefficients calibrated from " + base.value("id", "?") + ".";
  return model;
}

std::size_t count_cases(const std::vector<Measurement>& ms) {
  std::set<std::string> cases;
  for (const auto& m : ms) cases.insert(m.case_id);
  return cases.size();
}

std::vector<const Measurement*> pointers(const std::vector<Measurement>& ms) {
  std::vector<const Measurement*> out;
  for (const auto& m : ms) out.push_back(&m);
  return out;
}

// Σ coefficient · term; a term the candidate lacks counts 0.
double predict(const nlohmann::json& coefficients, const nlohmann::json& terms) {
  double ms = 0;
  for (const auto& [name, c] : coefficients.items()) ms += c.get<double>() * terms.value(name, 0.0);
  return ms;
}

// Median and largest |predicted / measured - 1| over the measurements.
std::pair<double, double> relative_errors(const std::vector<const Measurement*>& rows, const nlohmann::json& coefficients) {
  std::vector<double> errors;
  for (const Measurement* m : rows) errors.push_back(std::fabs(predict(coefficients, m->terms) / m->time_ms - 1.0));
  std::sort(errors.begin(), errors.end());
  const std::size_t n = errors.size();
  const double median = n % 2 ? errors[n / 2] : 0.5 * (errors[n / 2 - 1] + errors[n / 2]);
  return {median, errors.back()};
}

struct CostFit {
  nlohmann::json coefficients;           // the variant's coefficients, the fitted ones replaced
  std::vector<std::string> terms;        // the fitted terms
  std::vector<const Measurement*> rows;  // the measurements fitted
  std::size_t cases = 0;
};

// The fastest correct time of each case, over every variant.
std::map<std::string, double> fastest_of_cases(const std::vector<Measurement>& measurements) {
  std::map<std::string, double> fastest;
  for (const auto& m : measurements) {
    if (!m.ok || !(m.time_ms > 0) || !std::isfinite(m.time_ms)) continue;
    auto [it, fresh] = fastest.emplace(m.case_id, m.time_ms);
    if (!fresh) it->second = std::min(it->second, m.time_ms);
  }
  return fastest;
}

// A measurement's weight in the fit (train.hpp, calibrate_costs).
double fit_weight(const Measurement& m, const std::map<std::string, double>& fastest) {
  const auto it = fastest.find(m.case_id);
  return it == fastest.end() ? 1.0 : std::min(1.0, kFitWeightSpan * it->second / m.time_ms);
}

// The non-negative fit of calibrate_costs over one variant's correct measurements; nullopt
// with the reason in why_not when it cannot be made.
std::optional<CostFit> fit_costs(const std::vector<const Measurement*>& group, const nlohmann::json& coefficients,
                                 const std::map<std::string, double>& fastest, std::string& why_not) {
  CostFit fit;
  fit.coefficients = coefficients;
  std::set<std::string> cases;
  for (const Measurement* m : group)
    if (!m->terms.empty()) { fit.rows.push_back(m); cases.insert(m->case_id); }
  fit.cases = cases.size();
  if (fit.rows.empty()) { why_not = "no measurement carries its cost terms"; return std::nullopt; }
  for (const auto& [name, _] : coefficients.items())
    if (std::any_of(fit.rows.begin(), fit.rows.end(), [&](const Measurement* m) { return m->terms.value(name, 0.0) != 0; }))
      fit.terms.push_back(name);
  if (fit.terms.empty()) { why_not = "every priced term is 0"; return std::nullopt; }
  if (fit.cases < fit.terms.size() + kFitExtraCases) {
    why_not = std::to_string(fit.cases) + " cases for " + std::to_string(fit.terms.size()) + " terms, a fit needs " +
              std::to_string(fit.terms.size() + kFitExtraCases);
    return std::nullopt;
  }
  // Row i times sqrt(w_i) / t_i: minimizing Σ w_i (a_i·c / t_i - 1)² is the weighted relative-error fit.
  std::vector<std::vector<double>> rows;
  std::vector<double> rhs;
  for (const Measurement* m : fit.rows) {
    const double scale = std::sqrt(fit_weight(*m, fastest)) / m->time_ms;
    std::vector<double> row;
    for (const auto& name : fit.terms) row.push_back(m->terms.value(name, 0.0) * scale);
    rows.push_back(std::move(row));
    rhs.push_back(scale * m->time_ms);
  }
  const std::vector<double> c = nonnegative_least_squares(rows, rhs);
  for (std::size_t j = 0; j < fit.terms.size(); ++j) fit.coefficients[fit.terms[j]] = c[j];
  return fit;
}

// The geometric mean over the cases of the best measured time / the planner's prediction,
// and the number of cases; nullopt without predictions.
std::optional<std::pair<double, std::size_t>> scale_factor(const std::vector<const Measurement*>& group) {
  std::map<std::string, std::pair<double, double>> best;  // case -> (time, predicted)
  for (const Measurement* m : group) {
    if (!(m->predicted_ms > 0) || !std::isfinite(m->predicted_ms)) continue;
    auto [it, fresh] = best.emplace(m->case_id, std::make_pair(m->time_ms, m->predicted_ms));
    if (!fresh) it->second.first = std::min(it->second.first, m->time_ms);
  }
  if (best.empty()) return std::nullopt;
  double log_sum = 0;
  for (const auto& [_, tp] : best) log_sum += std::log(tp.first / tp.second);
  return std::make_pair(std::exp(log_sum / double(best.size())), best.size());
}

}  // namespace

std::optional<RsTraining> train_rs(const std::vector<Measurement>& measurements, std::vector<std::string>& notes) {
  const auto rs = select(pointers(measurements), [](const Measurement& m) { return m.variant == kRsVariant; });
  if (rs.empty()) return std::nullopt;
  RsTraining out;
  std::vector<TreeSample> all_samples;
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const auto of_type = select(rs, [&](const Measurement& m) { return m.dtype == dtype; });
    if (of_type.empty()) continue;
    nlohmann::json trained = train_rs_dtype(of_type, to_string(dtype), all_samples, notes);
    if (!trained.is_null()) out.per_type[to_string(dtype)] = trained;
  }
  if (!all_samples.empty()) out.threshold_tree = fit_tree(all_samples, kThresholdTreeFeatures);
  return out;
}

nlohmann::json calibrate_costs(const std::vector<Measurement>& measurements, const nlohmann::json& base_cost,
                               std::vector<std::string>& notes) {
  nlohmann::json cost = base_cost;
  const std::map<std::string, double> fastest = fastest_of_cases(measurements);
  std::map<std::string, std::vector<const Measurement*>> by_variant;
  for (const auto& m : measurements)
    if (m.ok && m.time_ms > 0 && std::isfinite(m.time_ms) && cost.contains(m.variant)) by_variant[m.variant].push_back(&m);
  for (const auto& [variant, group] : by_variant) {
    std::string why_not;
    if (const auto fit = fit_costs(group, cost[variant], fastest, why_not)) {
      const auto [median_before, worst_before] = relative_errors(fit->rows, cost[variant]);
      const auto [median_after, worst_after] = relative_errors(fit->rows, fit->coefficients);
      std::string zeroed;
      for (const auto& name : fit->terms)
        if (fit->coefficients[name].get<double>() == 0) zeroed += (zeroed.empty() ? "" : ", ") + name;
      notes.push_back("cost " + variant + ": fitted " + std::to_string(fit->terms.size()) + " terms (non-negative, weighted relative error) on " +
                      std::to_string(fit->rows.size()) + " measurements of " + std::to_string(fit->cases) +
                      " cases: |predicted/measured - 1| median " + format_number(median_before) + " -> " +
                      format_number(median_after) + ", worst " + format_number(worst_before) + " -> " + format_number(worst_after) +
                      (zeroed.empty() ? "" : "; zero: " + zeroed));
      cost[variant] = fit->coefficients;
      continue;
    }
    const auto scale = scale_factor(group);
    if (!scale) {
      notes.push_back("cost " + variant + ": unchanged (not fitted: " + why_not + "; no prediction to scale)");
      continue;
    }
    for (auto& [term, coefficient] : cost[variant].items()) coefficient = coefficient.get<double>() * scale->first;
    notes.push_back("cost " + variant + ": measured/predicted = " + format_number(scale->first) + " over " +
                    std::to_string(scale->second) + " cases (scaled, not fitted: " + why_not + ")");
  }
  return cost;
}

std::optional<double> density_threshold(const std::vector<Measurement>& measurements, int32_t k) {
  struct Case { double density; double tiled; double coo; };
  std::map<std::string, Case> cases;
  for (const auto& m : measurements) {
    if (m.k != k || !m.ok) continue;
    const bool tiled = m.variant.find("tiled") != std::string::npos;
    const bool coo = m.variant.find("coo") != std::string::npos;
    if (!tiled && !coo) continue;
    auto [it, _] = cases.emplace(m.case_id, Case{feature(m, "density"), HUGE_VAL, HUGE_VAL});
    double& slot = tiled ? it->second.tiled : it->second.coo;
    slot = std::min(slot, m.time_ms);
  }
  std::vector<Case> both;
  for (const auto& [_, c] : cases)
    if (std::isfinite(c.tiled) && std::isfinite(c.coo) && c.density > 0) both.push_back(c);
  if (both.empty()) return std::nullopt;
  std::sort(both.begin(), both.end(), [](const Case& a, const Case& b) { return a.density < b.density; });
  // Candidate thresholds: below every case, between neighbours (geometric midpoint), above every case.
  std::vector<double> thresholds = {both.front().density / 2};
  for (std::size_t i = 0; i + 1 < both.size(); ++i)
    if (both[i].density < both[i + 1].density) thresholds.push_back(std::sqrt(both[i].density * both[i + 1].density));
  thresholds.push_back(both.back().density * 2);
  double best_threshold = thresholds.front(), best_loss = HUGE_VAL;
  for (double t : thresholds) {
    double loss = 0;
    for (const auto& c : both) loss += (c.density > t ? c.tiled : c.coo) - std::min(c.tiled, c.coo);
    if (loss < best_loss - 1e-12) { best_loss = loss; best_threshold = t; }
  }
  return best_threshold;
}

namespace {

// The trainer's class numbers -> the variant names the planner reads.
void name_leaves(nlohmann::json& node, const std::vector<std::string>& leaves) {
  if (node.contains("leaf")) {
    node["leaf"] = leaves.at(std::size_t(node["leaf"].get<int>()));
    return;
  }
  name_leaves(node["left"], leaves);
  name_leaves(node["right"], leaves);
}

}  // namespace

std::optional<nlohmann::json> sddmm_variant_tree(const std::vector<Measurement>& measurements) {
  const std::vector<std::string> names = sddmm_tree_variants();
  std::vector<const Measurement*> leaves;
  for (const auto& m : measurements)
    if (std::find(names.begin(), names.end(), m.variant) != names.end()) leaves.push_back(&m);
  std::vector<TreeSample> samples;
  for (const auto& [_, group] : by_case(leaves)) {
    const Measurement* winner = case_winner(group);
    if (!winner) continue;
    TreeSample sample;
    for (const auto& name : kSddmmTreeFeatures) sample.features.push_back(feature(*winner, name));
    sample.label = double(std::find(names.begin(), names.end(), winner->variant) - names.begin());
    samples.push_back(sample);
  }
  if (samples.empty()) return std::nullopt;
  nlohmann::json tree = fit_tree(samples, kSddmmTreeFeatures);
  name_leaves(tree, names);
  return tree;
}

nlohmann::json launch_shapes(const std::vector<Measurement>& measurements) {
  std::map<std::string, std::map<int, std::vector<plan::CaseTime>>> grouped;  // variant -> decade -> times
  for (const auto& m : measurements) {
    if (m.params.empty()) continue;
    const double density = feature(m, "density");
    const int decade = density > 0 ? int(std::floor(std::log10(density) + 1e-9)) : -99;
    grouped[m.variant][decade].push_back({m.case_id, m.variant, m.params, m.time_ms, m.ok});
  }
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [variant, decades] : grouped) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [decade, times] : decades)
      if (const auto best = plan::best_over_cases(times))
        list.push_back({{"density_decade", decade}, {"params", best->params}, {"cases", best->cases}});
    if (!list.empty()) out[variant] = list;
  }
  return out;
}

nlohmann::json planner_launch(const nlohmann::json& base_launch, const nlohmann::json& by_decade) {
  nlohmann::json launch = base_launch;
  for (const auto& [variant, decades] : by_decade.items()) {
    if (!launch.contains(variant) || decades.empty()) continue;
    const auto most = std::max_element(decades.begin(), decades.end(), [](const nlohmann::json& a, const nlohmann::json& b) {
      return a.value("cases", 0) < b.value("cases", 0);
    });
    for (const auto& [key, value] : (*most)["params"].items())
      if (launch[variant].contains(key)) launch[variant][key] = value;
  }
  return launch;
}

TrainedModel train_spmm_model(const std::vector<Measurement>& measurements, const nlohmann::json& base_model,
                              const std::string& device_name) {
  TrainedModel t;
  t.model = tuned_header(base_model, Op::SpMM, device_name, count_cases(measurements));
  t.model["cost"] = calibrate_costs(measurements, base_model.at("cost"), t.notes);
  if (const auto rs = train_rs(measurements, t.notes)) {
    t.model["rs"] = rs->per_type;
    t.model["rs_tree_features"] = kThresholdTreeFeatures;
    if (rs->threshold_tree) {
      t.model["threshold_tree"] = *rs->threshold_tree;
      t.notes.push_back("threshold tree for the planner: depth " + std::to_string(tree_depth(*rs->threshold_tree)) + ", from " +
                        std::to_string(rs->threshold_tree->value("samples", 0)) + " cases over all value types");
    }
  } else {
    t.notes.push_back("threshold tree: not trained (the search space has no '" + std::string(kRsVariant) + "' variant)");
  }
  return t;
}

TrainedModel train_sddmm_model(const std::vector<Measurement>& measurements, const nlohmann::json& base_model,
                               const std::string& device_name) {
  TrainedModel t;
  t.model = tuned_header(base_model, Op::SDDMM, device_name, count_cases(measurements));
  t.model["cost"] = calibrate_costs(measurements, base_model.at("cost"), t.notes);
  std::set<int32_t> ks;
  for (const auto& m : measurements) ks.insert(m.k);
  nlohmann::json thresholds = nlohmann::json::object();
  for (int32_t k : ks) {
    const auto learned = density_threshold(measurements, k);
    if (learned) thresholds[std::to_string(k)] = *learned;
    t.notes.push_back("density threshold " + (learned ? "learned at K=" + std::to_string(k) + ": " + format_number(*learned)
                                                      : "at K=" + std::to_string(k) + ": not learned (no case has both a tiled and a COO time)") +
                      " (paper: " + format_number(kPaperDensityThreshold) + ")");
  }
  t.model["density_threshold"] = thresholds;
  if (const auto tree = sddmm_variant_tree(measurements)) {
    t.model["tree"] = *tree;
    t.notes.push_back("variant tree for the planner: depth " + std::to_string(tree_depth(*tree)) + ", from " +
                      std::to_string(tree->value("samples", 0)) + " cases");
  } else {
    t.notes.push_back("variant tree: kept the base model's (no correct measurement of a tree variant)");
  }
  t.model["launch_tuned_by_density_decade"] = launch_shapes(measurements);
  t.model["launch"] = planner_launch(base_model.value("launch", nlohmann::json::object()),
                                     t.model["launch_tuned_by_density_decade"]);
  return t;
}

}  // namespace sparsejit::tuner
