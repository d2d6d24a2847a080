// What every planner shares: forced choices, measured selection's shortlist and rounds, model
// evaluation and the Decision record (CPU only). Each op's planner has its own suite:
// plan_spmm_test.cpp and plan_sddmm_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <limits>
#include <set>

#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "models/model_check.hpp"
#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/measure_policy.hpp"
#include "plan/planner.hpp"
#include "ops/plan_sources.hpp"
#include "plan/tuned.hpp"
#include "variants/spmm/spmm_variant.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/matrix.hpp"
#include "support/plan_support.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using test::candidate;
using test::forcing_neighbour;
using test::small_features;

struct ForceEnv : test::ScopedEnv {
  explicit ForceEnv(const char* value) : test::ScopedEnv("SPARSEJIT_FORCE", value) {}
};

TEST(Force, ParsesOpVariantAndParams) {
  const ForcedChoice c = parse_force("spmm:csr_rowwarp:warps_per_block=8,flag=true,name=x,scale=0.5");
  EXPECT_EQ(c.op, Op::SpMM);
  EXPECT_EQ(c.variant, "csr_rowwarp");
  EXPECT_EQ(c.params["warps_per_block"], 8);
  EXPECT_EQ(c.params["flag"], true);
  EXPECT_EQ(c.params["name"], "x");
  EXPECT_DOUBLE_EQ(c.params["scale"].get<double>(), 0.5);
  EXPECT_TRUE(parse_force("sddmm:cusparse").params.empty());
}

TEST(Force, RejectsMalformedSpecs) {
  for (const char* bad : {"spmm", "spmm:", ":x", "gemm:x", "spmm:x:novalue", "spmm:x:=3"}) {
    EXPECT_THROW(parse_force(bad), InvalidInputError) << bad;
  }
}

TEST(Plan, ModelPicksTheCheapestEligibleCandidate) {
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, false}, {}, {});
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "spmm-default");
  // Every registered variant is a candidate (rs rejected: no split source here).
  ASSERT_EQ(d.candidates.size(), variants::SpmmRegistry::all().size());
  double best = 1e300;
  std::string best_name;
  for (const auto& c : d.candidates) {
    if (!c.rejected_because.empty()) continue;
    EXPECT_GT(c.predicted_ms, 0.0) << c.variant;
    if (c.predicted_ms < best) { best = c.predicted_ms; best_name = c.variant; }
  }
  EXPECT_EQ(d.variant, best_name);
  EXPECT_EQ(d.features["k"], 32);
  EXPECT_EQ(d.features["nnz"], 6);
}

TEST(Plan, OptionsForceVariantAndParams) {
  Options o;
  o.variant = "csr_rowwarp";
  o.params = {{"warps_per_block", 8}};
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F64, false}, {}, o);
  EXPECT_EQ(d.source, DecisionSource::Forced);
  EXPECT_EQ(d.variant, "csr_rowwarp");
  EXPECT_EQ(d.params["warps_per_block"], 8);
  o.params = {{"tile", 8}};
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F64, false}, {}, o), InvalidInputError);
  o.variant = "nope";
  try {
    plan::plan_spmm(small_features(), {32, DType::F64, false}, {}, o);
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("csr_rowwarp"), std::string::npos) << e.what();
  }
}

// SPARSEJIT_FORCE reaches a planner only through the options the executor gathers
// (ops::with_environment_force); the planner itself reads no environment.
TEST(Plan, EnvironmentForcesOnlyItsOp) {
  ForceEnv env("sddmm:cusparse:alg=2");
  const Options sddmm = ops::with_environment_force(Op::SDDMM, {});
  EXPECT_EQ(sddmm.variant, "cusparse");
  EXPECT_EQ(sddmm.params, nlohmann::json({{"alg", 2}}));
  EXPECT_TRUE(ops::with_environment_force(Op::SpMM, {}).variant.empty());
  Options own;
  own.variant = "coo_flat";
  EXPECT_EQ(ops::with_environment_force(Op::SDDMM, own).variant, "coo_flat");  // the caller's own choice wins
  EXPECT_EQ(plan::plan_sddmm(small_features(), {64, DType::F32, 64, 64}, {}, {}).source, DecisionSource::Model);
}

TEST(Plan, UnsupportedTypeRejectsEveryCandidate) {
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F16, false}, {}, {}), UnsupportedError);
}

TEST(Plan, DecisionJsonAndDescriptionNameTheChoice) {
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, false}, {}, {});
  const auto j = to_json(d);
  EXPECT_EQ(j["variant"], d.variant);
  EXPECT_EQ(j["source"], "model");
  EXPECT_EQ(j["candidates"].size(), variants::SpmmRegistry::all().size());
  const std::string text = describe(d);
  EXPECT_NE(text.find("* " + d.variant), std::string::npos) << text;
  EXPECT_NE(text.find("spmm-default"), std::string::npos) << text;
}

