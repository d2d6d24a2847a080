#include "plan/tuned.hpp"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <limits>
#include <set>
#include <tuple>

#include "base/log.hpp"
#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/spmm_params.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::plan {

namespace {


// floor(log_base(x)), or -1 when x < 1.
int log_bucket(double x, double base) {
  if (!(x >= 1)) return -1;
  return int(std::floor(std::log(x) / std::log(base) + 1e-9));
}

int32_t k_bucket(int32_t k) {
  int32_t p = 1;
  while (p < k && p < (1 << 30)) p *= 2;
  return p;
}

int spread_bucket(double row_cv) { return row_cv < 0.5 ? 0 : row_cv < 2.0 ? 1 : 2; }

std::string clustering_group(const ClusterBins& bins) {
  if (bins.distances == 0) return "-";
  // Groups of bins: {0}, {1, 2}, {3, 4, 5}, {6 .. 11}.
  const int first_bin_of_group[] = {0, 1, 3, 6, kClusterBins};
  int best = 0;
  double best_fraction = -1;
  for (int g = 0; g < 4; ++g) {
    double f = 0;
    for (int b = first_bin_of_group[g]; b < first_bin_of_group[g + 1]; ++b) f += bins.fractions[b];
    if (f > best_fraction + 1e-12) { best = g; best_fraction = f; }
  }
  return std::to_string(best);
}



double numeric_param(const nlohmann::json& params, const char* name) {
  if (params.is_object() && params.contains(name) && params[name].is_number()) return params[name].get<double>();
  return std::numeric_limits<double>::infinity();
}


}  // namespace


std::string spmm_bucket(const Features& f, const SpmmProblem& p) {
  return std::string("spmm ") + to_string(p.dtype) + " k" + std::to_string(k_bucket(p.k)) + (p.transpose_a ? " T" : "") +
         " nnz4^" + std::to_string(log_bucket(double(f.basic.nnz), 4)) + " rows4^" + std::to_string(log_bucket(f.basic.rows, 4)) +
         " mean2^" + std::to_string(log_bucket(f.basic.row_mean, 2)) + " cv" + std::to_string(spread_bucket(f.basic.row_cv)) +
         " clu" + clustering_group(f.clustering);
}

std::string sddmm_bucket(const Features& f, const SddmmProblem& p) {
  const int density_decade = f.basic.density > 0 ? int(std::floor(std::log10(f.basic.density) + 1e-9)) : -99;
  return std::string("sddmm ") + to_string(p.dtype) + " k" + std::to_string(k_bucket(p.k)) + " nnz4^" +
         std::to_string(log_bucket(double(f.basic.nnz), 4)) + " dens10^" + std::to_string(density_decade) + " cv" +
         std::to_string(spread_bucket(f.basic.row_cv));
}

bool tie_break_before(const std::string& va, const nlohmann::json& pa, const std::string& vb, const nlohmann::json& pb) {
  using namespace spmm_param;
  return std::make_tuple(numeric_param(pa, kPanelWidth), numeric_param(pa, kThreshold), va, pa.dump()) <
         std::make_tuple(numeric_param(pb, kPanelWidth), numeric_param(pb, kThreshold), vb, pb.dump());
}

std::optional<RankedCandidate> best_over_cases(const std::vector<CaseTime>& times) {
  std::map<std::string, double> case_best;
  for (const auto& t : times) {
    if (!t.ok) continue;
    auto [it, fresh] = case_best.emplace(t.case_id, t.time_ms);
    if (!fresh) it->second = std::min(it->second, t.time_ms);
  }
  std::set<std::string> cases;
  for (const auto& t : times) cases.insert(t.case_id);

  struct Tally {
    const CaseTime* first = nullptr;
    double log_sum = 0;
    std::set<std::string> cases;
    bool failed = false;
  };
  std::map<std::string, Tally> tallies;  // by variant + params
  for (const auto& t : times) {
    Tally& tally = tallies[t.variant + "\n" + t.params.dump()];
    if (!tally.first) tally.first = &t;
    if (!t.ok || !(t.time_ms > 0)) { tally.failed = true; continue; }
    tally.log_sum += std::log(t.time_ms / case_best.at(t.case_id));
    tally.cases.insert(t.case_id);
  }
  std::vector<RankedCandidate> complete;
  for (const auto& [_, tally] : tallies)
    if (!tally.failed && tally.cases.size() == cases.size())
      complete.push_back({tally.first->variant, tally.first->params, std::exp(tally.log_sum / double(cases.size())), int(cases.size())});
  if (complete.empty()) return std::nullopt;
  double best = std::numeric_limits<double>::infinity();
  for (const auto& c : complete) best = std::min(best, c.mean_slowdown);
  const RankedCandidate* chosen = nullptr;
  for (const auto& c : complete) {
    if (c.mean_slowdown > best * (1 + kTieTolerance)) continue;
    if (!chosen || tie_break_before(c.variant, c.params, chosen->variant, chosen->params)) chosen = &c;
  }
  return *chosen;
}

