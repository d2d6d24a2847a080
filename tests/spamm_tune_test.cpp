// The fit of `sparsejit tune --op spamm` (tuner/spamm_fit.hpp) on synthetic timings: calls
// timed as a known cost model would take them, with the terms the planner prices them with
// (plan_spamm's candidates) and the front the tuner takes off (front_terms), so the fit must
// give back that model's coefficients and the crossovers it implies, and the tuned model it
// makes must move the planner's choice to them.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "models/cost_model.hpp"
#include "models/model_check.hpp"
#include "models/model_store.hpp"
#include "plan/spamm.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "tuner/spamm_fit.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit {
namespace {

using tuner::CrossoverShare;
using Where = CrossoverShare::Where;

const std::vector<double> kShares = {0.01, 0.05, 0.10, 0.25, 0.50};

plan::DeviceTarget device() {
  plan::DeviceTarget d;
  d.name = "Fake GPU spamm";
  d.sm = 90;
  d.multiprocessors = 132;
  d.shared_per_block_optin = 227 * 1024;
  return d;
}

plan::SpammProblem problem_of(int32_t n, SpammPrecision precision) {
  plan::SpammProblem p;
  p.precision = precision;
  p.m = p.k = p.n = n;
  p.lda = p.ldb = p.ldc = n;
  p.tile = 64;
  return p;
}

// The selection at a kept share (valid rounded to whole tile products).
plan::SpammFeatures at_share(const plan::SpammProblem& p, double share) {
  plan::SpammFeatures f;
  f.tau = 1;
  f.selection.triples = int64_t(p.tile_rows()) * p.tile_inner() * p.tile_cols();
  f.selection.valid = std::llround(share * double(f.selection.triples));
  f.selection.ratio = double(f.selection.valid) / double(f.selection.triples);
  return f;
}

Decision forced(const plan::SpammFeatures& f, const plan::SpammProblem& p, const std::string& variant, const nlohmann::json& model) {
  SpammOptions o;
  o.variant = variant;
  o.precision = p.precision;
  return plan::plan_spamm(f, p, device(), o, {std::make_shared<const nlohmann::json>(model), {}});
}

const nlohmann::json& terms_of(const Decision& d, const std::string& variant) {
  for (const Candidate& c : d.candidates)
    if (c.variant == variant) return c.terms;
  throw std::runtime_error("no candidate " + variant);
}

double priced(const nlohmann::json& coefficients, const nlohmann::json& terms) {
  double total = 0;
  for (const auto& [name, amount] : terms.items())
    if (coefficients.contains(name)) total += coefficients[name].get<double>() * amount.get<double>();
  return total;
}

// A model unlike the shipped one in every coefficient the timings exercise.
nlohmann::json truth() {
  nlohmann::json m = models::shipped_model("spamm");
  nlohmann::json& c = m["cost"];
  c["mma"]["c_tiles"] = 2e-5;
  c["mma"]["mma_3xtf32_flops"] = 3e-11;
  c["mma"]["mma_f16_flops"] = 6e-12;
  c["simt"]["c_tiles"] = 3e-5;
  c["simt"]["simt_f32_flops"] = 5e-11;
  c["cublas"]["gemm_f32_flops"] = 3e-11;
  c["cublas"]["gemm_f16_flops"] = 1.5e-12;
  return m;
}

// The calls of one precision and size as `model` would time them; `wobble` scales the i-th
// time by 1 + wobble·(-1)^i (measurement noise).
tuner::SpammCaseTimes timed_case(SpammPrecision precision, int32_t n, const nlohmann::json& model, double wobble = 0) {
  const plan::SpammProblem p = problem_of(n, precision);
  tuner::SpammCaseTimes c;
  c.precision = precision;
  c.n = n;
  c.vendor = "cublas";
  int i = 0;
  const auto noisy = [&](double ms) { return ms * (1 + wobble * ((i++ % 2) ? 1 : -1)); };
  for (double share : kShares) {
    const plan::SpammFeatures f = at_share(p, share);
    tuner::SpammShareTimes s;
    s.share = f.selection.ratio;
    s.front = variants::front_terms(p, 1);
    for (const char* variant : {"mma", "simt"}) {
      if (precision != SpammPrecision::Full && std::string(variant) == "simt") continue;  // simt computes f32 only
      const Decision d = forced(f, p, variant, model);
      const nlohmann::json& terms = terms_of(d, variant);
      s.tiles.push_back({variant, terms, noisy(priced(model["cost"][variant], s.front) + models::linear_cost(model["cost"][variant], terms))});
      c.vendor_terms = terms_of(d, "cublas");
    }
    c.shares.push_back(s);
  }
  c.vendor_ms = noisy(models::linear_cost(model["cost"]["cublas"], c.vendor_terms));
  return c;
}

std::vector<tuner::SpammCaseTimes> timed_cases(const nlohmann::json& model, double wobble = 0) {
  std::vector<tuner::SpammCaseTimes> cases;
  for (int32_t n : {4096, 8192})
    for (SpammPrecision p : {SpammPrecision::Full, SpammPrecision::FP16}) cases.push_back(timed_case(p, n, model, wobble));
  return cases;
}

// The share where `model`'s mma call (front included) costs what its GEMM does: the costs are
// affine in the share, so two evaluations give the line.
double exact_crossover(SpammPrecision precision, int32_t n, const nlohmann::json& model) {
  const plan::SpammProblem p = problem_of(n, precision);
  const auto call = [&](double share) {
    const Decision d = forced(at_share(p, share), p, "mma", model);
    return priced(model["cost"]["mma"], variants::front_terms(p, 1)) + models::linear_cost(model["cost"]["mma"], terms_of(d, "mma"));
  };
  const double gemm = models::linear_cost(model["cost"]["cublas"], terms_of(forced(at_share(p, 0.5), p, "mma", model), "cublas"));
  const double at0 = call(0), at1 = call(1);
  return (gemm - at0) / (at1 - at0);
}

void expect_crossover(const CrossoverShare& got, double exact, const std::string& what) {
  if (exact < kShares.front()) {
    EXPECT_EQ(got.where, Where::Below) << what;
  } else if (exact > kShares.back()) {
    EXPECT_EQ(got.where, Where::Above) << what;
  } else {
    EXPECT_EQ(got.where, Where::Between) << what;
    EXPECT_NEAR(got.share, exact, 1e-3 * exact) << what;  // shares rounded to whole tile products
  }
}

TEST(SpammTune, FitRecoversTheRatesAndInterceptsTheTimingsFollow) {
  const nlohmann::json want = truth();
  const nlohmann::json shipped = models::shipped_model("spamm");
  const tuner::SpammFit fit = tuner::fit_spamm(timed_cases(want), shipped["cost"]);
  for (const auto& [variant, term] : std::vector<std::pair<std::string, std::string>>{{"mma", "c_tiles"},
                                                                                      {"mma", "mma_3xtf32_flops"},
                                                                                      {"mma", "mma_f16_flops"},
                                                                                      {"simt", "c_tiles"},
                                                                                      {"simt", "simt_f32_flops"},
                                                                                      {"cublas", "gemm_f32_flops"},
                                                                                      {"cublas", "gemm_f16_flops"}}) {
    const double expected = want["cost"][variant][term].get<double>();
    EXPECT_NEAR(fit.cost[variant][term].get<double>(), expected, 1e-6 * expected) << variant << " " << term;
  }
  // What no timing exercises stays the base model's: tf32's rates, the launch, the front.
  for (const auto& [variant, term] : std::vector<std::pair<std::string, std::string>>{
           {"mma", "mma_tf32_flops"}, {"cublas", "gemm_tf32_flops"}, {"mma", "launch"}, {"mma", "norm_bytes"}, {"mma", "search_steps"}})
    EXPECT_EQ(fit.cost[variant][term], shipped["cost"][variant][term]) << variant << " " << term;
  EXPECT_EQ(fit.fitted.size(), 7u);
  ASSERT_EQ(fit.notes.size(), 3u);  // one per variant timed
}

TEST(SpammTune, CrossoversAreWhereTheTileCallMeetsTheGemm) {
  const nlohmann::json want = truth();
  const std::vector<tuner::SpammCaseTimes> cases = timed_cases(want);
  const tuner::SpammFit fit = tuner::fit_spamm(cases, models::shipped_model("spamm")["cost"]);
  ASSERT_EQ(fit.crossovers.size(), cases.size());
  int between = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const tuner::SpammCrossover& x = fit.crossovers[i];
    const std::string what = std::string(to_string(x.precision)) + " N=" + std::to_string(x.n);
    EXPECT_EQ(x.precision, cases[i].precision);
    EXPECT_EQ(x.n, cases[i].n);
    const double exact = exact_crossover(x.precision, x.n, want);
    expect_crossover(x.measured, exact, what + " measured");
    expect_crossover(x.modelled, exact, what + " model");
    between += x.measured.where == Where::Between;
    EXPECT_EQ(x.fastest, std::vector<std::string>{"mma"}) << what;  // simt is the slower at every share
  }
  EXPECT_GE(between, 2);  // the synthetic rates put fp16's crossovers inside the shares timed
}