TEST(Plan, DecisionShowsTheMeasureStepsInTheirOrder) {
  Decision d = plan::plan_spmm(small_features(), {32, DType::F32, false}, {}, {});
  EXPECT_TRUE(to_json(d)["measure_steps"].empty());
  EXPECT_EQ(describe(d).find("timed, in order"), std::string::npos) << describe(d);
  d.measure_steps = {{"csr_merge", {{"nnz_per_group", 128}}, 0.5, 6, 7.25},
                     {"cusparse", {{"alg", 2}}, std::numeric_limits<double>::infinity(), 0, 40.5}};
  const auto steps = to_json(d)["measure_steps"];
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0]["variant"], "csr_merge");
  EXPECT_EQ(steps[0]["calls"], 6);
  EXPECT_EQ(steps[0]["host_ms"], 7.25);
  EXPECT_EQ(steps[0]["call_ms"], 0.5);
  EXPECT_TRUE(steps[1]["call_ms"].is_null());  // it failed: no time, not infinity
  const std::string text = describe(d);
  const auto first = text.find("csr_merge            {\"nnz_per_group\":128}: 7.25 ms, 6 calls");
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_GT(text.find("cusparse             {\"alg\":2}: 40.5 ms, 0 calls"), first) << text;
}

// A planned SpMM decision with hand-set predictions: "a" chosen at 1 ms, then "f" 1.2, "b"
// 1.5, "c" 1.9, "d" 2.5 (past the shortlist's spread), "e" rejected, the vendor at 5.
Decision priced_decision() {
  Decision d;
  d.variant = "a";
  d.params = {{"p", 1}};
  d.source = DecisionSource::Model;
  const std::pair<const char*, double> priced[] = {{"d", 2.5}, {"b", 1.5}, {"a", 1.0}, {"cusparse", 5.0}, {"c", 1.9}, {"f", 1.2}};
  for (const auto& [name, ms] : priced) d.candidates.push_back({name, {{"p", 1}}, ms, ""});
  d.candidates.push_back({"e", {{"p", 1}}, 0.5, "cannot run this problem"});
  return d;
}

std::vector<std::string> names(const std::vector<plan::TimedChoice>& list) {
  std::vector<std::string> out;
  for (const auto& t : list) out.push_back(t.variant);
  return out;
}

TEST(MeasuredSelection, ShortlistIsTheChoiceTheNextCheapestOfOursAndTheVendor) {
  Decision d = priced_decision();
  EXPECT_EQ(names(plan::measured_shortlist(d, "cusparse")), (std::vector<std::string>{"a", "f", "b", "cusparse"}));
  // Past the spread: with f and b gone, c (1.9) is in, d (2.5 > 2 x 1.0) is not.
  d.candidates.erase(std::remove_if(d.candidates.begin(), d.candidates.end(),
                                    [](const Candidate& c) { return c.variant == "f" || c.variant == "b"; }),
                     d.candidates.end());
  EXPECT_EQ(names(plan::measured_shortlist(d, "cusparse")), (std::vector<std::string>{"a", "c", "cusparse"}));
  // A tuned choice at other params than the candidate's is timed as chosen, and the candidate
  // at its planned params too.
  d.params = {{"p", 2}};
  const auto tuned = plan::measured_shortlist(d, "cusparse");
  ASSERT_EQ(names(tuned), (std::vector<std::string>{"a", "a", "c", "cusparse"}));
  EXPECT_EQ(tuned[0].params["p"], 2);
  EXPECT_EQ(tuned[1].params["p"], 1);
}

TEST(MeasuredSelection, VendorChoiceTimesOursAndForcedOrLoneChoicesTimeNothing) {
  Decision d = priced_decision();
  d.variant = "cusparse";
  EXPECT_EQ(names(plan::measured_shortlist(d, "cusparse")), (std::vector<std::string>{"cusparse", "a", "f", "b"}));
  d.source = DecisionSource::Forced;
  EXPECT_TRUE(plan::measured_shortlist(d, "cusparse").empty());
  Decision lone;
  lone.variant = "a";
  lone.source = DecisionSource::Model;
  lone.candidates.push_back({"a", nlohmann::json::object(), 1.0, ""});
  lone.candidates.push_back({"cusparse", nlohmann::json::object(), 2.0, "value type not supported"});
  EXPECT_TRUE(plan::measured_shortlist(lone, "cusparse").empty());
}

