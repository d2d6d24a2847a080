// Planners, forced choices, model evaluation and the Decision record (CPU only). The SDDMM
// planner's own tests are in plan_sddmm_test.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "ops/plan_sources.hpp"
#include "plan/tuned.hpp"
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
  // csr_rowwarp, csr_vector, csr_rowsplit, rs (no split source: rejected), csr_merge, dense, cusparse
  ASSERT_EQ(d.candidates.size(), 7u);
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

// The dense GEMM's terms for the 4x6 matrix at K = 32 (f32): 2*4*6*32 flops; the dense copy,
// B and C in bytes; one 128x128 output tile, so the serial share is all the flops. Aᵀ·B
// swaps B's and C's rows.
TEST(Plan, DenseIsPricedByTheGemmItRuns) {
  const auto model = ops::planner_model(Op::SpMM, {});
  for (bool transpose : {false, true}) {
    const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, transpose}, {}, {});
    const Candidate& c = candidate(d, "dense");
    ASSERT_TRUE(c.rejected_because.empty()) << c.rejected_because;
    EXPECT_DOUBLE_EQ(c.terms.at("dense_flops").get<double>(), 2.0 * 4 * 6 * 32);
    EXPECT_DOUBLE_EQ(c.terms.at("dense_bytes").get<double>(), (4.0 * 6 + 6 * 32 + 4 * 32) * 4);
    EXPECT_DOUBLE_EQ(c.terms.at("dense_serial_flops").get<double>(), 2.0 * 4 * 6 * 32);
    EXPECT_DOUBLE_EQ(c.predicted_ms, models::linear_cost(model->at("cost").at("dense"), c.terms));
  }
}

TEST(Plan, DenseIsRejectedWhenItsCopyWouldBeTooLarge) {
  const Features big = inspect(generate::uniform(20000, 20000, 1, 3).pattern());  // 1.6e9 bytes in f32
  const Decision d = plan::plan_spmm(big, {32, DType::F32, false}, {}, {});
  EXPECT_NE(candidate(d, "dense").rejected_because.find("dense copy of A (20000x20000"), std::string::npos)
      << candidate(d, "dense").rejected_because;
  EXPECT_NE(d.variant, "dense");
  Options o;
  o.variant = "dense";
  EXPECT_THROW(plan::plan_spmm(big, {32, DType::F32, false}, {}, o), UnsupportedError);
  const Features fits = inspect(generate::uniform(16000, 16000, 1, 3).pattern());  // 1.02e9 bytes, under 1 GiB
  EXPECT_TRUE(candidate(plan::plan_spmm(fits, {32, DType::F32, false}, {}, {}), "dense").rejected_because.empty());
  o.params = {{"lanes", 8}};
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F32, false}, {}, o), InvalidInputError);
}

TEST(Plan, TransposeRejectsRowwarp) {
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, true}, {}, {});
  EXPECT_NE(d.variant, "csr_rowwarp");
  EXPECT_FALSE(d.candidates[0].rejected_because.empty());
  Options forced;
  forced.variant = "csr_rowwarp";
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F32, true}, {}, forced), UnsupportedError);
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
  EXPECT_EQ(j["candidates"].size(), 7u);
  const std::string text = describe(d);
  EXPECT_NE(text.find("* " + d.variant), std::string::npos) << text;
  EXPECT_NE(text.find("spmm-default"), std::string::npos) << text;
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

// ---------------------------------------------------------------------------------------
// The RS-SpMM candidates (csr_vector, rs) and their parameters.

struct Planned {
  Features features;
  plan::SplitStatsSource split;
  Csr<double> matrix;
};

Planned planned(Csr<double> m) {
  Planned p{inspect(m.pattern()), {}, std::move(m)};
  const Csr<double>* a = &p.matrix;
  p.split = [a](int32_t w, int32_t t) { return row_segment_split(a->pattern(), w, t); };
  return p;
}

double predicted(const Decision& d, const std::string& variant) {
  for (const auto& c : d.candidates)
    if (c.variant == variant) {
      EXPECT_TRUE(c.rejected_because.empty()) << variant << ": " << c.rejected_because;
      return c.predicted_ms;
    }
  ADD_FAILURE() << "no candidate " << variant;
  return 0;
}

