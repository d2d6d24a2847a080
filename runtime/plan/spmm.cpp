// SpMM planner: C = A·B (or Aᵀ·B) over the registered variants (runtime/variants/spmm/: what
// each one is, its parameters, checks and cost terms). Order of precedence (DESIGN.md):
// forced, tuned record, model (every eligible variant priced by the model's cost formulas at
// its default parameters; the cheapest is chosen), default. Pure: the model and the tuning
// records come in through PlanSources.
#include <memory>

#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/operand_limits.hpp"
#include "plan/planner.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit::plan {

namespace {

using variants::SpmmPlanInputs;
using variants::SpmmRegistry;
using variants::SpmmVariant;

bool value_type_supported(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

const SpmmVariant& registered(const std::string& name) {
  if (const SpmmVariant* v = SpmmRegistry::find(name)) return *v;
  std::string known;
  for (const std::string& n : SpmmRegistry::names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidInputError("unknown spmm variant '" + name + "' (known: " + known + ")");
}

// The feature values a decision records and the trees read: the matrix's, the problem's and
// accumulations per nonzero (how much of the clustering survives the column panels: a
// threshold-tree feature, comparable across matrix sizes).
nlohmann::json feature_values(const Features& features, const SpmmProblem& problem) {
  nlohmann::json values = to_json(features);
  values["k"] = problem.k;
  values["value_bytes"] = size_of(problem.dtype);
  values["transpose_a"] = problem.transpose_a;
  values["accumulations_per_nnz"] =
      features.basic.nnz > 0 ? double(features.clustering.accumulations) / double(features.basic.nnz) : 0.0;
  return values;
}

std::shared_ptr<const nlohmann::json> model_of(const PlanSources& sources) {
  return sources.model ? sources.model : std::make_shared<const nlohmann::json>(models::shipped_model("spmm"));
}

}  // namespace

std::vector<std::string> spmm_variants() { return SpmmRegistry::names(); }

Decision plan_spmm(const Features& features, const SpmmProblem& problem, const DeviceTarget& device, const Options& options,
                   const SplitStatsSource& split_stats, const PlanSources& sources) {
  check_dense_operands("spmm", problem.k, problem.dtype,
                       {{"B", problem.transpose_a ? features.basic.rows : features.basic.cols},
                        {"C", problem.transpose_a ? features.basic.cols : features.basic.rows}});
  Decision d;
  d.op = Op::SpMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = feature_values(features, problem);
  const auto model = model_of(sources);
  const SpmmPlanInputs in{features, problem, device, *model, split_stats, d.features};
  // Every variant's defaults are computed when the value type is one the kernels take (rs
  // records its threshold tree's steps in the path); rejected() says which can run.
  const bool priced = value_type_supported(problem.dtype);
  std::vector<VariantSpec> specs;
  for (const SpmmVariant* v : SpmmRegistry::all())
    specs.push_back({v->name, priced ? v->defaults(in, d.path) : nlohmann::json::object(), v->rejected(in), ""});
  auto forced = forced_from_options(Op::SpMM, options);
  if (forced) {
    for (const VariantSpec& s : specs) {
      if (s.name != forced->variant || !s.rejected_because.empty()) continue;
      const SpmmVariant& v = registered(s.name);
      forced->params = v.complete_forced(in, forced->params, merge_params(s.name, s.default_params, forced->params));
    }
  }
  choose(d, specs, *model, [&](const std::string& variant, const nlohmann::json& params) { return registered(variant).cost_terms(in, params); },
         forced, [&](const std::string& variant, const nlohmann::json& params) { registered(variant).check(problem, device, params); });
  const std::string bucket = spmm_bucket(features, problem);
  d.features["feature_bucket"] = bucket;
  if (sources.tuned && d.source != DecisionSource::Forced) apply_tuned_choice(d, sources.tuned(bucket));
  registered(d.variant).check(problem, device, d.params);
  return d;
}

std::vector<TimedChoice> spmm_neighbors(const std::string& variant, const nlohmann::json& params, const SpmmProblem& problem,
                                       const DeviceTarget& device) {
  const SpmmVariant* v = SpmmRegistry::find(variant);
  if (v == nullptr) return {};
  return valid_neighbours(variant, params, v->neighbour_changes(problem, params),
                          [&](const nlohmann::json& n) { v->check(problem, device, n); });
}

std::vector<std::pair<std::string, nlohmann::json>> spmm_search_space(const Features& features, const SpmmProblem& problem,
                                                                      const DeviceTarget& device) {
  std::vector<std::pair<std::string, nlohmann::json>> space;
  if (!value_type_supported(problem.dtype)) return space;
  const auto model = model_of({});
  const nlohmann::json values = feature_values(features, problem);
  const SplitStatsSource no_split;  // the search space needs no split statistics
  const SpmmPlanInputs in{features, problem, device, *model, no_split, values};
  for (const SpmmVariant* v : SpmmRegistry::all()) {
    for (nlohmann::json& params : v->search_space(in)) {
      try {
        v->check(problem, device, params);
      } catch (const Error&) {
        continue;  // a combination the kernel cannot run on this device: not worth measuring
      }
      space.emplace_back(v->name, std::move(params));
    }
  }
  return space;
}

}  // namespace sparsejit::plan