TEST(MeasuredSelection, FastestTimeWinsTiesKeepTheEarlierAndFailuresNeverWin) {
  Decision d = priced_decision();
  std::vector<plan::TimedChoice> times = plan::measured_shortlist(d, "cusparse");
  for (auto& t : times) t.ms = t.variant == "a" ? 2.0 : t.variant == "f" ? 1.99 : t.variant == "b" ? 1.5 : 3.0;
  ASSERT_TRUE(plan::take_fastest(d, times, "cusparse", plan::kSpmmVendorMargin));
  EXPECT_EQ(d.variant, "b");
  EXPECT_EQ(d.source, DecisionSource::Measured);
  for (const auto& c : d.candidates) {
    const bool timed = c.variant == "a" || c.variant == "f" || c.variant == "b" || c.variant == "cusparse";
    EXPECT_EQ(c.measured_ms >= 0, timed) << c.variant;
  }
  EXPECT_NE(describe(d).find("measured 1.5 ms"), std::string::npos) << describe(d);
  EXPECT_EQ(to_json(d)["source"], "measured");

  Decision tie = priced_decision();
  for (auto& t : times) t.ms = t.variant == "a" ? 1.0 : t.variant == "f" ? 0.99 : 5.0;  // f within 2% of a
  ASSERT_TRUE(plan::take_fastest(tie, times, "cusparse", plan::kSpmmVendorMargin));
  EXPECT_EQ(tie.variant, "a");

  // SpMM: ours 4% faster than the vendor is not enough (kSpmmVendorMargin); 6% is. SDDMM: 4% is.
  Decision close = priced_decision();
  Decision sddmm = priced_decision();
  for (auto& t : times) t.ms = t.variant == "cusparse" ? 1.0 : t.variant == "b" ? 0.96 : 5.0;
  ASSERT_TRUE(plan::take_fastest(close, times, "cusparse", plan::kSpmmVendorMargin));
  EXPECT_EQ(close.variant, "cusparse");
  ASSERT_TRUE(plan::take_fastest(sddmm, times, "cusparse", plan::kSddmmVendorMargin));
  EXPECT_EQ(sddmm.variant, "b");
  for (auto& t : times) t.ms = t.variant == "cusparse" ? 1.0 : t.variant == "b" ? 0.94 : 5.0;
  ASSERT_TRUE(plan::take_fastest(close, times, "cusparse", plan::kSpmmVendorMargin));
  EXPECT_EQ(close.variant, "b");

  Decision failed = priced_decision();
  for (auto& t : times) t.ms = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(plan::take_fastest(failed, times, "cusparse", plan::kSpmmVendorMargin));
  EXPECT_EQ(failed.variant, "a");
  EXPECT_EQ(failed.source, DecisionSource::Model);
  for (const auto& c : failed.candidates) EXPECT_LT(c.measured_ms, 0) << c.variant;
}

TEST(MeasuredSelection, UnmatchedTimesAreAppendedUnpriced) {
  Decision d = priced_decision();
  const std::vector<plan::TimedChoice> times = {{"a", {{"p", 1}}, 2.0}, {"a", {{"p", 7}}, 1.0}};
  ASSERT_TRUE(plan::take_fastest(d, times, "cusparse", plan::kSpmmVendorMargin));
  EXPECT_EQ(d.params["p"], 7);
  const Candidate& added = d.candidates.back();
  EXPECT_EQ(added.params["p"], 7);
  EXPECT_EQ(added.measured_ms, 1.0);
  EXPECT_TRUE(std::isnan(added.predicted_ms));
  EXPECT_NE(describe(d).find("(not priced), measured 1 ms"), std::string::npos) << describe(d);
}

// Times recorded for another handle or process are taken as source recorded, but never when
// their fastest is a variant this decision rejects.
TEST(MeasuredSelection, RecordedTimesNeverChooseARejectedVariant) {
  Decision d = priced_decision();
  const std::vector<plan::TimedChoice> times = {{"a", {{"p", 1}}, 2.0}, {"b", {{"p", 1}}, 1.0}, {"cusparse", {{"p", 1}}, 3.0}};
  ASSERT_TRUE(plan::take_fastest(d, times, "cusparse", plan::kSpmmVendorMargin, DecisionSource::Recorded));
  EXPECT_EQ(d.variant, "b");
  EXPECT_EQ(d.source, DecisionSource::Recorded);
  EXPECT_EQ(to_json(d)["source"], "recorded");

  Decision rejecting = priced_decision();
  const std::vector<plan::TimedChoice> with_e = {{"a", {{"p", 1}}, 2.0}, {"e", {{"p", 1}}, 0.5}};
  EXPECT_FALSE(plan::take_fastest(rejecting, with_e, "cusparse", plan::kSpmmVendorMargin, DecisionSource::Recorded));
  EXPECT_EQ(rejecting.variant, "a");
  EXPECT_EQ(rejecting.source, DecisionSource::Model);
  for (const auto& c : rejecting.candidates) EXPECT_LT(c.measured_ms, 0) << c.variant;
}

