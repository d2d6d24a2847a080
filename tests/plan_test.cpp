// Planners, forced choices, model evaluation and the Decision record (CPU only).
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>

#include "formats/sddmm_dense_tiles.hpp"
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
#include "support/test_support.hpp"
#include "variants/sddmm/dense_tiles.hpp"
#include "variants/sddmm/gather.hpp"

namespace sparsejit {
namespace {

// A 4x6 matrix with rows of length 3, 0, 2, 1.
Features small_features() {
  Coo<double> coo;
  coo.rows = 4;
  coo.cols = 6;
  coo.row_idx = {0, 0, 0, 2, 2, 3};
  coo.col_idx = {0, 2, 5, 1, 3, 4};
  coo.values.assign(6, 1.0);
  const Csr<double> a = to_csr(coo);
  return inspect(a.pattern());
}

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

const Candidate& candidate(const Decision& d, const std::string& name) {
  for (const auto& c : d.candidates)
    if (c.variant == name) return c;
  throw InvalidInputError("no candidate " + name);
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

TEST(Plan, SddmmVectorWidthAndGroupFollowK) {
  Options o;
  o.variant = "coo_flat";
  auto params = [&](int k, DType t) { return plan::plan_sddmm(small_features(), {k, t, k, k}, {}, o).params; };
  EXPECT_EQ(params(128, DType::F32)["vector_width"], 4);
  EXPECT_EQ(params(128, DType::F32)["group_size"], 32);
  EXPECT_EQ(params(33, DType::F32)["vector_width"], 1);
  EXPECT_EQ(params(33, DType::F32)["group_size"], 32);
  EXPECT_EQ(params(1, DType::F32)["group_size"], 4);
  EXPECT_EQ(params(6, DType::F64)["vector_width"], 2);
  EXPECT_EQ(params(6, DType::F64)["group_size"], 4);
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

// A neighbour keeps its centre's variant and differs from it; returns the options forcing it.
Options forcing_neighbour(const std::string& variant, const nlohmann::json& centre, const plan::TimedChoice& n) {
  EXPECT_EQ(n.variant, variant);
  EXPECT_NE(n.params, centre);
  Options forced;
  forced.variant = n.variant;
  forced.params = n.params;
  return forced;
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

TEST(MeasuredSelection, SddmmNeighboursAreValidWhenForcedAndDifferFromTheirCentre) {
  const Csr<double> s = generate::from_spec("uniform:4096:410", 5);  // 512 tiles for panel_gather at K = 128
  const Features f = inspect(s.pattern());
  std::set<std::string> with_neighbours;
  for (int32_t k : {1, 32, 64, 128}) {
    const plan::SddmmProblem problem{k, DType::F32, k, k};
    for (const auto& [variant, params] : plan::sddmm_search_space(f, problem, {})) {
      for (const auto& n : plan::sddmm_neighbors(variant, params, problem, {})) {
        SCOPED_TRACE(variant + " " + params.dump() + " -> " + n.params.dump() + " k=" + std::to_string(k));
        Options forced = forcing_neighbour(variant, params, n);
        forced.reuse = Reuse::Many;  // reindexed_tiled runs only on reused patterns
        EXPECT_NO_THROW(plan::plan_sddmm(f, problem, {}, forced));
        with_neighbours.insert(variant);
      }
    }
  }
  EXPECT_EQ(with_neighbours,
            (std::set<std::string>{"coo_flat", "row_gather", "panel_gather", "dense_tile", "dense_mma", "dense_wgmma",
                                   "tiled_shared", "reindexed_tiled"}));
  EXPECT_TRUE(plan::sddmm_neighbors("cusparse", nlohmann::json::object(), {64, DType::F32, 64, 64}, {}).empty());
}

// tiled_shared's batch neighbours: double always (up to 16), half only above 1; a tuning record
// older than the parameter (no batch) is batch 1.
TEST(MeasuredSelection, TiledNeighboursDoubleTheBatchAndHalveItAboveOne) {
  const plan::SddmmProblem problem{64, DType::F32, 64, 64};
  auto batches = [&](const nlohmann::json& centre) {
    std::multiset<int64_t> found;
    for (const auto& n : plan::sddmm_neighbors("tiled_shared", centre, problem, {}))
      if (n.params.contains("batch") && n.params.at("batch") != centre.value("batch", 1)) found.insert(n.params.at("batch").get<int64_t>());
    return found;
  };
  nlohmann::json centre = {{"vector_width", 4}, {"tile_rows", 64}, {"tile_cols", 64}, {"slice", 64},
                           {"group_size", 8}, {"combine", "reduce"}, {"threads_per_block", 256}, {"batch", 4}};
  EXPECT_EQ(batches(centre), (std::multiset<int64_t>{2, 8}));
  centre["batch"] = 16;
  EXPECT_EQ(batches(centre), (std::multiset<int64_t>{8}));  // 32 is out of range
  centre.erase("batch");
  EXPECT_EQ(batches(centre), (std::multiset<int64_t>{2}));
}

// dense_tile's slice neighbours: half always, double only while the slice is shorter than K; its
// stage neighbours: one fewer while there is more than one, one more while the stages in
// flight cover less than K.
TEST(MeasuredSelection, DenseTileNeighboursHalveTheSliceAndDoubleItOnlyBelowK) {
  const nlohmann::json centre = {{"vector_width", 4}, {"tile_rows", 64}, {"tile_cols", 64}, {"micro_rows", 4},
                                 {"micro_cols", 4}, {"slice", 32}, {"stages", 2}};
  auto changed = [&](int32_t k, const char* key) {
    std::multiset<int64_t> found;
    for (const auto& n : plan::sddmm_neighbors("dense_tile", centre, {k, DType::F32, k, k}, {}))
      if (n.params.at("tile_rows") == 64 && n.params.at("tile_cols") == 64 && n.params.at(key) != centre.at(key))
        found.insert(n.params.at(key).get<int64_t>());
    return found;
  };
  EXPECT_EQ(changed(128, "slice"), (std::multiset<int64_t>{16, 64}));
  EXPECT_EQ(changed(32, "slice"), (std::multiset<int64_t>{16}));
  EXPECT_EQ(changed(128, "stages"), (std::multiset<int64_t>{1, 3}));
  EXPECT_EQ(changed(64, "stages"), (std::multiset<int64_t>{1}));  // two slices of 32 are all of K
}

// dense_tile keeps the model's 3 slices in flight by default, fewer when K has fewer; stages and
// slice are checked, naming the value, and a ring past the device's shared memory is refused.
TEST(Planner, DenseTileStagesDefaultToTheModelsCappedByTheSlicesOfK) {
  const Features f = inspect(generate::uniform(512, 512, 256, 3).pattern());
  Options o;
  o.variant = "dense_tile";
  for (const auto& [k, stages] : std::vector<std::pair<int32_t, int64_t>>{{3, 1}, {16, 1}, {32, 1}, {64, 2}, {128, 3}, {1000, 3}}) {
    const nlohmann::json params = plan::plan_sddmm(f, {k, DType::F32, k, k}, {}, o).params;
    EXPECT_EQ(params.at("stages").get<int64_t>(), stages) << k;
    EXPECT_EQ(params.at("slice").get<int64_t>() % 4, 0) << k;  // whole 16-byte runs, also for k = 3
  }
  const auto refused = [&](const nlohmann::json& params, const std::string& message) {
    o.params = params;
    try {
      plan::plan_sddmm(f, {128, DType::F32, 128, 128}, {}, o);
      ADD_FAILURE() << params.dump() << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused({{"stages", 5}}, "stages = 5 outside [1, 4]");
  refused({{"stages", 0}}, "stages = 0 outside [1, 4]");
  refused({{"slice", 6}, {"vector_width", 1}}, "slice = 6 is not a positive multiple of 4");
  refused({{"tile_rows", 256}, {"tile_cols", 256}, {"micro_rows", 8}, {"micro_cols", 8}, {"slice", 64}, {"stages", 4}},
          "bytes of shared memory");
}

// Planning `options.variant` forced with `forced` params throws, naming `message`.
void expect_sddmm_refused(const Features& f, const plan::SddmmProblem& problem, const plan::DeviceTarget& device,
                          Options options, const nlohmann::json& forced, const std::string& message) {
  options.params = forced;
  try {
    plan::plan_sddmm(f, problem, device, options);
    ADD_FAILURE() << forced.dump() << " accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

// dense_mma: slices of whole mma steps (8, also for K = 3), the model's stages capped by K's
// slices; f32 on sm_80+ only, and every bad value refused naming it.
TEST(Planner, DenseMmaTakesWholeMmaStepsAndOnlyF32OnTensorCores) {
  const Features f = inspect(generate::uniform(512, 512, 256, 3).pattern());
  Options o;
  o.variant = "dense_mma";
  for (const auto& [k, slice, stages] :
       std::vector<std::array<int64_t, 3>>{{1, 8, 1}, {3, 8, 1}, {32, 32, 1}, {33, 32, 2}, {128, 32, 3}}) {
    const nlohmann::json params = plan::plan_sddmm(f, {int32_t(k), DType::F32, k, k}, {}, o).params;
    EXPECT_EQ(params.at("slice").get<int64_t>(), slice) << k;
    EXPECT_EQ(params.at("stages").get<int64_t>(), stages) << k;
    EXPECT_EQ(variants::sddmm::dense_mma_threads(params), 128) << k;  // 2 x 2 warps of 32 x 32
    // 128 staged rows per stage of slice + 4 floats.
    EXPECT_EQ(variants::sddmm::dense_tile_shared_bytes(params, DType::F32), stages * 128 * (slice + 4) * 4) << k;
  }
  const auto refused = [&](const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& forced,
                           const std::string& message) { expect_sddmm_refused(f, problem, device, o, forced, message); };
  const plan::SddmmProblem k128{128, DType::F32, 128, 128};
  refused({128, DType::F64, 128, 128}, {}, {}, "f64: the 3xTF32 split serves f32 only");
  plan::DeviceTarget turing;
  turing.sm = 75;
  refused(k128, turing, {}, "the device is sm_75");
  refused(k128, {}, {{"warp_rows", 24}}, "warp_rows = 24 is not 16, 32, 48 or 64");
  refused(k128, {}, {{"warp_cols", 12}}, "warp_cols = 12 is not a multiple of 8");
  refused(k128, {}, {{"tile_rows", 48}}, "tile_rows = 48 is not a multiple of warp_rows = 32");
  refused(k128, {}, {{"slice", 12}}, "slice = 12 is not a positive multiple of 8 (one mma step)");
  refused(k128, {}, {{"stages", 5}}, "stages = 5 outside [1, 4]");
  refused(k128, {}, {{"tile_rows", 256}, {"tile_cols", 256}, {"warp_rows", 16}, {"warp_cols", 16}}, "past 1024");
  refused(k128, {}, {{"tile_rows", 256}, {"tile_cols", 256}, {"warp_rows", 64}, {"warp_cols", 64}, {"slice", 64}, {"stages", 4}},
          "bytes of shared memory");
  // Measured selection also tries half the tile with half the warp rows (the same 4 warps).
  Options mma_defaults;
  mma_defaults.variant = "dense_mma";
  const nlohmann::json centre = plan::plan_sddmm(f, k128, {}, mma_defaults).params;
  bool halved = false;
  for (const auto& n : plan::sddmm_neighbors("dense_mma", centre, k128, {}))
    halved = halved || (n.params["tile_rows"] == 32 && n.params["warp_rows"] == 16 && variants::sddmm::dense_mma_threads(n.params) == 128);
  EXPECT_TRUE(halved);
  // Unforced, the variant is a candidate for f32 only, with the reason shown otherwise.
  const Decision f64 = plan::plan_sddmm(f, {128, DType::F64, 128, 128}, {}, {});
  for (const auto& c : f64.candidates) {
    if (c.variant == "dense_mma") {
      EXPECT_NE(c.rejected_because.find("f32 only"), std::string::npos);
    }
  }
}

// dense_wgmma: on sm_90 only (sm_90a binaries), f32 only; its tile width is the one whose
// busiest SM has the least work (512 x 4608: 144 columns give 8 x 32 = 256 tiles, fewer than two
// per SM, where 128 gives 288), and every bad value is refused naming it.
TEST(Planner, DenseWgmmaRunsOnSm90OnlyAndPicksTheTileWidthByWaves) {
  const Features f = inspect(generate::uniform(512, 4608, 461, 4).pattern());  // 10%
  const plan::SddmmProblem k128{128, DType::F32, 128, 128};
  Options o;
  o.variant = "dense_wgmma";
  const nlohmann::json params = plan::plan_sddmm(f, k128, {}, o).params;
  EXPECT_EQ(params.at("tile_cols"), 144);
  EXPECT_EQ(params.at("tile_rows"), 64);
  EXPECT_EQ(params.at("vector_width"), 4);
  EXPECT_EQ(variants::sddmm::dense_wgmma_threads(params), 128);
  // Two stages of (64 + 144) rows of 128 bytes, two slices of small_b, 1 KB of alignment.
  EXPECT_EQ(variants::sddmm::dense_wgmma_shared_bytes(params), 2 * 208 * 128 + 2 * 144 * 128 + 1024);
  EXPECT_EQ(plan::plan_sddmm(f, {33, DType::F32, 33, 33}, {}, o).params.at("vector_width"), 1);
  const auto refused = [&](const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& forced,
                           const std::string& message) { expect_sddmm_refused(f, problem, device, o, forced, message); };
  plan::DeviceTarget ampere;
  ampere.sm = 80;
  refused(k128, ampere, {}, "the device is sm_80");
  refused({128, DType::F64, 128, 128}, {}, {}, "f64: the 3xTF32 split serves f32 only");
  refused(k128, {}, {{"tile_cols", 100}}, "tile_cols = 100 is not one of 64, 96, 128, 144, 192, 256");
  refused(k128, {}, {{"tile_rows", 96}}, "tile_rows = 96 is neither 64 nor 128");
  refused(k128, {}, {{"stages", 1}}, "stages = 1 outside [2, 4]");
  refused(k128, {}, {{"vector_width", 2}}, "vector_width = 2");
  refused(k128, {}, {{"tile_rows", 128}, {"tile_cols", 256}, {"stages", 4}}, "bytes of shared memory");
  // Unforced it is a candidate on sm_90 and not on sm_80, the reason shown.
  const auto reason = [&](const plan::DeviceTarget& device) {
    for (const auto& c : plan::plan_sddmm(f, k128, device, {}).candidates)
      if (c.variant == "dense_wgmma") return c.rejected_because;
    return std::string("absent");
  };
  EXPECT_EQ(reason({}), "");
  EXPECT_NE(reason(ampere).find("needs wgmma"), std::string::npos) << reason(ampere);
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

// ---------------------------------------------------------------------------------------
// SDDMM planner: the decision tree, reuse gating, model override, forced parameters and the
// tuner's search space.

Features with_density(double density) {
  Features f = small_features();
  f.basic.density = density;
  return f;
}

const plan::SddmmProblem kSddmm32{32, DType::F32, 32, 32};

TEST(SddmmPlan, SparsePatternsTakeCooAndShowTheTreePath) {
  const Decision d = plan::plan_sddmm(with_density(3e-6), kSddmm32, {}, {});
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "sddmm-default");
  EXPECT_EQ(d.variant, "coo_flat");  // six nonzeros: the smallest problems take the single flat launch
  // The path is the shipped tree's, step by step on the decision's own features.
  const nlohmann::json& tree = models::shipped_model("sddmm")["tree"];
  ASSERT_FALSE(d.path.empty());
  EXPECT_EQ(d.path[0].feature, tree["feature"]);
  EXPECT_DOUBLE_EQ(d.path[0].threshold, tree["threshold"].get<double>());
  for (const auto& step : d.path) EXPECT_DOUBLE_EQ(step.value, d.features[step.feature].get<double>()) << step.feature;
  EXPECT_EQ(models::evaluate_tree(tree, d.features).leaf, d.variant);
  EXPECT_EQ(d.features["pattern_reused"], 0);
  ASSERT_EQ(d.candidates.size(), 9u);
  for (const auto& c : d.candidates) {
    if (c.rejected_because.empty()) {
      EXPECT_GT(c.predicted_ms, 0.0) << c.variant;
    }
  }
  EXPECT_NE(describe(d).find("tile_fill"), std::string::npos) << describe(d);
}

// The dense-tile formats are refused past 1 GiB, each for its own default tile: 1.5 M non-empty
// tiles take about 560 MiB at dense_tile's 32 x 64 and 1.1 GiB at dense_mma's 64 x 64.
TEST(SddmmPlan, DenseFormatsPastAGibibyteAreRefusedPerTileShape) {
  plan::SddmmProblem problem{128, DType::F32, 128, 128};
  problem.dense_tile_count = [](int32_t, int32_t) { return int64_t(1500000); };
  const Decision d = plan::plan_sddmm(with_density(1e-4), problem, {}, {});
  std::map<std::string, std::string> reasons;
  for (const auto& c : d.candidates) reasons[c.variant] = c.rejected_because;
  EXPECT_EQ(reasons.at("dense_tile"), "");
  EXPECT_NE(reasons.at("dense_mma").find("its tile format would take about 1110 MiB"), std::string::npos)
      << reasons.at("dense_mma");
}

TEST(SddmmPlan, ReindexedOnlyForReusedPatterns) {
  const Decision once = plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, {});
  EXPECT_NE(candidate(once, "reindexed_tiled").rejected_because.find("Reuse::Many"), std::string::npos);
  Options forced;
  forced.variant = "reindexed_tiled";
  EXPECT_THROW(plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, forced), UnsupportedError);

  Options many;
  many.reuse = Reuse::Many;
  const Decision reused = plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, many);
  EXPECT_TRUE(candidate(reused, "reindexed_tiled").rejected_because.empty());
  EXPECT_EQ(reused.features["pattern_reused"], 1);

  plan::SddmmProblem seen = kSddmm32;
  seen.pattern_seen = true;
  EXPECT_TRUE(candidate(plan::plan_sddmm(with_density(5e-3), seen, {}, {}), "reindexed_tiled").rejected_because.empty());
  forced.reuse = Reuse::Many;
  EXPECT_EQ(plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, forced).source, DecisionSource::Forced);
}

int64_t round_up_to(int64_t x, int64_t step) { return (x + step - 1) / step * step; }
int64_t pow2_not_below(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

TEST(SddmmPlan, TiledDefaultsFitKAndDensity) {
  Options o;
  o.variant = "tiled_shared";
  const nlohmann::json& launch = models::shipped_model("sddmm")["launch"]["tiled_shared"];
  const int64_t group = launch["group_size"].get<int64_t>(), slice = launch["slice"].get<int64_t>();
  const auto k3 = plan::plan_sddmm(with_density(0.1), {3, DType::F32, 3, 3}, {}, o).params;
  EXPECT_EQ(k3["vector_width"], 1);
  EXPECT_EQ(k3["group_size"], std::min<int64_t>(group, 4));  // no more lanes than the 3 values need
  // K = 3 rounded up to one step of the group, not a full slice.
  EXPECT_EQ(k3["slice"], round_up_to(3, std::min<int64_t>(group, 4)));
  const auto k128 = plan::plan_sddmm(with_density(0.1), {128, DType::F32, 128, 128}, {}, o).params;
  EXPECT_EQ(k128["vector_width"], 4);
  EXPECT_EQ(k128["slice"], round_up_to(std::min<int64_t>(slice, 128), 4 * std::min<int64_t>(group, 32)));
  // Sparser matrices get taller panels, so a tile still holds several nonzeros per staged row.
  Features sparse_f = with_density(1e-3), dense_f = with_density(0.1);
  sparse_f.basic.rows = dense_f.basic.rows = 1 << 20;
  const auto sparse = plan::plan_sddmm(sparse_f, kSddmm32, {}, o).params;
  const auto dense = plan::plan_sddmm(dense_f, kSddmm32, {}, o).params;
  EXPECT_GT(sparse["tile_rows"].get<int>(), dense["tile_rows"].get<int>());
  // tile_nnz_target nonzeros / (0.1 * tile_cols columns) rows, the next power of two.
  EXPECT_EQ(dense["tile_rows"], pow2_not_below(int64_t(std::ceil(launch["tile_nnz_target"].get<double>() /
                                                                  (0.1 * launch["tile_cols"].get<double>())))));
  // Never taller than the matrix (small_features has 4 rows).
  EXPECT_EQ(plan::plan_sddmm(with_density(1e-3), kSddmm32, {}, o).params["tile_rows"], 4);
}

TEST(SddmmPlan, ForcedParamsAreChecked) {
  Options o;
  o.variant = "tiled_shared";
  o.params = {{"slice", 30}};  // not a multiple of vector_width 4 * group_size 4
  try {
    plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o);
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("slice = 30"), std::string::npos) << e.what();
  }
  o.params = {{"combine", "sum"}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o), InvalidInputError);
  o.params = {{"batch", 3}};
  try {
    plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o);
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch = 3 is not a power of two in [1, 16]"), std::string::npos) << e.what();
  }
  o.params = {{"tile_cols", 4096}, {"slice", 256}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o), UnsupportedError);  // shared memory
  o.variant = "coo_flat";
  o.params = {{"nnz_per_group", 8}, {"group_size", 4}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o), InvalidInputError);
  o.params = {{"vector_width", 4}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), {33, DType::F32, 33, 33}, {}, o), InvalidInputError);
}