std::vector<CaseTime> case_times(const std::vector<cache::TuningRecord>& records) {
  std::map<std::string, std::pair<int64_t, CaseTime>> newest;
  for (const auto& r : records) {
    if (!r.params.is_object() || !r.params.contains(kMeasuredOn)) continue;
    const nlohmann::json& on = r.params[kMeasuredOn];
    if (!on.is_object() || !on.contains("case") || !on["case"].is_string()) continue;
    CaseTime t{on["case"].get<std::string>(), r.variant, r.params, r.time_ms, r.checked};
    t.params.erase(kMeasuredOn);
    const std::string key = t.case_id + "\n" + t.variant + "\n" + t.params.dump();
    auto it = newest.find(key);
    if (it == newest.end() || r.created >= it->second.first) newest[key] = {r.created, std::move(t)};
  }
  std::vector<CaseTime> out;
  for (auto& [_, entry] : newest) out.push_back(std::move(entry.second));
  return out;
}


std::string tuned_model_name(Op op) { return to_string(op); }

std::string tuned_model_id(Op op, const std::string& device_name) {
  std::string id = std::string(to_string(op)) + "-tuned-";
  for (char c : device_name) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return id;
}


namespace {

// A finite JSON number, else `missing` (JSON has no infinity or NaN: they are stored as null).
double number_or(const nlohmann::json& entry, const char* key, double missing) {
  const auto it = entry.find(key);
  return it != entry.end() && it->is_number() ? it->get<double>() : missing;
}

nlohmann::json finite_or_null(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr); }

}  // namespace

nlohmann::json to_json(const RecordedTiming& t) {
  return {{"variant", t.variant}, {"params", t.params}, {"ms", finite_or_null(t.ms)},
          {"predicted_ms", finite_or_null(t.predicted_ms)}, {"terms", t.terms}};
}

std::vector<RecordedTiming> recorded_timings(const cache::TuningRecord& record) {
  std::vector<RecordedTiming> out;
  for (const nlohmann::json& entry : record.timings) {
    if (!entry.is_object() || !entry.contains("variant") || !entry["variant"].is_string()) continue;
    RecordedTiming t;
    t.variant = entry["variant"].get<std::string>();
    if (entry.contains("params") && entry["params"].is_object()) t.params = entry["params"];
    t.ms = number_or(entry, "ms", std::numeric_limits<double>::infinity());
    t.predicted_ms = number_or(entry, "predicted_ms", std::numeric_limits<double>::quiet_NaN());
    if (entry.contains("terms") && entry["terms"].is_object()) t.terms = entry["terms"];
    out.push_back(std::move(t));
  }
  return out;
}

bool apply_tuned_choice(Decision& decision, const std::optional<TunedChoice>& choice) {
  if (decision.source == DecisionSource::Forced || !choice) return false;
  const auto candidate = std::find_if(decision.candidates.begin(), decision.candidates.end(),
                                      [&](const Candidate& c) { return c.variant == choice->variant; });
  if (candidate == decision.candidates.end() || !candidate->rejected_because.empty()) return false;
  nlohmann::json params;
  try {
    params = merge_params(choice->variant, candidate->params, choice->params);
  } catch (const InvalidInputError& e) {  // recorded by an older version of the variant
    log(LogLevel::Warn, "ignoring tuning records of bucket '" + choice->bucket + "': " + e.what());
    return false;
  }
  decision.variant = choice->variant;
  decision.params = params;
  decision.source = DecisionSource::Tuned;
  decision.model_id = "tuning-records";
  decision.model_version = choice->bucket;
  decision.features["tuned_cases"] = choice->cases;
  return true;
}


}  // namespace sparsejit::plan