// The second round: neighbours of the two fastest finite times, none already timed or twice.
TEST(MeasuredSelection, NextRoundNamesTheNeighboursOfTheTwoFastestOnce) {
  const std::vector<plan::TimedChoice> timed = {{"a", {{"p", 1}}, 3.0},
                                                {"b", {{"p", 1}}, 1.0},
                                                {"c", {{"p", 1}}, std::numeric_limits<double>::infinity()},
                                                {"d", {{"p", 1}}, 2.0}};
  std::vector<std::string> asked;
  const auto neighbors = [&](const plan::TimedChoice& t) {
    asked.push_back(t.variant);
    // Every setting's neighbours: p = 2 of itself, and a's p = 1 (timed already) and b's p = 5.
    return std::vector<plan::TimedChoice>{{t.variant, {{"p", 2}}}, {"a", {{"p", 1}}}, {"b", {{"p", 5}}}};
  };
  const auto round = plan::next_round(timed, neighbors);
  EXPECT_EQ(asked, (std::vector<std::string>{"b", "d"}));
  ASSERT_EQ(round.size(), 3u);
  EXPECT_EQ(round[0].variant, "b");
  EXPECT_EQ(round[0].params["p"], 2);
  EXPECT_EQ(round[1].variant, "b");
  EXPECT_EQ(round[1].params["p"], 5);
  EXPECT_EQ(round[2].variant, "d");
  EXPECT_EQ(round[2].params["p"], 2);
  EXPECT_TRUE(plan::next_round({{"a", {}, std::numeric_limits<double>::infinity()}}, neighbors).empty());
}

TEST(MeasuredSelection, NeighboursAreValidWhenForcedAndDifferFromTheirCentre) {
  const Csr<double> a = generate::from_spec("rmat:4096:40000", 3);
  const Features f = inspect(a.pattern());
  const plan::SplitStatsSource split = [&](int32_t w, int32_t t) { return row_segment_split(a.pattern(), w, t); };
  for (int32_t k : {1, 32, 128, 512}) {
    const plan::SpmmProblem problem{k, DType::F32, false};
    for (const auto& [variant, params] : plan::spmm_search_space(f, problem, {})) {
      for (const auto& n : plan::spmm_neighbors(variant, params, problem, {})) {
        SCOPED_TRACE(variant + " " + params.dump() + " -> " + n.params.dump() + " k=" + std::to_string(k));
        EXPECT_NO_THROW(plan::plan_spmm(f, problem, {}, forcing_neighbour(variant, params, n), split));
      }
    }
  }
  // csr_vector at K = 128 (32 lanes, one vector each) tries two rows per warp.
  const nlohmann::json k128 = {{"vec_width", 4}, {"lanes_per_row", 32}, {"cf_h", 1}, {"unroll", 4}, {"block_threads", 256}};
  const auto vector = plan::spmm_neighbors("csr_vector", k128, {128, DType::F32, false}, {});
  ASSERT_EQ(vector.size(), 1u);
  EXPECT_EQ(vector[0].params["lanes_per_row"], 16);
  EXPECT_EQ(vector[0].params["cf_h"], 2);
  // cuSPARSE A·B: the other two algorithms; Aᵀ·B: ALG1 only (ALG3 has no transpose).
  EXPECT_EQ(plan::spmm_neighbors("cusparse", {{"alg", 3}}, {128, DType::F32, false}, {}).size(), 2u);
  EXPECT_EQ(plan::spmm_neighbors("cusparse", {{"alg", 2}}, {128, DType::F32, true}, {}).size(), 1u);
}

TEST(Models, TreeEvaluationRecordsThePath) {
  const auto tree = nlohmann::json::parse(R"({"feature": "density", "threshold": 1e-4,
      "left": {"leaf": "coo"}, "right": {"feature": "k", "threshold": 64, "left": {"leaf": "small"}, "right": {"leaf": "big"}}})");
  const auto r = models::evaluate_tree(tree, {{"density", 0.5}, {"k", 128}});
  EXPECT_EQ(r.leaf, "big");
  ASSERT_EQ(r.path.size(), 2u);
  EXPECT_EQ(r.path[0].feature, "density");
  EXPECT_FALSE(r.path[0].taken);
  EXPECT_EQ(models::evaluate_tree(tree, {{"density", 1e-5}}).leaf, "coo");
  EXPECT_THROW(models::evaluate_tree(tree, {{"density", 0.5}}), InvalidInputError);  // k missing
  EXPECT_THROW(models::validate_tree(nlohmann::json::parse(R"({"feature": "x", "left": {"leaf": 1}, "right": {"leaf": 2}})")), InvalidInputError);
}