TEST(SddmmPlan, AModelPassedInOverridesTheShippedTreeAndLaunchShapes) {
  nlohmann::json model = models::shipped_model("sddmm");
  const auto with_model = [&] { return plan::PlanSources{std::make_shared<const nlohmann::json>(model)}; };
  model["id"] = "sddmm-tuned";
  model["tree"] = nlohmann::json::parse(R"({"feature": "k", "threshold": 64, "left": {"leaf": "cusparse"}, "right": {"leaf": "tiled_shared"}})");
  model["launch"] = {{"tiled_shared", {{"tile_cols", 32}}}};  // the rest falls back to the shipped launch
  const Decision small_k = plan::plan_sddmm(with_density(1e-6), kSddmm32, {}, {}, with_model());
  EXPECT_EQ(small_k.variant, "cusparse");
  EXPECT_EQ(small_k.model_id, "sddmm-tuned");
  ASSERT_EQ(small_k.path.size(), 1u);
  EXPECT_EQ(small_k.path[0].feature, "k");
  const Decision big_k = plan::plan_sddmm(with_density(1e-6), {128, DType::F32, 128, 128}, {}, {}, with_model());
  EXPECT_EQ(big_k.variant, "tiled_shared");
  EXPECT_EQ(big_k.params["tile_cols"], 32);
  EXPECT_EQ(big_k.params["threads_per_block"], 256);
  // A leaf that cannot run the problem falls back to the cheapest eligible candidate.
  model["tree"] = {{"leaf", "reindexed_tiled"}};
  const Decision fallback = plan::plan_sddmm(with_density(0.1), kSddmm32, {}, {}, with_model());
  EXPECT_NE(fallback.variant, "reindexed_tiled");
  double cheapest = 1e300;
  for (const auto& c : fallback.candidates)
    if (c.rejected_because.empty()) cheapest = std::min(cheapest, c.predicted_ms);
  EXPECT_DOUBLE_EQ(candidate(fallback, fallback.variant).predicted_ms, cheapest);
}

