// SDDMM planner: P = S ∘ (A·Bᵀ). The candidates are the registered SDDMM variants
// (runtime/variants/sddmm/: the GPU-Dynamic paper's variants, ours, the vendor), in the
// registry's order. Order of precedence: a forced choice; else the tuning records' choice for
// the feature bucket; else the model (the shipped models/sddmm.json, or a tuned model passed
// in): its decision tree's leaf when it has a tree (tuned models do; the shipped one has none)
// and the leaf can run the problem, else the cheapest eligible candidate under its cost
// formulas; the model's launch defaults give the parameters.
#include "models/decision_tree.hpp"
#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/operand_limits.hpp"
#include "plan/planner.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "variants/sddmm/sddmm_common.hpp"
#include "variants/sddmm/sddmm_variant.hpp"

namespace sparsejit::plan {

namespace {

using nlohmann::json;
using variants::SddmmRegistry;
using variants::sddmm_variant;

// Every registered variant with its defaults and why it is rejected or declined here.
std::vector<VariantSpec> sddmm_candidates(const variants::SddmmPlanInputs& in) {
  std::vector<VariantSpec> specs;
  for (const variants::SddmmVariant* v : SddmmRegistry::all()) {
    VariantSpec spec{v->name, v->defaults(in), v->rejected(in), ""};
    if (spec.rejected_because.empty()) spec.declined_because = v->declined(in, spec.default_params);
    specs.push_back(std::move(spec));
  }
  return specs;
}

// The tree's leaf replaces choose()'s cheapest candidate when it can run the problem.
void apply_tree(Decision& d, const json& model, const std::vector<VariantSpec>& variants) {
  if (!model.contains("tree")) return;
  const models::TreeResult result = models::evaluate_tree(model["tree"], d.features);
  d.path = result.path;
  if (!result.leaf.is_string())
    throw InvalidInputError("sddmm model " + model.value("id", std::string("?")) + ": tree leaf " + result.leaf.dump() +
                            " is not a variant name");
  for (const auto& v : variants) {
    if (v.name == result.leaf.get<std::string>() && v.rejected_because.empty() && v.declined_because.empty()) {
      d.variant = v.name;
      d.params = v.default_params;
      return;
    }
  }
}

}  // namespace

double sddmm_tile_fill(const Features& features, const SddmmProblem& problem, int64_t tile_rows, int64_t tile_cols) {
  const double tiles = variants::sddmm::dense_tiles_estimate(features, problem, double(tile_rows), double(tile_cols));
  return tiles > 0 ? double(features.basic.nnz) / (tiles * double(tile_rows) * double(tile_cols)) : 0.0;
}

std::vector<std::string> sddmm_variants() { return SddmmRegistry::names(); }

Decision plan_sddmm(const Features& features, const SddmmProblem& problem, const DeviceTarget& device, const Options& options,
                    const PlanSources& sources) {
  check_dense_operands("sddmm", problem.k, problem.dtype, {{"A", features.basic.rows}, {"B", features.basic.cols}});
  const json& model = sources.model ? *sources.model : models::shipped_model("sddmm");
  const variants::SddmmPlanInputs in{features, problem, device, model, options.reuse == Reuse::Many || problem.pattern_seen};
  Decision d;
  d.op = Op::SDDMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = to_json(features);
  d.features["k"] = problem.k;
  d.features["value_bytes"] = size_of(problem.dtype);
  d.features["pattern_reused"] = in.pattern_reused ? 1 : 0;
  // The fill of dense_tile's tile: what the tree reads to send dense-ish patterns to the
  // dense-tile variants.
  d.features["tile_fill"] = sddmm_tile_fill(features, problem,
                                            variants::sddmm::launch_value(model, "dense_tile", "tile_rows").get<int64_t>(),
                                            variants::sddmm::launch_value(model, "dense_tile", "tile_cols").get<int64_t>());
  const std::vector<VariantSpec> candidates = sddmm_candidates(in);
  choose(
      d, candidates, model, [&](const std::string& name, const json& params) { return sddmm_variant(name).cost_terms(in, params); },
      forced_from_options(Op::SDDMM, options),
      [&](const std::string& name, const json& params) { sddmm_variant(name).check(problem, device, params); });
  if (d.source == DecisionSource::Model) apply_tree(d, model, candidates);
  const std::string bucket = sddmm_bucket(features, problem);
  d.features["feature_bucket"] = bucket;
  if (d.source != DecisionSource::Forced && sources.tuned) apply_tuned_choice(d, sources.tuned(bucket));
  sddmm_variant(d.variant).check(problem, device, d.params);
  return d;
}

std::vector<TimedChoice> sddmm_neighbors(const std::string& variant, const nlohmann::json& params, const SddmmProblem& problem,
                                        const DeviceTarget& device) {
  const variants::SddmmVariant& v = sddmm_variant(variant);
  return valid_neighbours(variant, params, v.neighbour_changes(problem, device, params),
                          [&](const json& n) { v.check(problem, device, n); });
}

std::vector<std::pair<std::string, nlohmann::json>> sddmm_search_space(const Features& features, const SddmmProblem& problem,
                                                                       const DeviceTarget& device) {
  std::vector<std::pair<std::string, json>> space;
  if (problem.dtype != DType::F32 && problem.dtype != DType::F64) return space;
  // The shipped model's launch defaults, and a pattern not declared reused: the variants that
  // need reuse measure themselves anyway (the tuner runs them with Reuse::Many).
  const variants::SddmmPlanInputs in{features, problem, device, models::shipped_model("sddmm"), false};
  for (const variants::SddmmVariant* v : SddmmRegistry::all()) {
    for (json& params : v->search_space(in)) {
      try {
        v->check(problem, device, params);
        space.emplace_back(v->name, std::move(params));
      } catch (const Error&) {
        // a combination the kernel cannot run on this device: not worth measuring
      }
    }
  }
  return space;
}

}  // namespace sparsejit::plan
