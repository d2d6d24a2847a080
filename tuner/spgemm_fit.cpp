#include "tuner/spgemm_fit.hpp"

#include <map>
#include <set>

#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "tuner/cost_fit.hpp"

namespace sparsejit::tuner {

namespace {

constexpr const char* kOp = "tune spgemm";

void check_timings(const std::vector<SpgemmTiming>& timings, const nlohmann::json& base_cost) {
  if (timings.empty()) throw InvalidInputError(std::string(kOp) + ": no timings to fit");
  for (const SpgemmTiming& t : timings) check_timing(kOp, base_cost, t.variant, t.ms, case_name(t) + " " + t.variant);
}

// `base_cost` with every variant's coefficients fitted to `timings`; the notes and the fitted
// terms go to `notes` and `fitted`.
nlohmann::json fitted_cost(const std::vector<Measurement>& timings, const nlohmann::json& base_cost, std::vector<std::string>& notes,
                           std::vector<std::string>& fitted) {
  std::map<std::string, std::vector<CostRow>> rows;
  for (const Measurement& t : timings) rows[t.variant].push_back({&t.terms, nullptr, t.time_ms});
  nlohmann::json cost = base_cost;
  for (const auto& [variant, variant_rows] : rows) notes.push_back(fit_variant(cost, variant, variant_rows, fitted));
  return cost;
}

// The timings as from_records' measurements (a case per matrix and value type), for its split and score.
std::vector<Measurement> measurements_of(const std::vector<SpgemmTiming>& timings) {
  std::vector<Measurement> out;
  for (const SpgemmTiming& t : timings) {
    Measurement m;
    m.case_id = case_name(t);
    m.matrix = t.matrix;
    m.dtype = t.dtype;
    m.variant = t.variant;
    m.time_ms = t.ms;
    m.ok = true;
    m.terms = t.terms;
    out.push_back(std::move(m));
  }
  return out;
}

SpgemmSelection selection(const nlohmann::json& base_cost, const nlohmann::json& fitted_cost, const std::vector<Measurement>& cases) {
  return {score_model(Op::SpGEMM, {{"cost", base_cost}}, cases), score_model(Op::SpGEMM, {{"cost", fitted_cost}}, cases)};
}

// The fit without the held-out matrices, judged with the base model on them.
void judge_held_out(SpgemmFit& fit, const std::vector<Measurement>& timings, const nlohmann::json& base_cost) {
  const PatternSplit split = split_by_pattern(timings);
  fit.held_out_matrices.assign(split.held_out_set.begin(), split.held_out_set.end());
  std::vector<std::string> notes, fitted;  // of a fit only judged, never stored
  fit.held_out = selection(base_cost, fitted_cost(split.training, base_cost, notes, fitted), split.held_out);
}

}  // namespace

std::string case_name(const SpgemmTiming& t) { return t.matrix + " " + to_string(t.dtype); }

std::string to_string(const PredictionScore& score) {
  return std::to_string(score.within) + " of " + std::to_string(score.cases) + " cases (worst " + format_number("%.3g", score.worst) + "x)";
}

SpgemmFit fit_spgemm(const std::vector<SpgemmTiming>& timings, const nlohmann::json& base_cost) {
  check_timings(timings, base_cost);
  const std::vector<Measurement> every = measurements_of(timings);
  SpgemmFit fit;
  fit.cost = fitted_cost(every, base_cost, fit.notes, fit.fitted);
  fit.all = selection(base_cost, fit.cost, every);
  judge_held_out(fit, every, base_cost);
  return fit;
}

nlohmann::json tuned_spgemm_model(const nlohmann::json& base, const SpgemmFit& fit, const std::vector<SpgemmTiming>& timings,
                                  const std::string& device_name) {
  std::set<std::string> matrices, cases;
  for (const SpgemmTiming& t : timings) {
    matrices.insert(t.matrix);
    cases.insert(case_name(t));
  }
  nlohmann::json model = base;
  model["id"] = plan::tuned_model_id(Op::SpGEMM, device_name);
  model["version"] = "1";
  model["cost"] = fit.cost;
  model["description"] = "Tuned on " + device_name + " by `sparsejit tune --op spgemm` from " + std::to_string(timings.size()) +
                         " whole calls C = A·A (each variant the planner offered, forced) on " + std::to_string(cases.size()) +
                         " cases of " + std::to_string(matrices.size()) + " matrices: refitted from " + base.value("id", std::string("?")) +
                         ": " + (fit.fitted.empty() ? std::string("nothing") : comma_list(fit.fitted)) +
                         "; the rest as there. Picks within 10% of the fastest timed, every case: " + to_string(fit.all.base) + " -> " +
                         to_string(fit.all.fitted) + "; held-out matrices (" + comma_list(fit.held_out_matrices) + "), fitted without them: " +
                         to_string(fit.held_out.base) + " -> " + to_string(fit.held_out.fitted) + ".";
  return model;
}

}  // namespace sparsejit::tuner