TEST(SddmmPlan, SearchSpaceEntriesAreValidAndCoverTheKnobs) {
  for (const plan::SddmmProblem& p : {kSddmm32, plan::SddmmProblem{3, DType::F64, 3, 3}, plan::SddmmProblem{128, DType::F32, 128, 128}}) {
    const auto space = plan::sddmm_search_space(with_density(0.01), p, {});
    std::map<std::string, bool> variants, combines;
    std::map<int, bool> groups;
    for (const auto& [variant, params] : space) {
      variants[variant] = true;
      if (params.contains("combine")) combines[params["combine"].get<std::string>()] = true;
      if (params.contains("group_size")) groups[params["group_size"].get<int>()] = true;
      Options o;
      o.variant = variant;
      o.params = params;
      o.reuse = Reuse::Many;
      const Decision d = plan::plan_sddmm(with_density(0.01), p, {}, o);
      EXPECT_EQ(d.params, variant == "cusparse" ? nlohmann::json::object() : params) << variant << " " << params.dump();
    }
    // dense_tile only where tiles are fuller (below), panel_gather only on many long chunks
    // (SddmmNeighboursAreValidWhenForcedAndDifferFromTheirCentre).
    EXPECT_EQ(variants.size(), 5u) << p.k;
    for (const char* v : {"coo_flat", "row_gather", "tiled_shared", "reindexed_tiled", "cusparse"}) EXPECT_TRUE(variants.count(v)) << v;
    EXPECT_EQ(combines.size(), 2u);
    EXPECT_GE(groups.size(), 2u);
  }
  EXPECT_TRUE(plan::sddmm_search_space(with_density(0.01), {32, DType::F16, 32, 32}, {}).empty());
}