TEST(Models, LinearCostSumsCoefficientTimesTerm) {
  EXPECT_DOUBLE_EQ(models::linear_cost({{"a", 2.0}, {"b", 0.5}}, {{"a", 3.0}, {"b", 4.0}, {"c", 100.0}}), 8.0);
  EXPECT_THROW(models::linear_cost({{"a", 2.0}}, {{"b", 1.0}}), InvalidInputError);
}

TEST(Models, EveryShippedModelParses) {
  const auto names = models::shipped_model_names();
  EXPECT_GE(names.size(), 2u);
  for (const auto& n : names) {
    const auto& m = models::shipped_model(n);
    EXPECT_TRUE(m.contains("id")) << n;
    EXPECT_TRUE(m.contains("cost")) << n;
  }
  EXPECT_THROW(models::shipped_model("nope"), InvalidInputError);
}

// The model's margin: the cheapest other eligible candidate over the choice's price. priced
// has a at 1.0 and f at 1.2 (e, at 0.5, cannot run); a cheaper runner-up, a forced or unpriced
// choice and a lone candidate are covered.
TEST(MeasurePolicy, MarginIsTheRunnerUpOverTheChoice) {
  Decision d = priced_decision();
  ASSERT_TRUE(plan::model_margin(d).has_value());
  EXPECT_DOUBLE_EQ(*plan::model_margin(d), 1.2);
  EXPECT_FALSE(plan::margin_skips_measuring(d, plan::kDefaultSkipMargin));
  Decision wide;
  wide.variant = "a";
  wide.candidates = {{"a", {}, 1.0, ""}, {"b", {}, 5.0, ""}, {"cusparse", {}, 4.5, ""}, {"e", {}, 0.1, "cannot run"}};
  EXPECT_DOUBLE_EQ(*plan::model_margin(wide), 4.5);
  EXPECT_TRUE(plan::margin_skips_measuring(wide, 4.0));
  EXPECT_FALSE(plan::margin_skips_measuring(wide, 5.0));
  EXPECT_FALSE(plan::margin_skips_measuring(wide, std::numeric_limits<double>::infinity()));
  // A tree or tuned choice the cost formulas price above another candidate: margin below 1.
  wide.variant = "b";
  EXPECT_DOUBLE_EQ(*plan::model_margin(wide), 0.2);
  // Nothing to compare: a lone eligible candidate, or an unpriced choice.
  Decision lone;
  lone.variant = "a";
  lone.candidates = {{"a", {}, 1.0, ""}, {"b", {}, 0.5, "cannot run"}};
  EXPECT_FALSE(plan::model_margin(lone).has_value());
  EXPECT_FALSE(plan::margin_skips_measuring(lone, 1.0));
  lone.candidates = {{"a", {}, std::numeric_limits<double>::quiet_NaN(), ""}, {"b", {}, 9.0, ""}};
  EXPECT_FALSE(plan::model_margin(lone).has_value());
}

// The margin is taken without the neighbours' regret term: cuSPARSE priced at 1.37 times the
// choice, 1.15 of it regret (Cornell5 at K = 128 under SpMM v12), is a margin of 1.2, so it is
// timed at v12's 1.3. The choice's own regret is divided out as well.
TEST(MeasurePolicy, MarginLeavesOutTheRegretTerm) {
  Decision d;
  d.variant = "csr_merge";
  d.candidates = {{"csr_merge", {}, 1.0, ""}, {"cusparse", {}, 1.37, ""}, {"rs", {}, 1.9, ""}};
  d.candidates[1].regret = 1.15;
  d.candidates[2].regret = 1.19;
  ASSERT_TRUE(plan::model_margin(d).has_value());
  EXPECT_NEAR(*plan::model_margin(d), 1.37 / 1.15, 1e-12);
  EXPECT_FALSE(plan::margin_skips_measuring(d, 1.3));
  d.candidates[1].regret = 1.0;
  EXPECT_TRUE(plan::margin_skips_measuring(d, 1.3));
  d.candidates[0].regret = 1.1;  // the choice's estimate 1/1.1: the margin grows
  EXPECT_NEAR(*plan::model_margin(d), 1.37 * 1.1, 1e-12);
}

namespace {

// SDDMM's host cost of formats a nonzero, 4 ns: the numbers below are worked out with it.
constexpr double kPerNonzero = plan::kSddmmPrepareMsPerNonzero;

// A decision whose choice "a" is priced at `choice_ms` and the vendor at `vendor_ms`.
Decision priced_decision(double choice_ms, double vendor_ms) {
  Decision d;
  d.variant = "a";
  d.candidates = {{"a", {}, choice_ms, ""}, {"b", {}, 2 * choice_ms, ""}, {"cusparse", {}, vendor_ms, ""}};
  return d;
}

}  // namespace

