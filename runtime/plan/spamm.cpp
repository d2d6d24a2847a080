// SpAMM planner: option checks, the tile, the τ searches and the variant over the registered
// variants (runtime/variants/spamm/). Order of precedence (DESIGN.md): forced, then the model
// (every variant that accepts the precision priced by models/spamm.json, or the tuned model
// `sparsejit tune --op spamm` stored for this GPU, at its defaults; the cheapest runs). No
// tuning records for SpAMM: its feature, the kept share, changes with every call's values. Pure: the model comes in through
// PlanSources, a τ's selection through the caller's evaluator.
#include "plan/spamm.hpp"

#include <algorithm>
#include <cstdio>
#include <cmath>
#include <limits>
#include <memory>

#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "sparsejit/error.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit::plan {

namespace {

using variants::SpammPlanInputs;
using variants::SpammRegistry;
using variants::SpammVariant;

const SpammVariant& registered(const std::string& name) {
  if (const SpammVariant* v = SpammRegistry::find(name)) return *v;
  std::string known;
  for (const std::string& n : SpammRegistry::names()) known += (known.empty() ? "" : ", ") + n;
  throw InvalidInputError("unknown spamm variant '" + name + "' (known: " + known + ")");
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", x);
  return text;
}

std::shared_ptr<const nlohmann::json> model_of(const PlanSources& sources) {
  return sources.model ? sources.model : std::make_shared<const nlohmann::json>(models::shipped_model("spamm"));
}

// The search's second evaluation needs a positive product; without one every τ > 0 keeps
// nothing but zero products' complement, so τ = 0 is the answer.
bool has_positive_products(const SpammSelection& s) { return s.min_positive_product > 0 && s.max_product > 0; }

// The bisections stop when hi / lo is this close to 1: a finer τ changes what is kept only for
// products within the device's and the CPU's rounding of each other (their norm sums differ in
// order), and each step costs a device round trip.
constexpr double kResolution = 1e-9;
bool resolved(double lo, double hi) { return !(hi > lo * (1 + kResolution)); }

// Just above the largest product: nothing is kept.
double above_every_product(double max_product) { return max_product * (1.0 + 1e-12) + std::numeric_limits<double>::denorm_min(); }

}  // namespace

}  // namespace sparsejit::plan

namespace sparsejit {

const char* to_string(SpammPrecision precision) {
  switch (precision) {
    case SpammPrecision::Full: return "full";
    case SpammPrecision::TF32: return "tf32";
    case SpammPrecision::FP16: return "fp16";
    case SpammPrecision::BF16: return "bf16";
  }
  return "?";
}

SpammPrecision parse_spamm_precision(const std::string& text) {
  for (SpammPrecision p : {SpammPrecision::Full, SpammPrecision::TF32, SpammPrecision::FP16, SpammPrecision::BF16})
    if (text == to_string(p)) return p;
  throw InvalidInputError("unknown spamm precision '" + text + "' (expected full, tf32, fp16 or bf16)");
}

}  // namespace sparsejit