// ---------------------------------------------------------------------------------------
// row_gather and dense_tile: the tree on real patterns, tile_fill, defaults and checks.

Features features_of(const Csr<double>& m) { return inspect(m.pattern()); }

TEST(SddmmPlan, TheTreeDecidesOnRealPatternsAndDenseTileTakesTheShippedShape) {
  const nlohmann::json& tree = models::shipped_model("sddmm")["tree"];
  const Features half = features_of(generate::uniform(1024, 1024, 512, 1));  // 50%
  for (int32_t k : {32, 128}) {
    const Decision d = plan::plan_sddmm(half, {k, DType::F32, k, k}, {}, {});
    EXPECT_NEAR(d.features["tile_fill"].get<double>(), 0.5, 0.01);
    EXPECT_EQ(d.variant, models::evaluate_tree(tree, d.features).leaf) << k;
  }
  Options o;
  o.variant = "dense_tile";
  const Decision dense = plan::plan_sddmm(half, kSddmm32, {}, o);
  const nlohmann::json& launch = models::shipped_model("sddmm")["launch"]["dense_tile"];
  EXPECT_EQ(dense.params["tile_rows"], launch["tile_rows"]);
  EXPECT_EQ(dense.params["slice"], launch["slice"]);
  EXPECT_EQ(dense.params["vector_width"], 4);

  // 1e-5: 300000 x 300000 with 3 nonzeros per row.
  const Features sparse = features_of(generate::uniform(300000, 300000, 3, 2));
  EXPECT_NEAR(sparse.basic.density, 1e-5, 1e-6);
  const Decision gather = plan::plan_sddmm(sparse, kSddmm32, {}, {});
  EXPECT_TRUE(gather.variant == "row_gather" || gather.variant == "coo_flat") << gather.variant;
  EXPECT_LT(gather.features["tile_fill"].get<double>(), 0.01);
  // 1% with 40 per row (160000 nonzeros): row_gather, the kernel for long rows.
  EXPECT_EQ(plan::plan_sddmm(features_of(generate::uniform(4000, 4000, 40, 3)), kSddmm32, {}, {}).variant, "row_gather");
}