// The limit: 50 calls of the choice's predicted time, capped by measure_budget_ms, then 50 of
// the fastest call measured (what auto runs afterwards); unpriced, measure_budget_ms alone.
TEST(MeasurePolicy, LimitCountsCallsOfThePredictedThenTheFastestMeasuredCall) {
  const Options defaults;
  plan::SelectionBudget budget(priced_decision(0.4, 0.6), "cusparse", defaults, 100000, kPerNonzero);
  EXPECT_DOUBLE_EQ(budget.limit_ms(), 20.0);  // 50 x 0.4 ms
  budget.note_setting(0.5, 0);
  EXPECT_DOUBLE_EQ(budget.limit_ms(), 25.0);  // measured slower than priced
  budget.note_setting(0.3, 1.0);
  EXPECT_DOUBLE_EQ(budget.limit_ms(), 15.0);
  budget.note_setting(std::numeric_limits<double>::infinity(), 0);  // a setting that failed
  EXPECT_DOUBLE_EQ(budget.limit_ms(), 15.0);
  EXPECT_DOUBLE_EQ(plan::SelectionBudget(priced_decision(40, 40), "cusparse", defaults, 1, kPerNonzero).limit_ms(), 250.0);
  Options unbounded;
  unbounded.measure_budget_calls = std::numeric_limits<double>::infinity();
  EXPECT_DOUBLE_EQ(plan::SelectionBudget(priced_decision(0.4, 0.6), "cusparse", unbounded, 1, kPerNonzero).limit_ms(), 250.0);
  EXPECT_DOUBLE_EQ(plan::SelectionBudget(priced_decision(std::numeric_limits<double>::quiet_NaN(), 1), "cusparse", defaults, 1, kPerNonzero).limit_ms(),
                   250.0);
}

// Nothing is timed where the choice and the vendor (a synchronization and preparation of
// kSettingCostMs and four calls each) do not fit 50 calls of the choice: calls of microseconds.
TEST(MeasurePolicy, SkipsWhereTheTwoRequiredSettingsDoNotFit) {
  const Options defaults;
  // 0.1 ms calls: 0.25 + 0.4 (choice) + 0.25 + 0.4 (vendor) = 1.3 <= 5 ms, on any pattern size.
  EXPECT_FALSE(plan::SelectionBudget(priced_decision(0.1, 0.1), "cusparse", defaults, 100000, kPerNonzero).skips_measuring());
  EXPECT_FALSE(plan::SelectionBudget(priced_decision(0.1, 0.1), "cusparse", defaults, 20000000, kPerNonzero).skips_measuring());
  // 0.012 ms calls: 0.298 + 0.298 = 0.596 <= 0.6 ms; 0.011 ms: 0.594 > 0.55 ms.
  EXPECT_FALSE(plan::SelectionBudget(priced_decision(0.012, 0.012), "cusparse", defaults, 100000, kPerNonzero).skips_measuring());
  EXPECT_TRUE(plan::SelectionBudget(priced_decision(0.011, 0.011), "cusparse", defaults, 100000, kPerNonzero).skips_measuring());
  // The vendor priced slower counts as slower: 0.73 + 0.25 + 5.2 > 6 ms.
  EXPECT_TRUE(plan::SelectionBudget(priced_decision(0.12, 1.3), "cusparse", defaults, 100000, kPerNonzero).skips_measuring());
  EXPECT_DOUBLE_EQ(plan::setting_prepare_ms(0, kPerNonzero), plan::kSettingCostMs);
  EXPECT_DOUBLE_EQ(plan::setting_prepare_ms(1000000, kPerNonzero), plan::kSettingCostMs + 4.0);
}

// An optional setting starts while the larger of the preparation estimate and the slowest
// preparation seen (doubled for a variant not prepared yet), plus four calls of the fastest so
// far, fits what is left.
TEST(MeasurePolicy, AnotherSettingStartsWhileItsPredictedCostFits) {
  const Options defaults;
  plan::SelectionBudget budget(priced_decision(0.2, 0.2), "cusparse", defaults, 100000, kPerNonzero);  // limit 10 ms
  budget.note_setting(0.2, 0);
  EXPECT_TRUE(budget.allows_next(8.5, false));   // 8.5 + 0.65 + 0.8 = 9.95
  EXPECT_FALSE(budget.allows_next(8.6, false));  // 10.05
  EXPECT_TRUE(budget.allows_next(7.8, true));    // 7.8 + 1.3 + 0.8 = 9.9
  EXPECT_FALSE(budget.allows_next(8.0, true));   // 10.1
  budget.note_setting(0.25, 3.0);                // a preparation of 3 ms seen
  EXPECT_TRUE(budget.allows_next(6.1, false));   // 6.1 + 3 + 0.8 = 9.9
  EXPECT_FALSE(budget.allows_next(6.3, false));  // 10.1
  EXPECT_TRUE(budget.allows_next(3.1, true));    // 3.1 + 6 + 0.8 = 9.9
  EXPECT_FALSE(budget.allows_next(3.3, true));
}