namespace sparsejit::plan {

nlohmann::json to_json(const SpammFeatures& f, const SpammProblem& p) {
  return {{"tile", p.tile},
          {"tau", f.tau},
          {"valid_products", f.selection.valid},
          {"tile_products", f.selection.triples},
          {"valid_ratio", f.selection.ratio},
          {"error_bound", f.selection.error_bound},
          {"precision", to_string(p.precision)},
          {"value_bytes", size_of(p.dtype)},
          {"tau_to_search", f.tau_to_search}};
}

void check_spamm_options(const SpammOptions& o, DType dtype) {
  if (dtype != DType::F32 && dtype != DType::F64)
    throw UnsupportedError(std::string("spamm: value type ") + to_string(dtype) + " not supported (f32 and f64)");
  const int targets = int(o.tau.has_value()) + int(o.valid_ratio.has_value()) + int(o.max_error.has_value());
  if (targets > 1) throw InvalidInputError("spamm: set at most one of tau, valid_ratio and max_error (" + std::to_string(targets) + " are set)");
  if (o.tau && !(std::isfinite(*o.tau) && *o.tau >= 0))
    throw InvalidInputError("spamm: tau = " + number(*o.tau) + " must be finite and >= 0");
  if (o.valid_ratio && !(*o.valid_ratio > 0 && *o.valid_ratio <= 1))
    throw InvalidInputError("spamm: valid_ratio = " + number(*o.valid_ratio) + " must be in (0, 1]");
  if (o.max_error && !(std::isfinite(*o.max_error) && *o.max_error >= 0))
    throw InvalidInputError("spamm: max_error = " + number(*o.max_error) + " must be finite and >= 0");
  if (!(o.ratio_tolerance > 0 && o.ratio_tolerance < 1))
    throw InvalidInputError("spamm: ratio_tolerance = " + number(o.ratio_tolerance) + " must be in (0, 1)");
  if (o.max_search_iterations < 1 || o.max_search_iterations > 200)
    throw InvalidInputError("spamm: max_search_iterations = " + std::to_string(o.max_search_iterations) + " must be in [1, 200]");
  if (o.tile != 0 && std::find(std::begin(kSpammTiles), std::end(kSpammTiles), o.tile) == std::end(kSpammTiles))
    throw InvalidInputError("spamm: tile = " + std::to_string(o.tile) + " is not one the kernels are built for (0 for the planner's, 32, 64, 128)");
  if (dtype == DType::F64 && o.precision != SpammPrecision::Full)
    throw UnsupportedError(std::string("spamm: precision ") + to_string(o.precision) + " is for f32 operands; f64 runs in full precision only");
}

int32_t spamm_tile(int32_t m, int32_t k, int32_t n, const SpammOptions& options) {
  if (options.tile != 0) return options.tile;
  const int32_t largest = std::max({m, k, n});
  return largest < 8 * 64 ? 32 : 64;
}

TauSearch search_tau_for_ratio(double target, double tolerance, int max_iterations, const SelectionAt& at) {
  TauSearch best;
  best.selection = at(0.0);
  best.iterations = 1;
  const SpammSelection& all = best.selection;
  if (all.triples == 0 || !has_positive_products(all)) return best;
  // Only positive products can be skipped by a τ > 0: a target above their share keeps all.
  double lo = all.min_positive_product, hi = above_every_product(all.max_product);
  const auto miss = [&](const SpammSelection& s) { return std::abs(s.ratio - target); };
  if (miss(all) <= tolerance * target) return best;
  int evaluations = 1;
  while (evaluations < max_iterations && !resolved(lo, hi)) {
    const double tau = std::sqrt(lo * hi);
    const SpammSelection s = at(tau);
    ++evaluations;
    if (miss(s) < miss(best.selection)) {
      best.tau = tau;
      best.selection = s;
    }
    if (miss(s) <= tolerance * target) break;
    (s.ratio > target ? lo : hi) = tau;
  }
  best.iterations = evaluations;
  return best;
}

TauSearch search_tau_for_error(double max_error, int max_iterations, const SelectionAt& at) {
  TauSearch best;
  best.selection = at(0.0);
  best.iterations = 1;
  const SpammSelection all = best.selection;
  if (all.triples == 0 || !has_positive_products(all)) return best;
  int evaluations = 1;
  // Everything may go: the bound of skipping every product is under the target.
  const double top = above_every_product(all.max_product);
  const SpammSelection none = at(top);
  ++evaluations;
  if (none.error_bound <= max_error) {
    best = {top, none, evaluations};
    return best;
  }
  // Below the smallest positive product only zero products are skipped: bound 0 <= max_error.
  double lo = all.min_positive_product * 0.5, hi = top;
  SpammSelection at_lo = all;
  while (evaluations < max_iterations && !resolved(lo, hi)) {
    const double tau = std::sqrt(lo * hi);
    const SpammSelection s = at(tau);
    ++evaluations;
    if (s.error_bound <= max_error) {
      lo = tau;
      at_lo = s;
    } else {
      hi = tau;
    }
  }
  best.tau = lo;
  best.selection = at_lo;
  best.iterations = evaluations;
  return best;
}

std::vector<std::string> spamm_variants() { return SpammRegistry::names(); }

Decision plan_spamm(const SpammFeatures& features, const SpammProblem& problem, const DeviceTarget& device,
                    const SpammOptions& options, const PlanSources& sources) {
  Decision d;
  d.op = Op::SpAMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = to_json(features, problem);
  const auto model = model_of(sources);
  const SpammPlanInputs in{features, problem, device, *model};
  std::vector<VariantSpec> specs;
  for (const SpammVariant* v : SpammRegistry::all()) {
    const std::string rejected = v->rejected(in);
    specs.push_back({v->name, rejected.empty() ? v->defaults(in) : nlohmann::json::object(), rejected, ""});
  }
  Options forced;
  forced.variant = options.variant;
  forced.params = options.params;
  choose(d, specs, *model, [&](const std::string& variant, const nlohmann::json& params) { return registered(variant).cost_terms(in, params); },
         forced_from_options(Op::SpAMM, forced),
         [&](const std::string& variant, const nlohmann::json& params) { registered(variant).check(problem, device, params); });
  registered(d.variant).check(problem, device, d.params);
  return d;
}

}  // namespace sparsejit::plan