plan::DeviceTarget h200() {
  plan::DeviceTarget t;
  t.name = "NVIDIA H200";
  t.multiprocessors = 132;
  t.shared_per_sm = 233472;
  t.shared_per_block_optin = 232448;
  return t;
}

TEST(PlanRs, ClusteredMatrixPricesTheSplitFromItsStatistics) {
  const Planned p = planned(generate::clustered(32768, 32768, 48, 0.9, 64, 3));
  const Decision d = plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), {}, p.split);
  // The split is priced from its own statistics: most nonzeros are heavy here, so the staged
  // panel bytes are a real cost term (whether rs then wins is the fitted model's call).
  const auto& rs = *std::find_if(d.candidates.begin(), d.candidates.end(), [](const Candidate& c) { return c.variant == "rs"; });
  // Two blocks of a 512-byte K slice per SM: (233472 / 2 - 1024) / 512 = 226 rows, 224 after rounding.
  EXPECT_EQ(rs.params["panel_width"], 224);
  EXPECT_EQ(rs.params["vec_width"], 4);
  EXPECT_EQ(rs.params["heavy_lanes"], 32);
  EXPECT_EQ(rs.params["cf_v"], 1);
  EXPECT_GT(rs.terms["shared_bytes"].get<double>(), 0.0);
  EXPECT_GT(rs.predicted_ms, 0.0);
}

TEST(PlanRs, UniformRandomMatrixDoesNotPayForTheSplit) {
  const Planned p = planned(generate::uniform(100000, 100000, 16, 5));
  const Decision d = plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), {}, p.split);
  EXPECT_NE(d.variant, "rs");
  EXPECT_LE(predicted(d, "csr_vector"), predicted(d, "rs"));
}

TEST(PlanRs, VectorWidthLanesAndCoarseningFollowKAndLeadingDimensions) {
  const Planned p = planned(generate::uniform(300, 300, 5, 1));
  Options o;
  o.variant = "csr_vector";
  auto params = [&](int32_t k, DType t, int64_t ld) {
    return plan::plan_spmm(p.features, {k, t, false, ld, ld}, h200(), o, p.split).params;
  };
  EXPECT_EQ(params(128, DType::F32, 128)["vec_width"], 4);
  EXPECT_EQ(params(128, DType::F32, 128)["lanes_per_row"], 32);
  EXPECT_EQ(params(128, DType::F32, 128)["cf_h"], 1);
  EXPECT_EQ(params(128, DType::F32, 129)["vec_width"], 1);  // a padded row breaks 16-byte alignment
  EXPECT_EQ(params(128, DType::F32, 130)["vec_width"], 1);  // only 16-byte vectors or single values
  EXPECT_EQ(params(32, DType::F32, 32)["lanes_per_row"], 8);
  EXPECT_EQ(params(64, DType::F64, 64)["lanes_per_row"], 32);
  EXPECT_EQ(params(512, DType::F32, 512)["cf_h"], 1);       // capped at 512 bytes per group row
  EXPECT_EQ(params(7, DType::F32, 7)["vec_width"], 1);
  EXPECT_EQ(params(7, DType::F32, 7)["lanes_per_row"], 8);
  EXPECT_EQ(params(100, DType::F32, 100)["cf_h"], 1);       // 25 float4 over 32 lanes
  EXPECT_EQ(params(99, DType::F32, 99)["cf_h"], 4);         // scalar: 99 columns over 32 lanes
}

TEST(PlanRs, ForcedParametersAreCheckedAndThePanelFollowsTheSlice) {
  const Planned p = planned(generate::clustered(4096, 4096, 24, 0.6, 16, 2));
  Options o;
  o.variant = "rs";
  o.params = {{"cf_v", 2}};
  const Decision d = plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split);
  EXPECT_EQ(d.params["panel_width"], 96);  // a 1 KiB slice row: (233472 / 2 - 1024) / 1024 = 113 -> 96
  o.params = {{"vec_width", 4}};
  EXPECT_THROW(plan::plan_spmm(p.features, {7, DType::F32, false, 7, 7}, h200(), o, p.split), InvalidInputError);
  o.params = {{"panel_width", 4096}};
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
  o.params = {{"threshold", 0}};
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
  o.params = {{"lanes_per_row", 12}};
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
  // Without a split source rs cannot be priced and is not offered.
  o.params = nlohmann::json::object();
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o), UnsupportedError);
}