TEST(SddmmPlan, TileFillCountsTilesExactlyWhenThePatternIsAtHand) {
  // A block diagonal of dense 64 x 64 blocks: each non-empty tile is full, though the density is low.
  Coo<double> coo;
  coo.rows = coo.cols = 64 * 40;
  for (int32_t block = 0; block < 40; ++block)
    for (int32_t r = 0; r < 64; ++r)
      for (int32_t c = 0; c < 64; ++c) {
        coo.row_idx.push_back(block * 64 + r);
        coo.col_idx.push_back(block * 64 + c);
        coo.values.push_back(1.0);
      }
  const Csr<double> blocks = to_csr(coo);
  const Features f = features_of(blocks);
  EXPECT_LT(f.basic.density, 0.03);
  // The estimate from the 8 x 8 bitmap tiles spreads them over the grid: far too many tiles.
  EXPECT_LT(plan::sddmm_tile_fill(f, kSddmm32, 64, 64), 0.08);
  EXPECT_NE(plan::plan_sddmm(f, kSddmm32, {}, {}).variant, "dense_tile");
  // The exact count (what the executor and explain pass) sees the 40 full tiles.
  plan::SddmmProblem counted = kSddmm32;
  counted.dense_tile_count = [&](int32_t ti, int32_t tj) { return formats::count_dense_tiles(blocks.pattern(), ti, tj); };
  EXPECT_DOUBLE_EQ(plan::sddmm_tile_fill(f, counted, 64, 64), 1.0);
  EXPECT_EQ(plan::plan_sddmm(f, counted, {}, {}).variant, "dense_tile");
  // A uniform pattern: the estimate is close to the count.
  const Csr<double> uniform = generate::uniform(2048, 2048, 300, 4);
  plan::SddmmProblem uniform_counted = kSddmm32;
  uniform_counted.dense_tile_count = [&](int32_t ti, int32_t tj) { return formats::count_dense_tiles(uniform.pattern(), ti, tj); };
  EXPECT_NEAR(plan::sddmm_tile_fill(features_of(uniform), kSddmm32, 64, 64),
              plan::sddmm_tile_fill(features_of(uniform), uniform_counted, 64, 64), 0.005);
}