// Noise of ±2% on every time moves the fitted rates by about as much, no more.
TEST(SpammTune, FitIsStableUnderNoise) {
  const nlohmann::json want = truth();
  const tuner::SpammFit fit = tuner::fit_spamm(timed_cases(want, 0.02), models::shipped_model("spamm")["cost"]);
  for (const auto& [variant, term] : std::vector<std::pair<std::string, std::string>>{
           {"mma", "mma_3xtf32_flops"}, {"mma", "mma_f16_flops"}, {"cublas", "gemm_f32_flops"}, {"cublas", "gemm_f16_flops"}}) {
    const double expected = want["cost"][variant][term].get<double>();
    EXPECT_NEAR(fit.cost[variant][term].get<double>(), expected, 0.05 * expected) << variant << " " << term;
  }
}

TEST(SpammTune, TooFewTimingsKeepTheBaseCoefficients) {
  tuner::SpammCaseTimes one = timed_case(SpammPrecision::FP16, 4096, truth());
  one.shares.resize(1);  // one mma timing for two terms (c_tiles and the f16 rate)
  const nlohmann::json shipped = models::shipped_model("spamm");
  const tuner::SpammFit fit = tuner::fit_spamm({one}, shipped["cost"]);
  EXPECT_EQ(fit.cost["mma"], shipped["cost"]["mma"]);
  bool noted = false;
  for (const std::string& note : fit.notes) noted |= note.rfind("mma: kept (1 timings for 2 terms", 0) == 0;
  EXPECT_TRUE(noted) << nlohmann::json(fit.notes).dump();
  EXPECT_NE(fit.cost["cublas"]["gemm_f16_flops"], shipped["cost"]["cublas"]["gemm_f16_flops"]);  // one GEMM, one rate: fitted
}