TEST(PlanRs, SearchSpaceEntriesAreValidWhenForced) {
  const Planned p = planned(generate::clustered(2048, 3000, 24, 0.6, 16, 2));
  for (DType t : {DType::F32, DType::F64}) {
    for (int32_t k : {1, 33, 128, 512}) {
      for (bool transpose : {false, true}) {
        const plan::SpmmProblem problem{k, t, transpose, k, k};
        const auto space = plan::spmm_search_space(p.features, problem, h200());
        std::set<int> thresholds;
        std::set<std::string> variants;
        for (const auto& [variant, params] : space) {
          variants.insert(variant);
          Options o;
          o.variant = variant;
          o.params = params;
          const Decision d = plan::plan_spmm(p.features, problem, h200(), o, p.split);
          EXPECT_EQ(d.params, params) << variant << " " << params.dump();
          if (variant == "rs") {
            thresholds.insert(params["threshold"].get<int>());
            const int w = params["panel_width"].get<int>();
            EXPECT_TRUE(w % 32 == 0 || w == 3000) << w;
          }
        }
        EXPECT_EQ(thresholds, (std::set<int>{2, 4, 8, 16, 32}));
        EXPECT_EQ(variants.count("rs"), 1u);
        EXPECT_EQ(variants.count("csr_vector"), 1u);
        EXPECT_EQ(variants.count("cusparse"), 1u);
        EXPECT_EQ(variants.count("csr_rowwarp"), transpose ? 0u : 1u);
        EXPECT_EQ(variants.count("csr_rowsplit"), transpose ? 0u : 1u);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// csr_merge: nonzero-balanced ranges, priced without a longest-row term.

const Candidate& spmm_candidate(const Decision& d, const std::string& name) {
  const auto it = std::find_if(d.candidates.begin(), d.candidates.end(), [&](const Candidate& c) { return c.variant == name; });
  if (it == d.candidates.end()) throw InvalidInputError("no candidate " + name);
  return *it;
}

TEST(PlanMerge, LongRowsMakeMergeCheaperThanRowPerGroupKernels) {
  // A power-law graph (hub rows hundreds of times the mean) and a pruned weight matrix of
  // 128 rows x ~576 nonzeros (every group of csr_vector walks a long row).
  for (const auto& [name, m] : {std::pair{"rmat", generate::rmat(65536, 600000, 3)},
                                std::pair{"128x576", generate::uniform(128, 1152, 576, 4)}}) {
    const Planned p = planned(m);
    for (int32_t k : {32, 128}) {
      const Decision d = plan::plan_spmm(p.features, {k, DType::F32, false, k, k}, h200(), {}, p.split);
      EXPECT_LT(predicted(d, "csr_merge"), predicted(d, "csr_vector")) << name << " k=" << k;
      EXPECT_LT(predicted(d, "csr_merge"), predicted(d, "csr_rowwarp")) << name << " k=" << k;
    }
  }
}

TEST(PlanMerge, UniformRowsKeepARowPerGroupKernelCheaper) {
  const Planned p = planned(generate::uniform(100000, 100000, 16, 5));
  for (int32_t k : {32, 128}) {
    const Decision d = plan::plan_spmm(p.features, {k, DType::F32, false, k, k}, h200(), {}, p.split);
    EXPECT_LT(std::min(predicted(d, "csr_vector"), predicted(d, "rs")), predicted(d, "csr_merge")) << "k=" << k;
    EXPECT_NE(d.variant, "csr_merge");
  }
}

TEST(PlanMerge, DefaultsFollowKAndTheRangeGrowsWithTheMatrix) {
  const Planned p = planned(generate::rmat(8192, 80000, 2));
  const Decision d = plan::plan_spmm(p.features, {32, DType::F32, false, 32, 32}, h200(), {}, p.split);
  const nlohmann::json& params = spmm_candidate(d, "csr_merge").params;
  EXPECT_EQ(params["vec_width"], 4);
  EXPECT_EQ(params["lanes"], 8);  // 8 float4 cover K = 32
  EXPECT_EQ(params["cf"], 1);
  EXPECT_EQ(params["unroll"], 8);
  EXPECT_EQ(params["block_threads"], 128);
  // The range balances the boundary atomics (one pair per range) against the round trips of
  // one range: it grows with the matrix.
  Features big = p.features;
  big.basic.nnz = 10'000'000;
  big.basic.rows = 1'000'000;
  const Decision d_big = plan::plan_spmm(big, {32, DType::F32, false, 32, 32}, h200(), {});
  EXPECT_LE(params["nnz_per_group"].get<int>(), 32);
  // The range is the cheapest of the grid under the model's coefficients.
  const int range = spmm_candidate(d_big, "csr_merge").params["nnz_per_group"].get<int>();
  EXPECT_TRUE(range == 16 || range == 32 || range == 64 || range == 128 || range == 256) << range;
  Options o;
  o.variant = "csr_merge";
  const Decision scalar = plan::plan_spmm(p.features, {99, DType::F32, false, 99, 99}, h200(), o, p.split);
  EXPECT_EQ(scalar.params["vec_width"], 1);
  EXPECT_EQ(scalar.params["lanes"], 32);
  EXPECT_EQ(scalar.params["cf"], 4);
  EXPECT_EQ(scalar.params["unroll"], 2);
}

TEST(PlanMerge, ForcedParametersAreChecked) {
  const Planned p = planned(generate::uniform(300, 300, 5, 1));
  Options o;
  o.variant = "csr_merge";
  for (const nlohmann::json& bad : {nlohmann::json{{"nnz_per_group", 0}}, nlohmann::json{{"nnz_per_group", 5000}},
                                    nlohmann::json{{"lanes", 12}}, nlohmann::json{{"cf", 3}}, nlohmann::json{{"unroll", 16}},
                                    nlohmann::json{{"block_threads", 96}}, nlohmann::json{{"vec_width", 2}}}) {
    o.params = bad;
    EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError) << bad.dump();
  }
  o.params = {{"vec_width", 4}};
  EXPECT_THROW(plan::plan_spmm(p.features, {7, DType::F32, false, 7, 7}, h200(), o, p.split), InvalidInputError);
  o.params = {{"lanes_per_row", 8}};  // a csr_vector parameter
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
}

TEST(PlanMerge, SearchSpaceCoversRangesLanesAndUnroll) {
  const Planned p = planned(generate::rmat(4096, 40000, 2));
  for (int32_t k : {1, 32, 128}) {
    for (bool transpose : {false, true}) {
      const plan::SpmmProblem problem{k, DType::F32, transpose, k, k};
      std::set<int> ranges, unrolls, lanes;
      for (const auto& [variant, params] : plan::spmm_search_space(p.features, problem, h200())) {
        if (variant != "csr_merge") continue;
        ranges.insert(params["nnz_per_group"].get<int>());
        unrolls.insert(params["unroll"].get<int>());
        lanes.insert(params["lanes"].get<int>());
        Options o;
        o.variant = variant;
        o.params = params;
        EXPECT_EQ(plan::plan_spmm(p.features, problem, h200(), o, p.split).params, params) << params.dump();
      }
      EXPECT_EQ(ranges, (std::set<int>{32, 64, 128, 256}));
      EXPECT_EQ(unrolls, (std::set<int>{4, 8}));
      const std::set<int> expected_lanes = k == 128 ? std::set<int>{32} : std::set<int>{8, 32};
      EXPECT_EQ(lanes, expected_lanes) << "k=" << k;
    }
  }
}


// Every priced candidate carries the terms its predicted cost came from, in the JSON only;
// a forced candidate is priced at the forced params (the tuner fits coefficients on them).
TEST(PlanCost, CandidatesCarryTheirTermsAndForcedOnesArePricedAtTheirParams) {
  const Planned p = planned(generate::clustered(4096, 4096, 24, 0.6, 16, 2));
  const plan::SpmmProblem problem{128, DType::F32, false, 128, 128};
  const Decision d = plan::plan_spmm(p.features, problem, h200(), {}, p.split);
  ASSERT_EQ(d.model_id, models::shipped_model("spmm").at("id"));
  const nlohmann::json& cost = models::shipped_model("spmm").at("cost");
  const nlohmann::json j = to_json(d);
  ASSERT_EQ(j["candidates"].size(), d.candidates.size());
  for (const auto& c : j["candidates"]) {
    ASSERT_TRUE(c.contains("terms")) << c.dump();
    EXPECT_GT(c["terms"]["launch"].get<double>(), 0) << c.dump();
    EXPECT_DOUBLE_EQ(c["predicted_ms"].get<double>(), models::linear_cost(cost[c["variant"].get<std::string>()], c["terms"]));
  }
  EXPECT_EQ(describe(d).find("gather_bytes"), std::string::npos);

  auto forced_entry = [&](const char* variant, const nlohmann::json& params) {
    Options o;
    o.variant = variant;
    o.params = params;
    const Decision f = plan::plan_spmm(p.features, problem, h200(), o, p.split);
    for (const auto& c : f.candidates)
      if (c.variant == variant) {
        EXPECT_EQ(c.params, f.params);
        EXPECT_DOUBLE_EQ(c.predicted_ms, models::linear_cost(cost[variant], c.terms));
        return c;
      }
    ADD_FAILURE() << variant;
    return Candidate{};
  };
  // csr_merge walks its range: ceil(256 / unroll 8) + 1 round trips (K = 128: 32 lanes of one
  // 4-wide vector, cf 1, unroll 8 / cf).
  const Candidate merge = forced_entry("csr_merge", {{"nnz_per_group", 256}});
  EXPECT_EQ(merge.params["unroll"], 8);
  EXPECT_DOUBLE_EQ(merge.terms["critical_loads"].get<double>(), 33.0);
  EXPECT_DOUBLE_EQ(forced_entry("csr_merge", {{"nnz_per_group", 256}, {"unroll", 2}}).terms["critical_loads"].get<double>(), 129.0);
  // rs at another threshold: the split statistics of that threshold price it.
  const Candidate rs2 = forced_entry("rs", {{"threshold", 2}});
  const Candidate rs32 = forced_entry("rs", {{"threshold", 32}});
  const SplitStats s32 = p.split(rs32.params["panel_width"].get<int>(), 32);
  EXPECT_DOUBLE_EQ(rs32.terms["shared_bytes"].get<double>(), double(s32.heavy_nnz) * 128 * 4);
  EXPECT_NE(rs2.terms["shared_bytes"], rs32.terms["shared_bytes"]);
}

// csr_rowsplit's round trips: a row of 64 nonzeros in 4 shares of 16 (32 lanes, unroll 4:
// 1 index load + 4 B batches + the shared sum = 6) in one wave of blocks; 20000 such rows in
// 128-thread blocks, 16 per SM on 132 SMs, run in ceil(20000 / 2112) = 10 waves of 6.
TEST(PlanCost, RowsplitPricesTheWavesOfItsSmallBlocks) {
  const plan::SpmmProblem problem{128, DType::F32, false, 128, 128};
  auto rowsplit_loads = [&](int32_t rows) {
    const Planned p = planned(generate::uniform(rows, 4096, 64, 5));
    Options o;
    o.variant = "csr_rowsplit";
    o.params = {{"parts", 4}, {"lanes", 32}, {"unroll", 4}};
    const Decision d = plan::plan_spmm(p.features, problem, h200(), o, p.split);
    EXPECT_EQ(d.variant, "csr_rowsplit");
    for (const auto& c : d.candidates)
      if (c.variant == "csr_rowsplit") return c.terms["critical_loads"].get<double>();
    ADD_FAILURE() << "no csr_rowsplit candidate";
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(rowsplit_loads(1000), 6.0);
  EXPECT_DOUBLE_EQ(rowsplit_loads(20000), 60.0);
}

}  // namespace
}  // namespace sparsejit