TEST(SddmmPlan, RowGatherDefaultsCoverKWithBoundedRegisters) {
  Options o;
  o.variant = "row_gather";
  auto params = [&](int k, DType t, int64_t ld) { return plan::plan_sddmm(small_features(), {k, t, ld, ld}, {}, o).params; };
  EXPECT_EQ(params(32, DType::F32, 32)["group_size"], 8);   // 8 float4 cover K = 32
  EXPECT_EQ(params(32, DType::F32, 32)["unroll"], 8);
  EXPECT_EQ(params(1, DType::F32, 1)["group_size"], 4);
  EXPECT_EQ(params(1, DType::F32, 1)["vector_width"], 1);
  const auto k512 = params(512, DType::F32, 512);
  EXPECT_EQ(k512["group_size"], 32);
  EXPECT_EQ(variants::sddmm::row_lane_vectors(k512, 512), 4);
  EXPECT_EQ(k512["unroll"], 4);  // 4 vectors x 4 nonzeros in flight
  const auto f64_odd = params(512, DType::F64, 513);  // odd ld: scalar loads, 16 values per lane
  EXPECT_EQ(f64_odd["vector_width"], 1);
  EXPECT_EQ(variants::sddmm::row_lane_vectors(f64_odd, 512), 16);
  EXPECT_EQ(f64_odd["unroll"], 1);
  // K past 16 vectors per lane of 32 lanes: declined with the reason, not planned.
  const Decision big = plan::plan_sddmm(small_features(), {1000, DType::F32, 1001, 1001}, {}, {});
  EXPECT_NE(candidate(big, "row_gather").rejected_because.find("k = 1000"), std::string::npos);
}