// A setting whose kernels are not in the cache costs an NVRTC compile (kCompileMs) besides.
TEST(MeasurePolicy, ASettingThatCompilesCostsACompileMore) {
  const Options defaults;
  plan::SelectionBudget budget(priced_decision(5, 5), "cusparse", defaults, 100000, kPerNonzero);  // limit 250 ms
  budget.note_setting(3.0, 0);  // limit 150 ms, a setting costs 0.65 ms + 4 calls of 3 ms
  EXPECT_TRUE(budget.allows_next(137.3, false));       // 137.3 + 0.65 + 12 = 149.95
  EXPECT_FALSE(budget.allows_next(137.4, false));      // 150.05
  EXPECT_TRUE(budget.allows_next(37.3, false, true));  // + 100 for the compile = 149.95
  EXPECT_FALSE(budget.allows_next(37.4, false, true));
}

// One more of ours is timed whatever the budget only when the vendor, timed second, beat the
// choice, timed first.
TEST(MeasurePolicy, TheVendorBeatingTheChoiceTimesOneMoreOfOurs) {
  const auto timed = [](double choice_ms, double vendor_ms) {
    return std::vector<plan::TimedChoice>{{"a", {}, choice_ms}, {"cusparse", {}, vendor_ms}};
  };
  EXPECT_TRUE(plan::vendor_beat_the_choice(timed(0.02, 0.015), "cusparse"));
  EXPECT_FALSE(plan::vendor_beat_the_choice(timed(0.015, 0.02), "cusparse"));
  EXPECT_FALSE(plan::vendor_beat_the_choice(timed(0.02, 0.02), "cusparse"));
  std::vector<plan::TimedChoice> three = timed(0.02, 0.015);
  three.push_back({"b", {}, 0.01});
  EXPECT_FALSE(plan::vendor_beat_the_choice(three, "cusparse"));  // the one more is timed already
  EXPECT_FALSE(plan::vendor_beat_the_choice({{"a", {}, 0.02}}, "cusparse"));
  EXPECT_FALSE(plan::vendor_beat_the_choice({{"cusparse", {}, 0.02}, {"cusparse", {}, 0.01}}, "cusparse"));
}

// Timed whatever the budget: the first setting, the vendor's first, and one of ours after a
// vendor that beat the choice; nothing else.
TEST(MeasurePolicy, TheChoiceTheVendorAndOneRescueAreAlwaysTimed) {
  const plan::TimedChoice ours{"b", {}, 0.0}, vendor{"cusparse", {{"alg", 2}}, 0.0};
  EXPECT_TRUE(plan::always_timed({}, ours, "cusparse"));
  const std::vector<plan::TimedChoice> choice{{"a", {}, 0.02}};
  EXPECT_TRUE(plan::always_timed(choice, vendor, "cusparse"));
  EXPECT_FALSE(plan::always_timed(choice, ours, "cusparse"));
  std::vector<plan::TimedChoice> lost = choice;
  lost.push_back({"cusparse", {}, 0.015});
  EXPECT_TRUE(plan::always_timed(lost, ours, "cusparse"));
  EXPECT_FALSE(plan::always_timed(lost, vendor, "cusparse"));  // another algorithm: optional
  std::vector<plan::TimedChoice> won = choice;
  won.push_back({"cusparse", {}, 0.03});
  EXPECT_FALSE(plan::always_timed(won, ours, "cusparse"));
}