TEST(SpammTune, BadTimingsAreRefusedNamingThem) {
  const nlohmann::json shipped = models::shipped_model("spamm");
  tuner::SpammCaseTimes c = timed_case(SpammPrecision::FP16, 4096, truth());
  c.shares[2].tiles[0].ms = -1;
  try {
    tuner::fit_spamm({c}, shipped["cost"]);
    FAIL() << "a negative time was accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("fp16 N=4096 mma share 10%"), std::string::npos) << e.what();
  }
  c = timed_case(SpammPrecision::FP16, 4096, truth());
  c.vendor = "magic";
  EXPECT_THROW(tuner::fit_spamm({c}, shipped["cost"]), InvalidInputError);
}

TEST(SpammTune, CrossoverShareInterpolatesTheFirstCrossing) {
  const std::vector<std::pair<double, double>> rising = {{0.01, 1.0}, {0.05, 2.0}, {0.10, 4.0}};
  CrossoverShare x = tuner::crossover_share(rising, 3.0);
  EXPECT_EQ(x.where, Where::Between);
  EXPECT_NEAR(x.share, 0.075, 1e-12);
  EXPECT_EQ(tuner::to_string(x), "7.5%");
  x = tuner::crossover_share(rising, 0.5);
  EXPECT_EQ(x.where, Where::Below);
  EXPECT_EQ(x.share, 0.01);
  EXPECT_EQ(tuner::to_string(x), "<1%");
  x = tuner::crossover_share(rising, 9.0);
  EXPECT_EQ(x.where, Where::Above);
  EXPECT_EQ(tuner::to_string(x), ">10%");
  EXPECT_EQ(tuner::crossover_share(rising, 1.0).share, 0.01);
  // A noisy dip after the first crossing does not move it.
  x = tuner::crossover_share({{0.01, 1.0}, {0.05, 3.0}, {0.10, 1.5}, {0.25, 6.0}}, 2.0);
  EXPECT_NEAR(x.share, 0.03, 1e-12);
  EXPECT_THROW(tuner::crossover_share({}, 1.0), InvalidInputError);
}