// panel_gather: a panel's B rows fill about 256 KB of L1 (wider panels at smaller K), the lane
// group holds A's row in at most 16 vectors, and the cost prices L2 per tile and L1 per
// product: on a 10% 4096 x 4096 pattern at K = 128 (the panel's rows reused by ~6 rows of a
// band) below row_gather's. It is proposed only with 1.5 tiles per SM and 8 nonzeros per row
// in a panel: at K = 64 (4 panels of 1024: 256 tiles), not at K = 32 (2 panels of 2048), nor
// for the 512-row layers, nor at 1%; forced it runs there all the same.
TEST(SddmmPlan, PanelGatherPanelsFitL1AndIsProposedOnlyForManyLongChunks) {
  Options o;
  o.variant = "panel_gather";
  const Features dense10 = features_of(generate::uniform(4096, 4096, 410, 1));
  const Decision k128 = plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, o);
  EXPECT_EQ(k128.params["panel_cols"], 512);  // 512 rows of 512 bytes
  EXPECT_EQ(k128.params["band_rows"], 64);
  EXPECT_EQ(k128.params["group_size"], 8);
  EXPECT_EQ(variants::sddmm::row_lane_vectors(k128.params, 128), 4);
  EXPECT_EQ(k128.params["unroll"], 8);  // 32 B vectors in flight
  EXPECT_EQ(plan::plan_sddmm(dense10, {32, DType::F32, 32, 32}, {}, o).params["panel_cols"], 2048);
  const auto f64 = plan::plan_sddmm(dense10, {512, DType::F64, 512, 512}, {}, o).params;
  EXPECT_EQ(f64["panel_cols"], 64);
  EXPECT_EQ(f64["group_size"], 16);  // 8 lanes would need 32 double2 each
  const Decision proposed = plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, {});
  EXPECT_TRUE(candidate(proposed, "panel_gather").rejected_because.empty());
  EXPECT_LT(candidate(proposed, "panel_gather").predicted_ms, candidate(proposed, "row_gather").predicted_ms);
  // Declined: shown as such, never the choice nor timed by measured selection; forced, it runs.
  const auto declined = [&](const Features& f, int32_t k) {
    const Decision d = plan::plan_sddmm(f, {k, DType::F32, k, k}, {}, {});
    const std::string why = candidate(d, "panel_gather").rejected_because;
    EXPECT_EQ(why.rfind("runs only when forced: ", 0), 0u) << why;
    EXPECT_NE(d.variant, "panel_gather");
    for (const auto& t : plan::measured_shortlist(d, "cusparse")) EXPECT_NE(t.variant, "panel_gather");
    EXPECT_NO_THROW(plan::plan_sddmm(f, {k, DType::F32, k, k}, {}, o));
    return why;
  };
  EXPECT_NE(declined(dense10, 32).find("128 tiles of 64 x 2048, too few for 132 SMs"), std::string::npos);
  EXPECT_TRUE(candidate(plan::plan_sddmm(dense10, {64, DType::F32, 64, 64}, {}, {}), "panel_gather").rejected_because.empty());
  const Features layer = features_of(generate::uniform(512, 4608, 461, 2));
  EXPECT_NE(declined(layer, 128).find("72 tiles"), std::string::npos);
  const Features one_percent = features_of(generate::uniform(4096, 4096, 41, 3));
  EXPECT_NE(declined(one_percent, 128).find("about 5.1 nonzeros per row in a panel of 512 columns"), std::string::npos);
  o.params = {{"panel_cols", 0}};
  EXPECT_THROW(plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, o), InvalidInputError);
  o.params = {{"band_rows", -2}};
  try {
    plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, o);
    ADD_FAILURE() << "band_rows = -2 was accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("band_rows = -2"), std::string::npos) << e.what();
  }
  o.params = {{"group_size", 4}};  // K = 512 f32 in 4 lanes: 32 float4 each
  EXPECT_THROW(plan::plan_sddmm(dense10, {512, DType::F32, 512, 512}, {}, o), InvalidInputError);
}