// Repeats: short calls repeat until about 2 ms (2 to 12 calls); a call of 2 ms or more, or a
// probe clearly slower than the fastest setting, is its own measurement; the limit left and a
// third of the limit cap the repeats.
TEST(MeasurePolicy, RepeatsFollowTheProbeAndTheLimit) {
  Options roomy;
  roomy.measure_budget_calls = std::numeric_limits<double>::infinity();  // 250 ms
  plan::SelectionBudget budget(priced_decision(0.1, 0.1), "cusparse", roomy, 1000, kPerNonzero);
  EXPECT_EQ(budget.repeats(0.005, 0), 12);
  EXPECT_EQ(budget.repeats(0.1, 0), 12);
  EXPECT_EQ(budget.repeats(0.25, 0), 8);
  EXPECT_EQ(budget.repeats(0.9, 0), 2);
  EXPECT_EQ(budget.repeats(1.5, 0), 2);
  EXPECT_EQ(budget.repeats(2.0, 0), 0);
  EXPECT_EQ(budget.repeats(40.0, 0), 0);
  EXPECT_EQ(budget.repeats(0.0, 0), 12);
  EXPECT_EQ(budget.repeats(0.1, 249.5), 5);   // 0.5 ms left
  EXPECT_EQ(budget.repeats(0.5, 249.25), 1);  // under the minimum: what the limit affords
  EXPECT_EQ(budget.repeats(0.5, 250), 0);     // nothing left: the probe is the time
  EXPECT_EQ(budget.repeats(0.5, 300), 0);
  budget.note_setting(0.1, 0);
  EXPECT_EQ(budget.repeats(0.12, 0), 12);  // within 1.25x of the fastest: worth repeating
  EXPECT_EQ(budget.repeats(0.13, 0), 0);   // cannot win
  // Limit 50 x 0.1 ms: a probe of 0.1 ms repeats the 12 wanted (a third of 5 ms is 16 calls);
  // one of 0.2 ms (priced too low) 8 of the 10 wanted.
  const Options defaults;
  plan::SelectionBudget fifty(priced_decision(0.1, 0.1), "cusparse", defaults, 1000, kPerNonzero);
  EXPECT_EQ(fifty.repeats(0.1, 0), 12);
  EXPECT_EQ(fifty.repeats(0.2, 0), 8);
}

// The threshold: the caller's Options::measure_skip_margin, else the model's, else the default;
// the shipped SpMM model carries its own, which the planner copies into the Decision, and a
// malformed one is refused by name (a damaged tuned model then falls back to the shipped one).
TEST(MeasurePolicy, TheSkipMarginIsTheCallersElseTheModelsElseTheDefault) {
  Decision d = priced_decision();
  Options o;
  EXPECT_EQ(plan::skip_threshold(d, o), plan::kDefaultSkipMargin);
  d.model_skip_margin = 1.3;
  EXPECT_EQ(plan::skip_threshold(d, o), 1.3);
  o.measure_skip_margin = 2.0;
  EXPECT_EQ(plan::skip_threshold(d, o), 2.0);

  const nlohmann::json& shipped = models::shipped_model("spmm");
  ASSERT_TRUE(shipped.contains("measure_skip_margin"));
  const Decision planned = plan::plan_spmm(test::small_features(), plan::SpmmProblem{32, DType::F32, false}, {}, {}, {},
                                           {std::make_shared<const nlohmann::json>(shipped), {}});
  ASSERT_TRUE(planned.model_skip_margin.has_value());
  EXPECT_EQ(*planned.model_skip_margin, shipped["measure_skip_margin"].get<double>());
  EXPECT_FALSE(models::shipped_model("sddmm").contains("measure_skip_margin"));  // SDDMM keeps the default

  for (const nlohmann::json& bad : {nlohmann::json(0.5), nlohmann::json("wide")}) {
    nlohmann::json model = shipped;
    model["measure_skip_margin"] = bad;
    const auto problem = models::model_problem(model, shipped);
    ASSERT_TRUE(problem.has_value()) << bad.dump();
    EXPECT_NE(problem->find("\"measure_skip_margin\" " + bad.dump() + " is not a number >= 1"), std::string::npos) << *problem;
  }
}

TEST(MeasurePolicy, BadOptionsAreNamed) {
  EXPECT_NO_THROW(plan::check_measure_options(Options{}));
  Options o;
  o.measure_skip_margin = std::numeric_limits<double>::infinity();
  EXPECT_NO_THROW(plan::check_measure_options(o));
  o.measure_skip_margin = 0.5;
  EXPECT_NE(test::invalid_input_message([&] { plan::check_measure_options(o); }).find("Options::measure_skip_margin = 0.5 must be >= 1"),
            std::string::npos);
  o.measure_skip_margin = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(plan::check_measure_options(o), InvalidInputError);
  o = Options{};
  o.measure_budget_ms = 0;
  EXPECT_NE(test::invalid_input_message([&] { plan::check_measure_options(o); }).find("Options::measure_budget_ms = 0 must be > 0 ms"),
            std::string::npos);
  o = Options{};
  o.measure_budget_calls = -2;
  EXPECT_NE(test::invalid_input_message([&] { plan::check_measure_options(o); }).find("Options::measure_budget_calls = -2 must be > 0 calls"),
            std::string::npos);
}

}  // namespace
}  // namespace sparsejit