// The tuned model is one the planner takes (model_problem passes), under the tuned id, and
// its choice at a given τ switches from mma to cuBLAS at the fitted crossover.
TEST(SpammTune, TunedModelMovesThePlannersChoiceToTheFittedCrossover) {
  const nlohmann::json shipped = models::shipped_model("spamm");
  const std::vector<tuner::SpammCaseTimes> cases = timed_cases(truth());
  const tuner::SpammFit fit = tuner::fit_spamm(cases, shipped["cost"]);
  const nlohmann::json model = tuner::tuned_spamm_model(shipped, fit, cases, device().name);
  EXPECT_FALSE(models::model_problem(model, shipped).has_value());
  EXPECT_EQ(model["id"], plan::tuned_model_id(Op::SpAMM, device().name));
  EXPECT_NE(model["description"].get<std::string>().find("fp16 N=8192"), std::string::npos) << model["description"];
  const plan::SpammProblem p = problem_of(8192, SpammPrecision::FP16);
  // The kernel's own costs cross where the call minus the front meets the GEMM: the planner
  // leaves the front out at a given τ (every path pays it).
  const auto kernel = [&](double share) { return models::linear_cost(model["cost"]["mma"], terms_of(forced(at_share(p, share), p, "mma", model), "mma")); };
  const double gemm = models::linear_cost(model["cost"]["cublas"], terms_of(forced(at_share(p, 0.5), p, "mma", model), "cublas"));
  const double at0 = kernel(0), crossing = (gemm - at0) / (kernel(1) - at0);
  ASSERT_GT(crossing, 0.02);
  ASSERT_LT(crossing, 0.9);
  const plan::PlanSources tuned{std::make_shared<const nlohmann::json>(model), {}};
  // On sm_80, where wgmma (untimed here, so at the shipped rate) cannot run.
  plan::DeviceTarget sm80 = device();
  sm80.sm = 80;
  const Decision below = plan::plan_spamm(at_share(p, crossing * 0.9), p, sm80, {}, tuned);
  const Decision above = plan::plan_spamm(at_share(p, crossing * 1.1), p, sm80, {}, tuned);
  EXPECT_EQ(below.variant, "mma") << describe(below);
  EXPECT_EQ(above.variant, "cublas") << describe(above);
  EXPECT_EQ(below.model_id, model["id"]);
  EXPECT_EQ(below.source, DecisionSource::Model);
}

}  // namespace
}  // namespace sparsejit
