// SpGEMM planner: C = A·B over the registered variants (runtime/variants/spgemm/: what each
// one is, its parameters, checks and cost terms). Order of precedence (DESIGN.md): forced, then
// the model (every eligible variant priced by the model's cost formulas at its default
// parameters; the cheapest is chosen). SpGEMM has no tuning records, trees or measured
// selection yet. Before pricing, each candidate's peak device memory is held against the call's
// budget (fit_memory). Pure: the model comes in through PlanSources, the free memory in the
// device target.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>

#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::plan {

namespace {

using variants::output_bytes;
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

// Options::memory_limit_bytes must be positive when given.
void check_memory_limit(const Options& options) {
  if (options.memory_limit_bytes && *options.memory_limit_bytes <= 0)
    throw InvalidInputError("spgemm: memory_limit_bytes = " + std::to_string(*options.memory_limit_bytes) +
                            " must be positive (leave it unset for the device's free memory)");
}

// What the call may allocate: the smaller of the device's free memory and the caller's limit;
// none when neither is known.
std::optional<int64_t> memory_budget(const DeviceTarget& device, const Options& options) {
  if (device.free_bytes && options.memory_limit_bytes) return std::min(*device.free_bytes, *options.memory_limit_bytes);
  return device.free_bytes ? device.free_bytes : options.memory_limit_bytes;
}

// NNZ(C) is known only after a symbolic pass; the features bound it. Above: a row holds at
// most min(p, n) entries, summed per product bucket as min(its products, its rows x n). Below:
// every row with products holds at least one.
int64_t c_nnz_upper_bound(const SpgemmFeatures& f, int32_t n) {
  int64_t bound = 0;
  for (std::size_t i = 0; i < f.rows_by_products.size(); ++i)
    bound += std::min(f.products_by_bucket[i], f.rows_by_products[i] * int64_t(n));
  return std::min(bound, f.products);
}

std::string budget_text(int64_t budget, const DeviceTarget& device, const Options& options) {
  const bool limited = options.memory_limit_bytes && (!device.free_bytes || *options.memory_limit_bytes <= *device.free_bytes);
  return std::to_string(budget) + " bytes " + (limited ? "memory_limit_bytes allows" : "the device has free");
}

// Fits every eligible candidate's parameters (from its `defaults`) to the budget with C's
// arrays at `c_bytes`; returns whether any fits. The fitted parameters replace the specs'; the
// candidates that do not fit are left for the caller to reject.
bool fit_candidates(std::vector<VariantSpec>& specs, const std::vector<nlohmann::json>& defaults, std::vector<int64_t>& workspace,
                    const SpgemmPlanInputs& in, int64_t budget, int64_t c_bytes) {
  bool any = false;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].rejected_because.empty()) continue;
    const variants::WorkspaceFit fit = registered(specs[i].name).fit_workspace(in, defaults[i], budget - c_bytes);
    specs[i].default_params = fit.params;
    workspace[i] = fit.bytes;
    any = any || fit.bytes + c_bytes <= budget;
  }
  return any;
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

// Each candidate's peak against the call's budget (see plan_spgemm in planner.hpp), recorded
// in d.features["memory"]: budget_bytes (null: unbounded), free_bytes and limit_bytes (null when
// unknown / unset), c_nnz_bounds, c_nnz_assumed (the NNZ(C) the peaks take: the upper bound,
// or the lower one when nothing fits at the upper; the execution then checks the exact size),
// and per variant workspace_bytes and peak_bytes.
void fit_memory(Decision& d, std::vector<VariantSpec>& specs, const SpgemmPlanInputs& in, const Options& options) {
  const SpgemmProblem& problem = in.problem;
  const std::optional<int64_t> budget = memory_budget(in.device, options);
  const int64_t upper = c_nnz_upper_bound(in.features, problem.n), lower = in.features.product_rows;
  std::vector<int64_t> workspace(specs.size(), 0);
  std::vector<nlohmann::json> defaults;
  for (const VariantSpec& spec : specs) defaults.push_back(spec.default_params);
  int64_t assumed = upper;
  if (budget) {
    if (!fit_candidates(specs, defaults, workspace, in, *budget, output_bytes(problem.m, upper, problem.dtype)) && lower < upper) {
      assumed = lower;
      fit_candidates(specs, defaults, workspace, in, *budget, output_bytes(problem.m, lower, problem.dtype));
    }
  } else {
    for (std::size_t i = 0; i < specs.size(); ++i)
      if (specs[i].rejected_because.empty()) workspace[i] = registered(specs[i].name).workspace_bytes(in, specs[i].default_params);
  }
  const int64_t c_bytes = output_bytes(problem.m, assumed, problem.dtype);
  nlohmann::json memory = {{"budget_bytes", budget ? nlohmann::json(*budget) : nlohmann::json(nullptr)},
                           {"free_bytes", in.device.free_bytes ? nlohmann::json(*in.device.free_bytes) : nlohmann::json(nullptr)},
                           {"limit_bytes", options.memory_limit_bytes ? nlohmann::json(*options.memory_limit_bytes) : nlohmann::json(nullptr)},
                           {"c_nnz_bounds", {lower, upper}},
                           {"c_nnz_assumed", assumed},
                           {"workspace_bytes", nlohmann::json::object()},
                           {"peak_bytes", nlohmann::json::object()}};
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].rejected_because.empty()) continue;
    const int64_t peak = workspace[i] + c_bytes;
    memory["workspace_bytes"][specs[i].name] = workspace[i];
    memory["peak_bytes"][specs[i].name] = peak;
    if (budget && peak > *budget)
      specs[i].rejected_because = specs[i].name + " needs " + std::to_string(peak) + " bytes of device memory at its peak (workspace " +
                                  std::to_string(workspace[i]) + ", C " + std::to_string(c_bytes) + " at NNZ(C) <= " +
                                  std::to_string(assumed) + "), more than the " + budget_text(*budget, in.device, options);
  }
  d.features["memory"] = std::move(memory);
}

// A forced choice's parameters were not fitted: its peak must still hold.
void check_chosen_memory(Decision& d, const SpgemmPlanInputs& in, const Options& options) {
  nlohmann::json& memory = d.features.at("memory");
  const int64_t workspace = registered(d.variant).workspace_bytes(in, d.params);
  const int64_t peak = workspace + output_bytes(in.problem.m, memory.at("c_nnz_assumed").get<int64_t>(), in.problem.dtype);
  memory["workspace_bytes"][d.variant] = workspace;
  memory["peak_bytes"][d.variant] = peak;
  const std::optional<int64_t> budget = memory_budget(in.device, options);
  if (budget && peak > *budget)
    throw UnsupportedError("spgemm variant " + d.variant + " with " + d.params.dump() + " needs " + std::to_string(peak) +
                           " bytes of device memory at its peak, more than the " + budget_text(*budget, in.device, options));
}

}  // namespace

std::vector<std::string> spgemm_variants() { return SpgemmRegistry::names(); }

Decision plan_spgemm(const SpgemmFeatures& features, const SpgemmProblem& problem, const DeviceTarget& device,
                     const Options& options, const PlanSources& sources) {
  check_problem(features, problem);
  check_memory_limit(options);
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
  if (priced) fit_memory(d, specs, in, options);
  choose(d, specs, *model, [&](const std::string& variant, const nlohmann::json& params) { return registered(variant).cost_terms(in, params); },
         forced_from_options(Op::SpGEMM, options),
         [&](const std::string& variant, const nlohmann::json& params) { registered(variant).check(problem, device, params); });
  registered(d.variant).check(problem, device, d.params);
  if (priced) check_chosen_memory(d, in, options);
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