TEST(SddmmPlan, RowGatherAndDenseTileForcedParamsAreChecked) {
  Options o;
  o.variant = "row_gather";
  auto message = [&](const plan::SddmmProblem& p) -> std::string {
    try {
      plan::plan_sddmm(with_density(0.1), p, {}, o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  o.params = {{"unroll", 16}, {"group_size", 8}};
  EXPECT_NE(message(kSddmm32).find("unroll = 16"), std::string::npos);
  o.params = {{"max_nnz", 0}};
  EXPECT_NE(message(kSddmm32).find("max_nnz = 0"), std::string::npos);
  o.params = {{"group_size", 4}};
  EXPECT_NE(message({512, DType::F32, 513, 513}).find("needs 128 A vectors"), std::string::npos);
  o.variant = "dense_tile";
  o.params = {{"micro_rows", 2}};
  EXPECT_NE(message(kSddmm32).find("micro-tile edge 2"), std::string::npos);
  o.params = {{"tile_rows", 62}};
  EXPECT_NE(message(kSddmm32).find("tile_rows = 62"), std::string::npos);
  o.params = {{"tile_rows", 60}, {"tile_cols", 64}};  // whole micro-tiles, but 15 x 16 threads are no whole warps
  EXPECT_NE(message(kSddmm32).find("240 threads"), std::string::npos);
  o.params = {{"tile_rows", 256}, {"tile_cols", 256}, {"micro_rows", 4}, {"micro_cols", 4}};
  EXPECT_NE(message(kSddmm32).find("4096 threads"), std::string::npos);
  o.params = {{"tile_rows", 128}, {"tile_cols", 128}, {"micro_rows", 8}, {"micro_cols", 8}, {"slice", 64}, {"stages", 4}};
  EXPECT_NE(message(kSddmm32).find("bytes of shared memory"), std::string::npos);
  o.params = {{"slice", 30}};
  EXPECT_NE(message(kSddmm32).find("slice = 30"), std::string::npos);
  o.params = {{"slice", 3}, {"vector_width", 1}};  // a 16-byte run is 4 floats
  EXPECT_NE(message({3, DType::F32, 3, 3}).find("slice = 3 is not a positive multiple of 4"), std::string::npos);
  o.params = {{"slice", 4}, {"vector_width", 1}};
  EXPECT_EQ(message({3, DType::F32, 3, 3}), "");
}

TEST(SddmmPlan, SearchSpaceMeasuresDenseTileOnFullTilesOnly) {
  const Features half = features_of(generate::uniform(1024, 1024, 512, 1));
  std::set<std::string> variants;
  for (const auto& [variant, params] : plan::sddmm_search_space(half, kSddmm32, {})) {
    variants.insert(variant);
    Options o;
    o.variant = variant;
    o.params = params;
    o.reuse = Reuse::Many;
    EXPECT_EQ(plan::plan_sddmm(half, kSddmm32, {}, o).params, variant == "cusparse" ? nlohmann::json::object() : params);
  }
  EXPECT_EQ(variants.count("dense_tile"), 1u);
  EXPECT_EQ(variants.count("row_gather"), 1u);
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
