// SpGEMM planner: C = A·B over the registered variants (runtime/variants/spgemm/: what each
// one is, its parameters, checks and cost terms). Order of precedence (DESIGN.md): forced, then
// the model (every eligible variant priced by the model's cost formulas at its default
// parameters; the cheapest is chosen). SpGEMM has no tuning records, trees or measured
// selection yet. Pure: the model comes in through PlanSources.
#include <cstdint>
#include <limits>
#include <memory>

#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::plan {

namespace {

using variants::SpgemmPlanInputs;
using variants::SpgemmRegistry;
using variants::SpgemmVariant;

bool value_type_supported(DType dtype) { return dtype == DType::F32 || dtype == DType::F64; }

const SpgemmVariant& registered(const std::string& name) {
  if (const SpgemmVariant* v = SpgemmRegistry::find(name)) return *v;
  std::string known;
  for (const std::string& n : SpgemmRegistry::names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidInputError("unknown spgemm variant '" + name + "' (known: " + known + ")");
}

std::string dims(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

// The problem must be the features' pair, and its result addressable with int32 offsets.
void check_problem(const SpgemmFeatures& f, const SpgemmProblem& p) {
  if (p.m < 0 || p.k < 0 || p.n < 0)
    throw InvalidInputError("spgemm: negative shape A " + dims(p.m, p.k) + ", B " + dims(p.k, p.n));
  if (f.a.rows != p.m || f.a.cols != p.k || f.b.rows != p.k || f.b.cols != p.n)
    throw InvalidInputError("spgemm: the features are of A " + dims(f.a.rows, f.a.cols) + " and B " + dims(f.b.rows, f.b.cols) +
                            " but the problem is A " + dims(p.m, p.k) + " times B " + dims(p.k, p.n));
  const int64_t limit = std::numeric_limits<int32_t>::max();
  if (f.products > limit)
    throw InvalidInputError("spgemm: A·B has " + std::to_string(f.products) +
                            " scalar products (NNZ(Ĉ)), more than 2^31-1 = " + std::to_string(limit) +
                            ": C's int32 row offsets could not address a result that large");
}

// The feature values a decision records: the pair's and the value size.
nlohmann::json feature_values(const SpgemmFeatures& features, const SpgemmProblem& problem) {
  nlohmann::json values = to_json(features);
  values["value_bytes"] = size_of(problem.dtype);
  return values;
}

std::shared_ptr<const nlohmann::json> model_of(const PlanSources& sources) {
  return sources.model ? sources.model : std::make_shared<const nlohmann::json>(models::shipped_model("spgemm"));
}

}  // namespace

std::vector<std::string> spgemm_variants() { return SpgemmRegistry::names(); }

Decision plan_spgemm(const SpgemmFeatures& features, const SpgemmProblem& problem, const DeviceTarget& device,
                     const Options& options, const PlanSources& sources) {
  check_problem(features, problem);
  Decision d;
  d.op = Op::SpGEMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = feature_values(features, problem);
  const auto model = model_of(sources);
  const SpgemmPlanInputs in{features, problem, device, *model, d.features};
  const bool priced = value_type_supported(problem.dtype);
  std::vector<VariantSpec> specs;
  for (const SpgemmVariant* v : SpgemmRegistry::all())
    specs.push_back({v->name, priced ? v->defaults(in, d.path) : nlohmann::json::object(), v->rejected(in), ""});
  choose(d, specs, *model, [&](const std::string& variant, const nlohmann::json& params) { return registered(variant).cost_terms(in, params); },
         forced_from_options(Op::SpGEMM, options),
         [&](const std::string& variant, const nlohmann::json& params) { registered(variant).check(problem, device, params); });
  registered(d.variant).check(problem, device, d.params);
  return d;
}

std::vector<std::pair<std::string, nlohmann::json>> spgemm_search_space(const SpgemmFeatures& features,
                                                                        const SpgemmProblem& problem,
                                                                        const DeviceTarget& device) {
  std::vector<std::pair<std::string, nlohmann::json>> space;
  if (!value_type_supported(problem.dtype)) return space;
  check_problem(features, problem);
  const auto model = model_of({});
  const nlohmann::json values = feature_values(features, problem);
  const SpgemmPlanInputs in{features, problem, device, *model, values};
  for (const SpgemmVariant* v : SpgemmRegistry::all()) {
    if (!v->rejected(in).empty()) continue;
    for (nlohmann::json& params : v->search_space(in)) {
      try {
        v->check(problem, device, params);
      } catch (const Error&) {
        continue;  // a combination the kernels cannot run on this device
      }
      space.emplace_back(v->name, std::move(params));
    }
  }
  return space;
}

}  // namespace sparsejit::plan
