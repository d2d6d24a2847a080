// The fit of `sparsejit tune --op spgemm` (tuner/spgemm_fit.hpp) on synthetic timings: every
// variant the planner offers, timed as a known cost model would take it, with the terms the
// planner prices it with (plan_spgemm's candidates on generated matrices), so the fit must give
// back that model's coefficients, judge selections on the cases held out of a fit that did not
// see them, and make a tuned model that moves the planner's choice. Also the CLI's refusal of
// options that are not spgemm's, which comes before any GPU work.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>

#include "models/cost_model.hpp"
#include "models/model_check.hpp"
#include "models/model_store.hpp"
#include "plan/planner.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "support/test_support.hpp"
#include "tuner/spgemm_fit.hpp"

namespace sparsejit {
namespace {

plan::DeviceTarget device() {
  plan::DeviceTarget d;
  d.name = "Fake GPU spgemm";
  return d;
}

// A generated matrix's name (as `tune` names it) and its pair's features for C = A·A.
struct Input {
  std::string name;
  int32_t n = 0;
  SpgemmFeatures features;
};

// 3e4 to 3e6 products: small enough to count on the CPU, varied enough (rows, products, tiles)
// to tell every fitted term apart.
const std::vector<Input>& inputs() {
  static const std::vector<Input> all = [] {
    std::vector<Input> out;
    for (const char* spec : {"uniform:20000:4", "uniform:10000:16", "uniform:40000:8", "band:30000:8:32", "band:50000:4:16",
                             "blockdiag:8000:16:1", "blockdiag:4096:32:0", "rmat:8192:80000", "clustered:20000:8:0.5:8"}) {
      const Csr<double> a = generate::from_spec(spec, 7);
      out.push_back({std::string("gen:") + spec, a.rows, spgemm_features(a.pattern(), a.pattern())});
    }
    return out;
  }();
  return all;
}

Decision planned(const Input& in, DType dtype, const nlohmann::json& model) {
  return plan::plan_spgemm(in.features, {dtype, in.n, in.n, in.n}, device(), {}, {std::make_shared<const nlohmann::json>(model), {}});
}

// The shipped model with other coefficients for every term the timings exercise, the launch
// kept (the fit holds it). Per product, row_hash is 2x slower and cuSPARSE 15x faster than
// shipped, so that cuSPARSE wins the cases of more than about 1.5e6 products, which the shipped
// model gives to row_hash; row_hash keeps the smaller ones and bitmap_tc the dense blocks.
nlohmann::json truth() {
  nlohmann::json m = models::shipped_model("spgemm");
  nlohmann::json& c = m["cost"];
  c["row_hash"]["sync"] = 0.03;
  c["row_hash"]["rows"] = 5e-7;
  c["row_hash"]["products"] = 2e-7;
  c["row_hash"]["global_products"] = 3e-6;
  c["row_hash"]["dense_window_products"] = 2e-7;
  c["cusparse"]["rows"] = 2e-7;
  c["cusparse"]["products"] = 1e-8;
  c["bitmap_tc"]["sync"] = 0.05;
  c["bitmap_tc"]["tile_build_entries"] = 3e-7;
  c["bitmap_tc"]["tile_products"] = 4e-6;
  c["bitmap_tc"]["rows"] = 1e-6;
  return m;
}

// Every candidate the shipped model's plan offers, in f32 and f64, timed as `model` prices it;
// `wobble` scales the i-th time by 1 + wobble·(-1)^i (measurement noise).
std::vector<tuner::SpgemmTiming> timings(const nlohmann::json& model, const std::vector<Input>& of = inputs(), double wobble = 0) {
  const nlohmann::json shipped = models::shipped_model("spgemm");
  std::vector<tuner::SpgemmTiming> out;
  int i = 0;
  for (const Input& in : of)
    for (DType dtype : {DType::F32, DType::F64})
      for (const Candidate& c : planned(in, dtype, shipped).candidates) {
        if (!c.rejected_because.empty()) continue;
        const double ms = models::linear_cost(model["cost"][c.variant], c.terms) * (1 + wobble * ((i++ % 2) ? 1 : -1));
        out.push_back({in.name, dtype, c.variant, c.terms, ms});
      }
  return out;
}

// Per case with two or more timings: whether `cost` picks (cheapest priced) a variant within
// 10% of the case's fastest. {hits, cases}.
std::pair<int, int> hits(const nlohmann::json& cost, const std::vector<tuner::SpgemmTiming>& ts, const std::set<std::string>& matrices) {
  std::map<std::string, std::vector<const tuner::SpgemmTiming*>> cases;
  for (const tuner::SpgemmTiming& t : ts)
    if (matrices.count(t.matrix)) cases[tuner::case_name(t)].push_back(&t);
  int within = 0, judged = 0;
  for (const auto& [_, group] : cases) {
    if (group.size() < 2) continue;
    ++judged;
    const tuner::SpgemmTiming* pick = nullptr;
    double cheapest = std::numeric_limits<double>::infinity(), fastest = cheapest;
    for (const tuner::SpgemmTiming* t : group) {
      const double price = models::linear_cost(cost[t->variant], t->terms);
      if (price < cheapest) {
        cheapest = price;
        pick = t;
      }
      fastest = std::min(fastest, t->ms);
    }
    within += pick->ms <= 1.1 * fastest;
  }
  return {within, judged};
}

std::vector<tuner::SpgemmTiming> without(const std::vector<tuner::SpgemmTiming>& ts, const std::vector<std::string>& matrices) {
  std::vector<tuner::SpgemmTiming> out;
  for (const tuner::SpgemmTiming& t : ts)
    if (std::find(matrices.begin(), matrices.end(), t.matrix) == matrices.end()) out.push_back(t);
  return out;
}

template <class F>
void expect_invalid_naming(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming '" << needle << "'";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(SpgemmTune, TheTimingsCoverEveryVariantAndTermTheFitNeeds) {
  std::set<std::string> variants;
  for (const tuner::SpgemmTiming& t : timings(truth())) variants.insert(t.variant);
  EXPECT_EQ(variants, (std::set<std::string>{"bitmap_tc", "cusparse", "row_hash"}));
}

TEST(SpgemmTune, FitRecoversTheCoefficientsTheTimingsFollow) {
  const nlohmann::json want = truth(), shipped = models::shipped_model("spgemm");
  const tuner::SpgemmFit fit = tuner::fit_spgemm(timings(want), shipped["cost"]);
  for (const char* name : {"row_hash sync", "row_hash rows", "row_hash products", "cusparse rows", "cusparse products", "bitmap_tc sync",
                           "bitmap_tc tile_build_entries", "bitmap_tc tile_products", "bitmap_tc rows"})
    EXPECT_NE(std::find(fit.fitted.begin(), fit.fitted.end(), name), fit.fitted.end()) << name << " not fitted";
  for (const auto& [variant, coefficients] : shipped["cost"].items())
    for (const auto& [term, base] : coefficients.items()) {
      const std::string name = variant + " " + term;
      const bool fitted = std::find(fit.fitted.begin(), fit.fitted.end(), name) != fit.fitted.end();
      // What was fitted is the truth; what no timing exercises (and the launch) stays the shipped model's.
      const double expected = fitted ? want["cost"][variant][term].get<double>() : base.get<double>();
      EXPECT_NEAR(fit.cost[variant][term].get<double>(), expected, 1e-6 * expected) << name;
    }
  EXPECT_EQ(fit.cost["row_hash"]["launch"], shipped["cost"]["row_hash"]["launch"]);
  ASSERT_EQ(fit.notes.size(), 3u);  // one per variant timed
  for (const std::string& note : fit.notes) EXPECT_NE(note.find(": fitted "), std::string::npos) << note;
  // The truth picks within 10% on every case; the shipped model misses where cuSPARSE wins.
  EXPECT_EQ(fit.all.fitted.within, fit.all.fitted.cases);
  EXPECT_LT(fit.all.base.within, fit.all.base.cases);
  EXPECT_EQ(fit.all.base.cases, int(2 * inputs().size()));
}

// Noise of ±2% on every time moves the per-product rates by about as much, no more.
TEST(SpgemmTune, FitIsStableUnderNoise) {
  const nlohmann::json want = truth();
  const tuner::SpgemmFit fit = tuner::fit_spgemm(timings(want, inputs(), 0.02), models::shipped_model("spgemm")["cost"]);
  for (const auto& [variant, term] : std::vector<std::pair<std::string, std::string>>{
           {"row_hash", "products"}, {"cusparse", "products"}, {"bitmap_tc", "tile_products"}}) {
    const double expected = want["cost"][variant][term].get<double>();
    EXPECT_NEAR(fit.cost[variant][term].get<double>(), expected, 0.1 * expected) << variant << " " << term;
  }
}

TEST(SpgemmTune, TooFewTimingsKeepTheBaseCoefficients) {
  const nlohmann::json shipped = models::shipped_model("spgemm");
  std::vector<tuner::SpgemmTiming> one;
  for (const tuner::SpgemmTiming& t : timings(truth(), {inputs()[0]}))
    if (t.dtype == DType::F32) one.push_back(t);  // one timing per variant
  const tuner::SpgemmFit fit = tuner::fit_spgemm(one, shipped["cost"]);
  EXPECT_EQ(fit.cost, shipped["cost"]);
  EXPECT_TRUE(fit.fitted.empty());
  bool noted = false;
  for (const std::string& note : fit.notes) noted |= note.rfind("row_hash: kept (1 timings for 3 terms to fit", 0) == 0;
  EXPECT_TRUE(noted) << nlohmann::json(fit.notes).dump();
  // One matrix: nothing to hold out.
  EXPECT_TRUE(fit.held_out_matrices.empty());
  EXPECT_EQ(fit.held_out.fitted.cases, 0);
}

TEST(SpgemmTune, BadTimingsAreRefusedNamingThem) {
  const nlohmann::json shipped = models::shipped_model("spgemm");
  const std::vector<tuner::SpgemmTiming> good = timings(truth(), {inputs()[1]});
  for (double bad : {0.0, -1.0, std::nan("")}) {
    std::vector<tuner::SpgemmTiming> ts = good;
    ts[1].ms = bad;
    expect_invalid_naming([&] { tuner::fit_spgemm(ts, shipped["cost"]); }, "gen:uniform:10000:16 f32 " + ts[1].variant + " took ");
  }
  std::vector<tuner::SpgemmTiming> ts = good;
  ts[0].variant = "magic";
  expect_invalid_naming([&] { tuner::fit_spgemm(ts, shipped["cost"]); }, "no cost entry for variant 'magic'");
  expect_invalid_naming([&] { tuner::fit_spgemm({}, shipped["cost"]); }, "no timings");
}

// The held-out numbers are those of a fit on the other matrices alone, judged on the held-out
// ones: the same as fitting without them and judging there by hand. Their fastest variants
// are learnable from the others (one truth for every case), so the refit picks them where the
// shipped model does not.
TEST(SpgemmTune, HeldOutSelectionIsJudgedOnCasesTheFitDidNotSee) {
  const nlohmann::json shipped = models::shipped_model("spgemm");
  const std::vector<tuner::SpgemmTiming> ts = timings(truth());
  const tuner::SpgemmFit fit = tuner::fit_spgemm(ts, shipped["cost"]);
  ASSERT_FALSE(fit.held_out_matrices.empty());
  ASSERT_LT(fit.held_out_matrices.size(), inputs().size() / 2);
  const std::set<std::string> held(fit.held_out_matrices.begin(), fit.held_out_matrices.end());
  const tuner::SpgemmFit unseen = tuner::fit_spgemm(without(ts, fit.held_out_matrices), shipped["cost"]);
  const auto [fitted_within, cases] = hits(unseen.cost, ts, held);
  const auto [base_within, base_cases] = hits(shipped["cost"], ts, held);
  EXPECT_EQ(fit.held_out.fitted.cases, cases);
  EXPECT_EQ(fit.held_out.fitted.within, fitted_within);
  EXPECT_EQ(fit.held_out.base.cases, base_cases);
  EXPECT_EQ(fit.held_out.base.within, base_within);
  EXPECT_EQ(cases, int(2 * held.size()));
  EXPECT_EQ(fitted_within, cases);
  EXPECT_LT(base_within, cases) << "the held-out matrices should include one the shipped model gets wrong";
}

// The tuned model is one the planner takes (model_problem passes), under the tuned id, and
// moves its choice where the fitted constants say another variant is faster.
TEST(SpgemmTune, TunedModelMovesThePlannersChoice) {
  const nlohmann::json shipped = models::shipped_model("spgemm"), want = truth();
  const std::vector<tuner::SpgemmTiming> ts = timings(want);
  const tuner::SpgemmFit fit = tuner::fit_spgemm(ts, shipped["cost"]);
  const nlohmann::json model = tuner::tuned_spgemm_model(shipped, fit, ts, device().name);
  EXPECT_FALSE(models::model_problem(model, shipped).has_value());
  EXPECT_EQ(model["id"], plan::tuned_model_id(Op::SpGEMM, device().name));
  EXPECT_EQ(model["version"], "1");
  const std::string description = model["description"].get<std::string>();
  for (const std::string& text : {std::string("Fake GPU spgemm"), std::string("tune --op spgemm"), std::string("18 cases of 9 matrices"),
                                  fit.held_out_matrices.front()})
    EXPECT_NE(description.find(text), std::string::npos) << text << " missing from " << description;
  int moved = 0;
  for (const Input& in : inputs()) {
    const Decision before = planned(in, DType::F32, shipped), after = planned(in, DType::F32, model), truly = planned(in, DType::F32, want);
    EXPECT_EQ(after.variant, truly.variant) << in.name << ": " << describe(after);
    EXPECT_EQ(after.model_id, model["id"]);
    EXPECT_EQ(after.source, DecisionSource::Model);
    moved += after.variant != before.variant;
  }
  EXPECT_GT(moved, 0);
}

TEST(SpgemmTuneCli, OptionsOfOtherOpsAreRefusedNamingThem) {
  for (const auto& [args, needles] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"tune --op spgemm --sizes 4096", {"--sizes", "does not apply", "--op spamm"}},
           {"tune --op spgemm --k 32", {"--k", "does not apply", "--op spmm or sddmm"}},
           {"tune --op spgemm --from-records", {"--from-records", "does not apply"}},
           {"tune --op spgemm --restart", {"--restart", "does not apply"}},
           {"tune --op spamm --matrices .", {"--matrices", "does not apply", "--op spmm, sddmm or spgemm"}},
           {"tune --op spgemm --dtype f16", {"--dtype f16"}},
           {"tune --op spgemm --matrices /nonexistent-spgemm-dir", {"'/nonexistent-spgemm-dir' is not a directory"}}}) {
    SCOPED_TRACE(args);
    const test::CliResult r = test::run_cli(args);
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    for (const std::string& needle : needles) EXPECT_NE(r.out.find(needle), std::string::npos) << "missing '" << needle << "' in: " << r.out;
  }
}

}  // namespace
}  // namespace sparsejit
