// The tuner on the CPU: least squares, the tree trainer, feature buckets, ranking of measured
// candidates, the planners' tuned lookup (records and models in a temporary cache database),
// training from synthetic measurements, the calibration matrices, and the CLI's arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "jit/compiler.hpp"
#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "models/model_store.hpp"
#include "plan/spmm_params.hpp"
#include "ops/plan_sources.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "support/test_support.hpp"
#include "tuner/decision_tree_trainer.hpp"
#include "tuner/least_squares.hpp"
#include "tuner/measure.hpp"
#include "tuner/search_space.hpp"
#include "tuner/train.hpp"
#include "tuner/training_set.hpp"

namespace sparsejit {
namespace {

using namespace plan::spmm_param;

// Every test of this process shares one fresh cache directory, set before anything opens
// the process-wide cache.
const std::string kCacheDir = test::use_fresh_cache_dir("tuner");

// ---------------------------------------------------------------------------------------
TEST(LeastSquares, RecoversExactLinearData) {
  // RS-SpMM's cost shape: time = C1·acc + C2·nnz with terms of very different magnitude.
  const double c1 = 3.5e-6, c2 = 2.0e-9;
  std::vector<std::vector<double>> rows;
  std::vector<double> y;
  for (int i = 1; i <= 12; ++i) {
    const double acc = 1000.0 * i + 17 * i * i, nnz = 1e6 * (13 - i) + 5e4 * i;
    rows.push_back({acc, nnz});
    y.push_back(c1 * acc + c2 * nnz);
  }
  const auto x = tuner::least_squares(rows, y);
  ASSERT_EQ(x.size(), 2u);
  EXPECT_NEAR(x[0] / c1, 1.0, 1e-9);
  EXPECT_NEAR(x[1] / c2, 1.0, 1e-9);
}

TEST(LeastSquares, MinimizesResidualOfOverdeterminedSystem) {
  // y = 1, 2, 4 at x = 1, 1, 2 with one unknown: x minimizes (a-1)² + (a-2)² + (2a-4)² -> a = 11/6.
  const auto x = tuner::least_squares({{1}, {1}, {2}}, {1, 2, 4});
  EXPECT_NEAR(x[0], 11.0 / 6.0, 1e-12);
}

TEST(LeastSquares, RejectsBadSystems) {
  EXPECT_THROW(tuner::least_squares({{1, 2}, {2, 4}, {3, 6}}, {1, 2, 3}), InvalidInputError);  // dependent columns
  EXPECT_THROW(tuner::least_squares({{1, 2}}, {1}), InvalidInputError);                        // too few rows
  EXPECT_THROW(tuner::least_squares({{1, 2}, {1}}, {1, 2}), InvalidInputError);                // ragged
  EXPECT_THROW(tuner::least_squares({{1}, {NAN}}, {1, 2}), InvalidInputError);
  EXPECT_THROW(tuner::least_squares({{0}, {0}}, {1, 2}), InvalidInputError);                   // zero column
}

// ---------------------------------------------------------------------------------------
std::vector<tuner::TreeSample> threshold_samples(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<tuner::TreeSample> samples;
  for (int i = 0; i < n; ++i) {
    const double x = u(rng), noise = u(rng);
    samples.push_back({{noise, x}, x > 0.3 ? 8.0 : 2.0});
  }
  return samples;
}

TEST(TreeTrainer, RecoversAKnownThreshold) {
  const auto tree = tuner::fit_tree(threshold_samples(400, 11), {"noise", "x"});
  models::validate_tree(tree);
  ASSERT_EQ(tree.value("feature", ""), "x") << tree.dump();
  EXPECT_NEAR(tree["threshold"].get<double>(), 0.3, 0.01);
  EXPECT_EQ(tree["left"]["leaf"], 2);  // integral labels stay integers
  EXPECT_EQ(tree["right"]["leaf"], 8);
  EXPECT_EQ(tuner::tree_depth(tree), 1);  // both children are pure
  EXPECT_EQ(models::evaluate_tree(tree, {{"x", 0.29}, {"noise", 0.5}}).leaf, 2);
  EXPECT_EQ(models::evaluate_tree(tree, {{"x", 0.31}, {"noise", 0.5}}).leaf, 8);
}

TEST(TreeTrainer, RespectsMaxDepth) {
  std::vector<tuner::TreeSample> samples;
  for (int i = 0; i < 256; ++i) samples.push_back({{double(i)}, double(i / 16)});  // 16 classes
  for (int depth : {0, 1, 2, 3}) {
    const auto tree = tuner::fit_tree(samples, {"x"}, {depth, 2});
    EXPECT_EQ(tuner::tree_depth(tree), depth) << tree.dump();
  }
  // With equally frequent classes every class boundary has the same Gini impurity, so the
  // tie rule (smaller threshold) peels one class per level: 15 splits separate 16 classes.
  const auto deep = tuner::fit_tree(samples, {"x"}, {20, 1});
  EXPECT_EQ(tuner::tree_depth(deep), 15);
  EXPECT_DOUBLE_EQ(deep["threshold"].get<double>(), 15.5);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(models::evaluate_tree(deep, {{"x", i}}).leaf, i / 16);
}

TEST(TreeTrainer, PureNodeIsALeaf) {
  std::vector<tuner::TreeSample> samples;
  for (int i = 0; i < 20; ++i) samples.push_back({{double(i), double(-i)}, 4});
  const auto tree = tuner::fit_tree(samples, {"a", "b"});
  EXPECT_EQ(tree, (nlohmann::json{{"leaf", 4}, {"samples", 20}}));
}

TEST(TreeTrainer, KeepsMinSamplesPerLeaf) {
  // One odd sample at the end: splitting it off would leave a leaf of 1.
  std::vector<tuner::TreeSample> samples;
  for (int i = 0; i < 9; ++i) samples.push_back({{double(i)}, 2});
  samples.push_back({{9.0}, 8});
  const auto tree = tuner::fit_tree(samples, {"x"}, {4, 2});
  std::vector<const nlohmann::json*> stack{&tree};
  while (!stack.empty()) {
    const nlohmann::json* node = stack.back();
    stack.pop_back();
    EXPECT_GE((*node)["samples"].get<int>(), 2) << node->dump();
    if (!node->contains("leaf")) {
      stack.push_back(&(*node)["left"]);
      stack.push_back(&(*node)["right"]);
    }
  }
  const auto loose = tuner::fit_tree(samples, {"x"}, {4, 1});
  EXPECT_DOUBLE_EQ(loose["threshold"].get<double>(), 8.5);
}

TEST(TreeTrainer, TieOfLabelsKeepsTheSmaller) {
  const auto tree = tuner::fit_tree({{{1.0}, 8}, {{1.0}, 2}}, {"x"});  // no split possible
  EXPECT_EQ(tree["leaf"], 2);
}

TEST(TreeTrainer, RejectsBadInput) {
  EXPECT_THROW(tuner::fit_tree({}, {"x"}), InvalidInputError);
  EXPECT_THROW(tuner::fit_tree({{{1.0, 2.0}, 1}}, {"x"}), InvalidInputError);
  EXPECT_THROW(tuner::fit_tree({{{NAN}, 1}}, {"x"}), InvalidInputError);
  EXPECT_THROW(tuner::fit_tree({{{1.0}, 1}}, {"x"}, {-1, 2}), InvalidInputError);
  EXPECT_THROW(tuner::fit_tree({{{1.0}, 1}}, {"x"}, {2, 0}), InvalidInputError);
}

// ---------------------------------------------------------------------------------------
TEST(Buckets, SimilarMatricesShareABucket) {
  const Features a = inspect(generate::uniform(20000, 20000, 8, 1).pattern());
  const Features b = inspect(generate::uniform(20000, 20000, 8, 2).pattern());
  const Features clustered = inspect(generate::clustered(20000, 20000, 8, 1.0, 16, 1).pattern());
  const plan::SpmmProblem k128{128, DType::F32, false};
  EXPECT_EQ(plan::spmm_bucket(a, k128), plan::spmm_bucket(b, k128));
  EXPECT_EQ(plan::spmm_bucket(a, k128), plan::spmm_bucket(a, {100, DType::F32, false}));  // K rounds up to 128
  EXPECT_NE(plan::spmm_bucket(a, k128), plan::spmm_bucket(a, {32, DType::F32, false}));
  EXPECT_NE(plan::spmm_bucket(a, k128), plan::spmm_bucket(a, {128, DType::F64, false}));
  EXPECT_NE(plan::spmm_bucket(a, k128), plan::spmm_bucket(a, {128, DType::F32, true}));
  EXPECT_NE(plan::spmm_bucket(a, k128), plan::spmm_bucket(clustered, k128));
  EXPECT_EQ(plan::sddmm_bucket(a, {32, DType::F32, 32, 32}), plan::sddmm_bucket(b, {32, DType::F32, 32, 32}));
  EXPECT_EQ(plan::spmm_bucket(a, k128), plan::spmm_bucket(a, k128));
}

TEST(Buckets, FieldsAreTheDocumentedOnes) {
  // 4096 x 4096, 4 per row: nnz = 16384 = 4^7, rows = 4^6, row_mean = 2^2, equal rows (cv 0);
  // 4 random columns of 4096 are ~1000 apart (bins 5-6).
  const Features f = inspect(generate::uniform(4096, 4096, 4, 3).pattern());
  const std::string spmm = plan::spmm_bucket(f, {128, DType::F32, false});
  EXPECT_EQ(spmm.rfind("spmm f32 k128 nnz4^7 rows4^6 mean2^2 cv0 clu", 0), 0u) << spmm;
  EXPECT_TRUE(spmm.back() == '2' || spmm.back() == '3') << spmm;
  // density = 4 / 4096 ≈ 9.8e-4: decade -4.
  EXPECT_EQ(plan::sddmm_bucket(f, {20, DType::F64, 20, 20}), "sddmm f64 k32 nnz4^7 dens10^-4 cv0");
  const Features dense_rows = inspect(generate::clustered(4096, 4096, 16, 1.0, 16, 3).pattern());
  EXPECT_EQ(plan::spmm_bucket(dense_rows, {128, DType::F32, false}).back(), '0');  // runs of adjacent columns
}

// ---------------------------------------------------------------------------------------
plan::CaseTime timed(const std::string& c, const std::string& v, nlohmann::json p, double ms, bool ok = true) {
  return {c, v, std::move(p), ms, ok};
}

TEST(Ranking, GeometricMeanSlowdownOverCases) {
  // A: 1.0 and 4.0 (slowdowns 1, 2); B: 2.0 and 2.0 (slowdowns 2, 1); C: 1.2 and 2.4 (1.2, 1.2).
  const std::vector<plan::CaseTime> times = {timed("c1", "a", {}, 1.0), timed("c2", "a", {}, 4.0),
                                             timed("c1", "b", {}, 2.0), timed("c2", "b", {}, 2.0),
                                             timed("c1", "c", {}, 1.2), timed("c2", "c", {}, 2.4)};
  const auto best = plan::best_over_cases(times);
  ASSERT_TRUE(best);
  EXPECT_EQ(best->variant, "c");
  EXPECT_NEAR(best->mean_slowdown, 1.2, 1e-12);
  EXPECT_EQ(best->cases, 2);
}

TEST(Ranking, FailedOrIncompleteCandidatesAreNeverChosen) {
  const std::vector<plan::CaseTime> times = {timed("c1", "fast_but_wrong", {}, 0.1), timed("c2", "fast_but_wrong", {}, 0.0, false),
                                             timed("c1", "partial", {}, 0.2), timed("c1", "slow", {}, 1.0),
                                             timed("c2", "slow", {}, 1.0)};
  EXPECT_EQ(plan::best_over_cases(times)->variant, "slow");
  EXPECT_FALSE(plan::best_over_cases({timed("c1", "x", {}, 1.0, false)}));
}

// The planner's names (plan/spmm_params.hpp): panel_width is RS-SpMM's W, threshold its T.
TEST(Ranking, TiesWithinTwoPercentPreferSmallerPanelWidthThenThreshold) {
  auto rs = [](int w, int t) { return nlohmann::json{{kPanelWidth, w}, {kThreshold, t}}; };
  const std::vector<plan::CaseTime> times = {timed("c", "rs", rs(512, 8), 1.00), timed("c", "rs", rs(256, 8), 1.015),
                                             timed("c", "rs", rs(256, 4), 1.019), timed("c", "zz", {}, 1.001),
                                             timed("c", "rs", rs(128, 2), 1.03)};
  const auto best = plan::best_over_cases(times);
  EXPECT_EQ(best->params, rs(256, 4));
  EXPECT_TRUE(plan::tie_break_before("b", {{kPanelWidth, 1}}, "a", {}));  // a missing width comes last
  EXPECT_TRUE(plan::tie_break_before("a", {}, "b", {}));
}

TEST(Ranking, CaseTimesKeepTheNewestRecordAndStripTheCase) {
  auto record = [](int64_t created, double ms) {
    cache::TuningRecord r;
    r.variant = "csr_rowwarp";
    r.params = {{"warps_per_block", 4}, {plan::kMeasuredOn, {{"case", "0x1 k32 f32"}}}};
    r.time_ms = ms;
    r.checked = true;
    r.created = created;
    return r;
  };
  cache::TuningRecord no_case = record(1, 9);
  no_case.params.erase(plan::kMeasuredOn);
  const auto times = plan::case_times({record(5, 2.0), record(9, 1.0), record(7, 3.0), no_case});
  ASSERT_EQ(times.size(), 1u);
  EXPECT_EQ(times[0].time_ms, 1.0);
  EXPECT_EQ(times[0].case_id, "0x1 k32 f32");
  EXPECT_EQ(times[0].params, (nlohmann::json{{"warps_per_block", 4}}));
}

// ---------------------------------------------------------------------------------------
// The planners' lookup, against the process-wide cache database in kCacheDir.
class TunedLookup : public ::testing::Test {
 protected:
  static plan::DeviceTarget fake(const std::string& name) {
    plan::DeviceTarget t;
    t.name = name;
    t.sm = 90;
    return t;
  }
  static cache::CacheStore& store() { return jit::default_compiler().cache().store(); }
  static void insert(const cache::DeviceKey& key, Op op, const std::string& bucket, const std::string& variant,
                     nlohmann::json params, double ms, bool checked = true, const std::string& case_id = "case-1") {
    cache::TuningRecord r;
    r.device = key;
    r.op = to_string(op);
    r.feature_bucket = bucket;
    r.variant = variant;
    r.params = std::move(params);
    r.params[plan::kMeasuredOn] = {{"case", case_id}, {"matrix", "test"}, {"k", 64}};
    r.time_ms = ms;
    r.checked = checked;
    store().insert_tuning_record(r);
  }
  void SetUp() override { ASSERT_EQ(store().path(), cache::database_path(kCacheDir)); }

  const Features features = inspect(generate::banded(5000, 8, 16, 4).pattern());
  const plan::SpmmProblem problem{64, DType::F32, false};
};

TEST_F(TunedLookup, RecordOfThisDeviceWinsOverTheModel) {
  const auto target = fake("Fake GPU record");
  const Decision untuned = plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target));
  EXPECT_EQ(untuned.source, DecisionSource::Model);
  ops::forget_tuned_lookups();
  const std::string bucket = plan::spmm_bucket(features, problem);
  insert(ops::device_key(target), Op::SpMM, bucket, "csr_rowwarp", {{"warps_per_block", 8}}, 0.5);
  insert(ops::device_key(target), Op::SpMM, bucket, "cusparse", {{"alg", 2}}, 1.0);
  const Decision d = plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target));
  EXPECT_EQ(d.source, DecisionSource::Tuned);
  EXPECT_EQ(d.variant, "csr_rowwarp");
  EXPECT_EQ(d.params["warps_per_block"], 8);
  EXPECT_EQ(d.params["cols_per_lane"], 2);  // the planner's own value for K = 64 stays
  EXPECT_EQ(d.model_version, bucket);
  EXPECT_EQ(d.features["feature_bucket"], bucket);

  Options forced;
  forced.variant = "cusparse";
  EXPECT_EQ(plan::plan_spmm(features, problem, target, forced, {}, ops::plan_sources(Op::SpMM, target)).source, DecisionSource::Forced);
}

TEST_F(TunedLookup, RecordsOfAnotherDeviceDriverOrLibraryAreIgnored) {
  const auto target = fake("Fake GPU other keys");
  const std::string bucket = plan::spmm_bucket(features, problem);
  cache::DeviceKey other_driver = ops::device_key(target);
  other_driver.driver_version += 10;
  cache::DeviceKey other_library = ops::device_key(target);
  other_library.library_version += "-old";
  cache::DeviceKey other_device = ops::device_key(fake("Fake GPU elsewhere"));
  for (const auto& key : {other_driver, other_library, other_device})
    insert(key, Op::SpMM, bucket, "cusparse", {{"alg", 1}}, 0.01);
  const Decision d = plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target));
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "spmm-default");
  // Ignored, not deleted.
  int kept = 0;
  for (const auto& r : store().all_tuning_records())
    kept += r.device.device_name == "Fake GPU other keys" || r.device.device_name == "Fake GPU elsewhere";
  EXPECT_EQ(kept, 3);
}

TEST_F(TunedLookup, LookupIsMemoizedUntilForgotten) {
  const auto target = fake("Fake GPU memo");
  const std::string bucket = plan::spmm_bucket(features, problem);
  insert(ops::device_key(target), Op::SpMM, bucket, "csr_rowwarp", {{"warps_per_block", 2}}, 1.0);
  EXPECT_EQ(plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target)).variant, "csr_rowwarp");
  insert(ops::device_key(target), Op::SpMM, bucket, "cusparse", {{"alg", 3}}, 0.2);
  EXPECT_EQ(plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target)).variant, "csr_rowwarp");  // the database is not read again
  ops::forget_tuned_lookups();
  const Decision d = plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target));
  EXPECT_EQ(d.variant, "cusparse");
  EXPECT_EQ(d.params["alg"], 3);
}

TEST_F(TunedLookup, FailedRecordIsNeverChosen) {
  const auto target = fake("Fake GPU failed");
  const std::string bucket = plan::spmm_bucket(features, problem);
  insert(ops::device_key(target), Op::SpMM, bucket, "csr_rowwarp", {{"warps_per_block", 4}}, 0.0, false);
  insert(ops::device_key(target), Op::SpMM, bucket, "cusparse", {{"alg", 1}}, 3.0);
  const Decision d = plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target));
  EXPECT_EQ(d.source, DecisionSource::Tuned);
  EXPECT_EQ(d.variant, "cusparse");
}

TEST_F(TunedLookup, TunedModelOfThisDeviceReplacesTheShippedOne) {
  const auto target = fake("Fake GPU 3");
  nlohmann::json model = {{"id", plan::tuned_model_id(Op::SDDMM, target.name)},
                          {"version", "1"},
                          {"cost", {{"coo_flat", {{"launch", 1.0}}}, {"cusparse", {{"launch", 0.001}}}}}};
  EXPECT_EQ(model["id"], "sddmm-tuned-Fake-GPU-3");
  store().put_model({plan::tuned_model_name(Op::SDDMM), 1, ops::device_key(target), model, 0});
  const Decision d = plan::plan_sddmm(features, {64, DType::F32, 64, 64}, target, {}, ops::plan_sources(Op::SDDMM, target));
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "sddmm-tuned-Fake-GPU-3");
  EXPECT_EQ(d.variant, "cusparse");
  // Another device still prices with the shipped model.
  EXPECT_EQ(plan::plan_sddmm(features, {64, DType::F32, 64, 64}, fake("Fake GPU 4"), {}, ops::plan_sources(Op::SDDMM, fake("Fake GPU 4"))).model_id, "sddmm-default");
}

TEST_F(TunedLookup, NoCacheDirectoryMeansNothingTuned) {
  const auto target = fake("Fake GPU no cache");
  const std::string bucket = plan::spmm_bucket(features, problem);
  insert(ops::device_key(target), Op::SpMM, bucket, "cusparse", {{"alg", 1}}, 0.1);
  ::setenv("SPARSEJIT_CACHE_DIR", "", 1);
  const Decision d = plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target));
  ::setenv("SPARSEJIT_CACHE_DIR", kCacheDir.c_str(), 1);
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "spmm-default");
  EXPECT_EQ(plan::plan_spmm(features, problem, target, {}, {}, ops::plan_sources(Op::SpMM, target)).source, DecisionSource::Tuned);
}

// Measurements shaped as `sparsejit tune` makes them (the planner's search space, params and
// Decision features) train a model whose threshold tree the planner then follows: every case
// is fastest at threshold 32, a value outside the planner's own threshold grid {2, 4, 8, 16}.
TEST_F(TunedLookup, TrainingOnThePlannersSearchSpaceGivesTheThresholdThePlannerUses) {
  const auto target = fake("Fake GPU trained");
  const plan::SpmmProblem p{64, DType::F32, false};
  std::vector<tuner::Measurement> ms;
  for (const char* spec : {"clustered:3000:16:0.5:16", "band:3000:8:16", "uniform:3000:6"}) {
    const Csr<double> m = generate::from_spec(spec, 3);
    const Features f = inspect(m.pattern());
    const Decision planned = plan::plan_spmm(f, p, target, {});
    for (const auto& c : tuner::spmm_candidates(f, p, target)) {
      tuner::Measurement x;
      x.case_id = x.matrix = spec;
      x.k = p.k;
      x.dtype = p.dtype;
      x.features = planned.features;
      x.variant = c.variant;
      x.params = c.params;
      x.ok = true;
      x.time_ms = c.variant == tuner::kRsVariant && c.params.at(kThreshold) == 32 ? 1.0 : 2.0;
      ms.push_back(x);
    }
  }
  const tuner::TrainedModel trained = tuner::train_spmm_model(ms, models::shipped_model("spmm"), target.name);
  ASSERT_TRUE(trained.model.contains("threshold_tree")) << trained.model.dump();
  EXPECT_EQ(trained.model["threshold_tree"]["leaf"], 32);
  EXPECT_EQ(trained.model["rs"]["f32"]["cf_h"], 1);
  store().put_model({plan::tuned_model_name(Op::SpMM), 1, ops::device_key(target), trained.model, 0});
  ops::forget_tuned_lookups();

  const Csr<double> other = generate::from_spec("clustered:2000:12:0.25:16", 4);
  Options rs;
  rs.variant = tuner::kRsVariant;
  const Decision d = plan::plan_spmm(inspect(other.pattern()), p, target, rs,
                                     [&](int32_t w, int32_t t) { return row_segment_split(other.pattern(), w, t); },
                                     ops::plan_sources(Op::SpMM, target));
  EXPECT_EQ(d.model_id, plan::tuned_model_id(Op::SpMM, target.name));
  EXPECT_EQ(d.params.at(kThreshold), 32) << describe(d);
}

// ---------------------------------------------------------------------------------------
tuner::Measurement rs_measurement(const std::string& c, double frac0, int cf_h, int cf_v, int t, double ms) {
  tuner::Measurement m;
  m.case_id = c;
  m.matrix = c;
  m.k = 128;
  m.features = {{"nnz", 1000}, {"density", 1e-3}, {"accumulations_per_nnz", 0.5}, {"row_mean", 8}, {"row_cv", 0.1},
                {"k", 128}, {"value_bytes", 4}};
  for (int b = 0; b < kClusterBins; ++b) m.features["cluster_frac_" + std::to_string(b)] = b == 0 ? frac0 : 0.0;
  m.variant = tuner::kRsVariant;
  m.params = {{kPanelWidth, 256}, {kThreshold, t}, {kCfV, cf_v}, {kCfH, cf_h}};
  m.time_ms = ms;
  m.ok = true;
  return m;
}

TEST(Training, RsPhasesPickModesAndTreeLearnsT) {
  // Ten cases; the best T is 8 when cluster_frac_0 > 0.45, else 2. CF_H = 2 and CF_V = 2 are
  // best everywhere (as the paper found for single precision).
  std::vector<tuner::Measurement> ms;
  for (int i = 0; i < 10; ++i) {
    const double frac0 = i / 10.0;
    const int best_t = frac0 > 0.45 ? 8 : 2;
    for (int cf_h : {1, 2})
      for (int cf_v : {1, 2, 4})
        for (int t : {2, 4, 8})
          ms.push_back(rs_measurement("case" + std::to_string(i), frac0, cf_h, cf_v, t,
                                      1.0 + (cf_h == 2 ? 0 : 0.5) + (cf_v == 2 ? 0 : 0.3) + (t == best_t ? 0 : 0.2)));
  }
  std::vector<std::string> notes;
  const auto rs = tuner::train_rs(ms, notes);
  ASSERT_TRUE(rs);
  const nlohmann::json& f32 = rs->per_type["f32"];
  EXPECT_EQ(f32["cf_h"], 2);
  EXPECT_EQ(f32["cf_v"], 2);
  EXPECT_EQ(f32["tree_samples"], 10);
  const nlohmann::json& tree = f32["threshold_tree"];
  EXPECT_EQ(tree["feature"], "cluster_frac_0") << tree.dump();
  EXPECT_GT(tree["threshold"].get<double>(), 0.4);
  EXPECT_LT(tree["threshold"].get<double>(), 0.5);
  // One value type: the planner's tree is that type's tree.
  ASSERT_TRUE(rs->threshold_tree);
  EXPECT_EQ(*rs->threshold_tree, tree);
  EXPECT_FALSE(tuner::train_rs({}, notes));
}

TEST(Training, CfVCostsFitExactLinearTimes) {
  const double c1[] = {0, 2e-5, 3e-5}, c2[] = {0, 1e-8, 0.5e-8};
  std::vector<tuner::Measurement> ms;
  for (int i = 0; i < 6; ++i)
    for (int v : {1, 2}) {
      tuner::Measurement m = rs_measurement("case" + std::to_string(i), 0.5, 2, v, 4, 0);
      m.heavy_segments = 1000 * (i + 1) + 300 * i * i;
      m.heavy_nnz = 400000 - 50000 * i;
      m.features["nnz"] = m.heavy_nnz;  // all heavy
      m.time_ms = c1[v] * double(m.heavy_segments) + c2[v] * double(m.heavy_nnz);
      ms.push_back(m);
    }
  std::vector<std::string> notes;
  const auto rs = tuner::train_rs(ms, notes);
  ASSERT_TRUE(rs);
  for (int v : {1, 2}) {
    const nlohmann::json& c = rs->per_type["f32"]["cf_v_cost"][std::to_string(v)];
    EXPECT_NEAR(c["acc_dense"].get<double>() / c1[v], 1.0, 1e-8) << c.dump();
    EXPECT_NEAR(c["nnz_d"].get<double>() / c2[v], 1.0, 1e-8) << c.dump();
  }
}

tuner::Measurement sddmm_measurement(const std::string& c, double density, const std::string& variant, nlohmann::json params,
                                     double ms) {
  tuner::Measurement m;
  m.case_id = c;
  m.matrix = c;
  m.k = 32;
  m.features = {{"density", density}, {"nnz", 1000}, {"tile_fill", density}, {"row_mean", 4.0}, {"row_cv", 0.5},
                {"k", 32}, {"value_bytes", 4}};
  m.variant = variant;
  m.params = std::move(params);
  m.time_ms = ms;
  m.ok = true;
  return m;
}

TEST(Training, DensityThresholdSeparatesTiledFromCoo) {
  // Tiled wins above 3e-4, COO at or below; the learned threshold must fall between the
  // neighbouring densities 1e-4 and 1e-3.
  std::vector<tuner::Measurement> ms;
  const double densities[] = {1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1};
  for (int i = 0; i < 6; ++i) {
    const std::string c = "c" + std::to_string(i);
    const bool tiled_wins = densities[i] > 3e-4;
    ms.push_back(sddmm_measurement(c, densities[i], "tiled_shared", {}, tiled_wins ? 1.0 : 2.0));
    ms.push_back(sddmm_measurement(c, densities[i], "coo_flat", {{"group_size", 8}}, tiled_wins ? 1.5 : 1.0));
  }
  const auto t = tuner::density_threshold(ms, 32);
  ASSERT_TRUE(t);
  EXPECT_GT(*t, 1e-4);
  EXPECT_LT(*t, 1e-3);
  EXPECT_FALSE(tuner::density_threshold(ms, 64));
  // Without tiled measurements there is nothing to separate.
  std::vector<tuner::Measurement> coo_only;
  for (const auto& m : ms) if (m.variant == "coo_flat") coo_only.push_back(m);
  EXPECT_FALSE(tuner::density_threshold(coo_only, 32));
}

// Dense tiles full -> dense_tile; sparse with short rows -> coo_flat; long rows -> row_gather.
// reindexed_tiled (reuse only) never becomes a leaf even when fastest.
TEST(Training, SddmmVariantTreeSeparatesTheWinners) {
  struct Shape { double fill, row_mean; const char* winner; };
  const Shape shapes[] = {{0.9, 300, "dense_tile"}, {0.7, 200, "dense_tile"}, {0.6, 250, "dense_tile"},
                          {0.01, 2, "coo_flat"},    {0.02, 1.5, "coo_flat"}, {0.005, 3, "coo_flat"},
                          {0.03, 40, "row_gather"}, {0.05, 60, "row_gather"}, {0.02, 30, "row_gather"}};
  std::vector<tuner::Measurement> ms;
  int i = 0;
  for (const Shape& shape : shapes) {
    const std::string c = "case" + std::to_string(i++);
    for (const char* v : {"coo_flat", "row_gather", "dense_tile", "cusparse", "reindexed_tiled"}) {
      tuner::Measurement m = sddmm_measurement(c, 0.01, v, {}, std::string(v) == shape.winner ? 1.0 : 2.0);
      if (std::string(v) == "reindexed_tiled") m.time_ms = 0.5;
      m.features["tile_fill"] = shape.fill;
      m.features["row_mean"] = shape.row_mean;
      ms.push_back(m);
    }
  }
  const auto tree = tuner::sddmm_variant_tree(ms);
  ASSERT_TRUE(tree);
  for (const Shape& shape : shapes) {
    const nlohmann::json features = {{"tile_fill", shape.fill}, {"row_mean", shape.row_mean}, {"row_cv", 0.5},
                                     {"density", 0.01}, {"nnz", 1000}, {"k", 32}, {"value_bytes", 4}};
    EXPECT_EQ(models::evaluate_tree(*tree, features).leaf, shape.winner) << shape.fill << " " << shape.row_mean;
  }
  const auto trained = tuner::train_sddmm_model(ms, models::shipped_model("sddmm"), "Fake GPU");
  EXPECT_EQ(trained.model["tree"], *tree);
}

TEST(Training, PlannerLaunchTakesTheDecadeWithTheMostCasesAndKeepsTheBaseKeys) {
  const nlohmann::json base = {{"coo_flat", {{"threads_per_block", 256}, {"nnz_per_group", 4}}},
                               {"dense_tile", {{"tile_rows", 32}}}};
  const nlohmann::json decades = {
      {"coo_flat", {{{"density_decade", -5}, {"cases", 2}, {"params", {{"threads_per_block", 64}, {"nnz_per_group", 1}}}},
                    {{"density_decade", -3}, {"cases", 7}, {"params", {{"threads_per_block", 128}, {"vector_width", 4}}}}}},
      {"not_in_base", {{{"density_decade", -1}, {"cases", 9}, {"params", {{"x", 1}}}}}}};
  const nlohmann::json launch = tuner::planner_launch(base, decades);
  EXPECT_EQ(launch["coo_flat"]["threads_per_block"], 128);  // from the 7-case decade
  EXPECT_EQ(launch["coo_flat"]["nnz_per_group"], 4);        // that decade does not set it: base kept
  EXPECT_FALSE(launch["coo_flat"].contains("vector_width"));
  EXPECT_EQ(launch["dense_tile"], base["dense_tile"]);
  EXPECT_FALSE(launch.contains("not_in_base"));
}

TEST(Training, LaunchShapesPerDensityDecade) {
  std::vector<tuner::Measurement> ms;
  for (int g : {4, 8}) {
    ms.push_back(sddmm_measurement("sparse", 2e-6, "coo_flat", {{"group_size", g}}, g == 4 ? 1.0 : 2.0));
    ms.push_back(sddmm_measurement("dense", 0.05, "coo_flat", {{"group_size", g}}, g == 8 ? 1.0 : 2.0));
  }
  const auto shapes = tuner::launch_shapes(ms);
  ASSERT_EQ(shapes["coo_flat"].size(), 2u);
  EXPECT_EQ(shapes["coo_flat"][0]["density_decade"], -6);
  EXPECT_EQ(shapes["coo_flat"][0]["params"]["group_size"], 4);
  EXPECT_EQ(shapes["coo_flat"][1]["density_decade"], -2);
  EXPECT_EQ(shapes["coo_flat"][1]["params"]["group_size"], 8);
}

TEST(Training, CostsAreScaledByMeasuredOverPredicted) {
  std::vector<tuner::Measurement> ms;
  for (const char* c : {"a", "b"}) {
    tuner::Measurement m = sddmm_measurement(c, 1e-3, "coo_flat", {{"group_size", 4}}, c[0] == 'a' ? 0.5 : 2.0);
    m.predicted_ms = 1.0;  // measured/predicted = 0.5 and 2: geometric mean 1
    ms.push_back(m);
    m.params = {{"group_size", 8}};
    m.time_ms *= 0.5;  // the best params count: 0.25 and 1.0 -> geometric mean 0.5
    ms.push_back(m);
  }
  std::vector<std::string> notes;
  const nlohmann::json cost = tuner::calibrate_costs(ms, {{"coo_flat", {{"launch", 0.004}, {"gather_bytes", 2e-10}}}, {"cusparse", {{"launch", 1.0}}}}, notes);
  EXPECT_NEAR(cost["coo_flat"]["launch"].get<double>(), 0.002, 1e-15);
  EXPECT_NEAR(cost["coo_flat"]["gather_bytes"].get<double>(), 1e-10, 1e-22);
  EXPECT_EQ(cost["cusparse"]["launch"], 1.0);  // not measured: unchanged
  ASSERT_EQ(notes.size(), 1u);
}

TEST(Training, SddmmModelReportsThresholdNextToThePaper) {
  std::vector<tuner::Measurement> ms;
  for (double density : {1e-5, 1e-3}) {
    const std::string c = "c" + std::to_string(density);
    ms.push_back(sddmm_measurement(c, density, "tiled_shared", {}, density > 1e-4 ? 1.0 : 3.0));
    ms.push_back(sddmm_measurement(c, density, "coo_flat", {{"group_size", 4}}, 2.0));
  }
  const auto trained = tuner::train_sddmm_model(ms, models::shipped_model("sddmm"), "Fake GPU");
  EXPECT_EQ(trained.model["id"], "sddmm-tuned-Fake-GPU");
  // The planner's launch section keeps its form (an object per variant), the decades beside it.
  EXPECT_TRUE(trained.model["launch"]["coo_flat"].is_object());
  EXPECT_EQ(trained.model["launch"]["coo_flat"]["nnz_per_group"],
            models::shipped_model("sddmm")["launch"]["coo_flat"]["nnz_per_group"]);
  EXPECT_TRUE(trained.model["launch_tuned_by_density_decade"]["coo_flat"].is_array());
  EXPECT_GT(trained.model["density_threshold"]["32"].get<double>(), 1e-5);
  EXPECT_LT(trained.model["density_threshold"]["32"].get<double>(), 1e-3);
  bool reported = false;
  for (const auto& note : trained.notes)
    reported |= note.rfind("density threshold learned at K=32: 1.0e-04 (paper: 1.0e-04)", 0) == 0;
  EXPECT_TRUE(reported) << nlohmann::json(trained.notes).dump();
}

// ---------------------------------------------------------------------------------------
TEST(TrainingSet, CalibrationMatricesAreHeavyExactlyUpToTheirSegmentLength) {
  const Csr<double> m = tuner::panel_calibration_matrix(1000, 256, 8, 5);  // last panel 232 wide
  validate(m.pattern());
  EXPECT_EQ(m.nnz(), 1000 * 4 * 8);
  const SplitStats at8 = row_segment_split(m.pattern(), 256, 8);
  EXPECT_EQ(at8.heavy_nnz, m.nnz());
  EXPECT_EQ(at8.heavy_segments, 1000 * 4);
  EXPECT_EQ(row_segment_split(m.pattern(), 256, 9).heavy_nnz, 0);
  const Csr<double> d = tuner::dense_csr(300, 5);
  validate(d.pattern());
  EXPECT_EQ(d.nnz(), 300 * 300);
  EXPECT_EQ(row_segment_split(d.pattern(), 256, 16).heavy_segments, 300 * 2);
  EXPECT_THROW(tuner::panel_calibration_matrix(0, 256, 8, 1), InvalidInputError);
}

TEST(TrainingSet, GeneratedSetsAndSearchSpaces) {
  const auto quick = tuner::generated_training_matrices(true, 1);
  ASSERT_EQ(quick.size(), 3u);
  for (const auto& m : quick) {
    EXPECT_GE(m.matrix.nnz(), 5000) << m.name;
    EXPECT_LE(m.matrix.nnz(), 40000) << m.name;
  }
  const Features f = inspect(quick[0].matrix.pattern());
  const plan::DeviceTarget target;
  const auto spmm = tuner::spmm_candidates(f, {32, DType::F32, false}, target);
  EXPECT_EQ(spmm.size(), plan::spmm_search_space(f, {32, DType::F32, false}, target).size());
  // Every candidate's params are ones its variant takes (rs needs the split statistics).
  const Csr<double>& m = quick[0].matrix;
  const plan::SplitStatsSource split = [&](int32_t w, int32_t t) { return row_segment_split(m.pattern(), w, t); };
  for (const auto& c : spmm) {
    Options o;
    o.variant = c.variant;
    o.params = c.params;
    EXPECT_EQ(plan::plan_spmm(f, {32, DType::F32, false}, target, o, split).variant, c.variant);
  }
  for (const auto& c : tuner::sddmm_candidates(f, {32, DType::F32, 32, 32}, target)) {
    Options o;
    o.variant = c.variant;
    o.params = c.params;
    o.reuse = tuner::reuse_for(Op::SDDMM, c.variant);
    EXPECT_EQ(plan::plan_sddmm(f, {32, DType::F32, 32, 32}, target, o).variant, c.variant);
  }
  EXPECT_THROW(tuner::matrix_files("/nonexistent/sparsejit"), IoError);
}

// ---------------------------------------------------------------------------------------
using test::CliResult;
using test::run_cli;

TEST(TuneCli, HelpListsTheOptions) {
  const CliResult r = run_cli("tune --help");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* option : {"--op", "--matrices", "--quick", "--resume", "--restart", "--k", "--write-models", "--quiet", "ETA"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option << "\n" << r.out;
}

TEST(TuneCli, BadArgumentsFailWithOneClearLine) {
  EXPECT_NE(run_cli("tune").status, 0);
  const CliResult bad_op = run_cli("tune --op spmv");
  EXPECT_NE(bad_op.status, 0);
  EXPECT_NE(bad_op.out.find("spmv"), std::string::npos) << bad_op.out;
  const CliResult bad_k = run_cli("tune --op spmm --k 32,0");
  EXPECT_NE(bad_k.status, 0);
  EXPECT_NE(bad_k.out.find("--k 0"), std::string::npos) << bad_k.out;
  const CliResult bad_type = run_cli("tune --op spmm --dtype f16");
  EXPECT_NE(bad_type.status, 0);
  EXPECT_NE(bad_type.out.find("f16"), std::string::npos) << bad_type.out;
  EXPECT_NE(run_cli("tune --op spmm --resume --restart").status, 0);
  const CliResult bad_dir = run_cli("tune --op spmm --matrices /nonexistent/sparsejit");
  EXPECT_NE(bad_dir.status, 0);
  EXPECT_NE(bad_dir.out.find("/nonexistent/sparsejit"), std::string::npos) << bad_dir.out;
  const CliResult no_cache = run_cli("tune --op sddmm --quick", "SPARSEJIT_CACHE_DIR=");
  EXPECT_EQ(no_cache.status, 1);
  EXPECT_NE(no_cache.out.find("SPARSEJIT_CACHE_DIR"), std::string::npos) << no_cache.out;
}

TEST(TuneCli, WithoutAGpuTuningSaysSo) {
  if (driver_available()) GTEST_SKIP() << "a GPU is present (tests/gpu/tune_test.cpp tunes it)";
  const CliResult r = run_cli("tune --op spmm --quick", "SPARSEJIT_CACHE_DIR=" + kCacheDir);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("unsupported"), std::string::npos) << r.out;
}


// ---------------------------------------------------------------------------------------
TEST(NonnegativeLeastSquares, ClampsANegativeUnconstrainedCoefficient) {
  // Unconstrained: x = (2, -1). With x2 >= 0 the best is x2 = 0, x1 = 2.
  auto x = tuner::nonnegative_least_squares({{1, 0}, {0, 1}}, {2, -1});
  EXPECT_NEAR(x[0], 2.0, 1e-12);
  EXPECT_EQ(x[1], 0.0);
  // y = 4 - i on rows (1, i): least squares gives (4, -1); with both >= 0 the constant 2
  // (residual 2) beats the slope 5/7 alone (residual 336/49).
  EXPECT_NEAR(tuner::least_squares({{1, 1}, {1, 2}, {1, 3}}, {3, 2, 1})[1], -1.0, 1e-12);
  x = tuner::nonnegative_least_squares({{1, 1}, {1, 2}, {1, 3}}, {3, 2, 1});
  EXPECT_NEAR(x[0], 2.0, 1e-12);
  EXPECT_EQ(x[1], 0.0);
}

// Rows of four regressors of very different magnitude (a launch, bytes, a count, noise-free).
std::vector<std::vector<double>> cost_like_rows(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.1, 1.0);
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < n; ++i) rows.push_back({1.0 + (i % 3), 1e7 * u(rng), 1e3 * u(rng), 1e5 * u(rng)});
  return rows;
}

TEST(NonnegativeLeastSquares, RecoversExactDataWithAZeroCoefficient) {
  const std::vector<double> truth = {3e-3, 0.0, 2e-4, 5e-8};
  const auto rows = cost_like_rows(20, 7);
  std::vector<double> y;
  for (const auto& r : rows) y.push_back(truth[0] * r[0] + truth[1] * r[1] + truth[2] * r[2] + truth[3] * r[3]);
  const auto x = tuner::nonnegative_least_squares(rows, y);
  ASSERT_EQ(x.size(), 4u);
  for (int j : {0, 2, 3}) EXPECT_NEAR(x[j] / truth[j], 1.0, 1e-8) << j;
  EXPECT_NEAR(x[1] * 1e7, 0.0, 1e-9);  // its contribution to a time, not only its value
  EXPECT_GE(x[1], 0.0);
}

TEST(NonnegativeLeastSquares, NoisyDataStaysCloseAndNonNegative) {
  const std::vector<double> truth = {3e-3, 1e-10, 0.0, 5e-8};
  const auto rows = cost_like_rows(400, 9);
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0.0, 0.01);
  std::vector<double> y;
  for (const auto& r : rows)
    y.push_back((truth[0] * r[0] + truth[1] * r[1] + truth[2] * r[2] + truth[3] * r[3]) * (1 + noise(rng)));
  const auto x = tuner::nonnegative_least_squares(rows, y);
  for (double v : x) EXPECT_GE(v, 0.0);
  for (int j : {0, 1, 3}) EXPECT_NEAR(x[j] / truth[j], 1.0, 0.05) << j;
  EXPECT_LT(x[2] * 1e3, 0.01 * 3e-3);  // the absent term explains under 1% of a launch
  EXPECT_THROW(tuner::nonnegative_least_squares({{1, 2}, {1}}, {1, 2}), InvalidInputError);
  EXPECT_THROW(tuner::nonnegative_least_squares({{1}, {NAN}}, {1, 2}), InvalidInputError);
  EXPECT_EQ(tuner::nonnegative_least_squares({{0, 1}, {0, 2}}, {1, 2}), (std::vector<double>{0.0, 1.0}));
}

// ---------------------------------------------------------------------------------------
// Measurements as `sparsejit tune` records them: every candidate of the planner's search
// space forced through the planner, its terms those of the forced plan, its time an exact
// linear combination of them with known coefficients.
std::vector<tuner::Measurement> synthetic_spmm_measurements(const std::vector<const char*>& specs, const nlohmann::json& truth) {
  const plan::DeviceTarget target;
  std::vector<tuner::Measurement> ms;
  for (const char* spec : specs) {
    const Csr<double> m = generate::from_spec(spec, 3);
    const Features f = inspect(m.pattern());
    const plan::SplitStatsSource split = [&](int32_t w, int32_t t) { return row_segment_split(m.pattern(), w, t); };
    for (int32_t k : {32, 128}) {
      const plan::SpmmProblem p{k, DType::F32, false};
      for (const auto& c : tuner::spmm_candidates(f, p, target)) {
        if (!truth.contains(c.variant)) continue;
        Options o;
        o.variant = c.variant;
        o.params = c.params;
        const Decision d = plan::plan_spmm(f, p, target, o, split);
        tuner::Measurement x;
        x.case_id = std::string(spec) + " k" + std::to_string(k);
        x.matrix = spec;
        x.k = k;
        x.features = d.features;
        x.variant = c.variant;
        x.params = c.params;
        for (const auto& candidate : d.candidates)
          if (candidate.variant == c.variant) x.terms = candidate.terms;
        x.time_ms = models::linear_cost(truth.at(c.variant), x.terms);
        x.predicted_ms = 1.0;
        x.ok = true;
        ms.push_back(x);
      }
    }
  }
  return ms;
}

const std::vector<const char*> kCalibrationSpecs = {"uniform:3000:6", "band:2500:8:16", "clustered:3000:16:0.5:16",
                                                    "uniform:1500:24", "rmat:2048:30000", "blockdiag:2000:32:4"};

TEST(Training, CostFitRecoversKnownCoefficientsFromThePlannersTerms) {
  const nlohmann::json truth = {
      {"csr_vector", {{"launch", 0.005}, {"sparse_bytes", 1e-10}, {"gather_bytes", 3e-11}, {"output_bytes", 2e-10},
                      {"atomic_bytes", 0.0}, {"critical_loads", 1.5e-4}}},
      {"csr_merge", {{"launch", 0.002}, {"sparse_bytes", 4e-10}, {"gather_bytes", 1e-10}, {"output_bytes", 0.0},
                     {"atomic_bytes", 5e-10}, {"critical_loads", 3e-4}}}};
  const auto ms = synthetic_spmm_measurements(kCalibrationSpecs, truth);
  const nlohmann::json shipped = models::shipped_model("spmm").at("cost");
  std::vector<std::string> notes;
  const nlohmann::json cost = tuner::calibrate_costs(ms, shipped, notes);
  // A·B: csr_vector never adds atomically, so its atomic_bytes coefficient is kept.
  EXPECT_EQ(cost["csr_vector"]["atomic_bytes"], shipped["csr_vector"]["atomic_bytes"]);
  for (const char* term : {"launch", "sparse_bytes", "gather_bytes", "output_bytes", "critical_loads"})
    EXPECT_NEAR(cost["csr_vector"][term].get<double>() / truth["csr_vector"][term].get<double>(), 1.0, 1e-5) << term << cost.dump();
  for (const auto& [term, value] : truth["csr_merge"].items()) {
    if (value.get<double>() == 0) EXPECT_LT(cost["csr_merge"][term].get<double>(), 1e-6 * shipped["csr_merge"][term].get<double>()) << term;
    else EXPECT_NEAR(cost["csr_merge"][term].get<double>() / value.get<double>(), 1.0, 1e-5) << term << cost.dump();
  }
  EXPECT_EQ(cost["rs"], shipped["rs"]);  // not measured
  ASSERT_EQ(notes.size(), 2u);
  for (const auto& note : notes) {
    EXPECT_NE(note.find("fitted"), std::string::npos) << note;
    // Exact data: the median and worst relative errors after the fit ("-> x") are rounding.
    for (std::size_t at = note.find("-> "), seen = 0; seen < 2; at = note.find("-> ", at + 1), ++seen) {
      ASSERT_NE(at, std::string::npos) << note;
      EXPECT_LT(std::stod(note.substr(at + 3)), 1e-9) << note;
    }
  }
}

TEST(Training, CostFitNeedsThreeCasesMoreThanTermsElseScales) {
  // Two matrices at two K: 4 cases for csr_vector's 6 non-zero terms (B of 2500-3000 rows overflows L1 at K = 32 and 128).
  const nlohmann::json truth = {{"csr_vector", {{"launch", 0.005}, {"sparse_bytes", 1e-10}, {"gather_bytes", 3e-11},
                                                {"output_bytes", 2e-10}, {"atomic_bytes", 0.0}, {"critical_loads", 1.5e-4}}}};
  auto ms = synthetic_spmm_measurements({"uniform:3000:6", "band:2500:8:16"}, truth);
  // The model is twice too fast: every prediction of a case is half its best time.
  std::map<std::string, double> best;
  for (const auto& m : ms) best[m.case_id] = best.count(m.case_id) ? std::min(best[m.case_id], m.time_ms) : m.time_ms;
  for (auto& m : ms) m.predicted_ms = best[m.case_id] / 2;
  const nlohmann::json shipped = models::shipped_model("spmm").at("cost");
  std::vector<std::string> notes;
  const nlohmann::json cost = tuner::calibrate_costs(ms, shipped, notes);
  for (const auto& [term, value] : shipped["csr_vector"].items())
    EXPECT_NEAR(cost["csr_vector"][term].get<double>(), 2 * value.get<double>(), 1e-12 * value.get<double>()) << term;
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("scaled, not fitted: 4 cases for 6 terms, a fit needs 9"), std::string::npos) << notes[0];
}

TEST(Training, CostFitWeighsTimesNearTheCasesFastestMore) {
  // csr_vector at 1e-10 ms per gathered byte on four cases where it is the fastest, and at
  // 3e-10 on four where csr_merge is ten times faster: there its weight is 2 / 10 = 0.2.
  std::vector<tuner::Measurement> ms;
  for (int i = 0; i < 8; ++i) {
    const bool slow = i >= 4;
    const double bytes = 1e7 * (1 + i);
    tuner::Measurement m;
    m.case_id = "case" + std::to_string(i);
    m.ok = true;
    m.variant = "csr_vector";
    m.terms = {{"gather_bytes", bytes}};
    m.time_ms = (slow ? 3e-10 : 1e-10) * bytes;
    ms.push_back(m);
    if (!slow) continue;
    m.variant = "csr_merge";
    m.terms = {{"launch", 1.0}};
    m.time_ms /= 10;  // ten times faster than csr_vector there
    ms.push_back(m);
  }
  std::vector<std::string> notes;
  const nlohmann::json cost = tuner::calibrate_costs(ms, {{"csr_vector", {{"gather_bytes", 1e-10}}}, {"csr_merge", {{"launch", 1.0}}}}, notes);
  // argmin Σ w (c r - 1)², r = bytes / t: c = Σ w r / Σ w r², r 1e10 or 1e10 / 3.
  const double weighted = (4 + 0.2 * 4 / 3.0) / (4 + 0.2 * 4 / 9.0) * 1e-10;  // 1.043e-10
  const double unweighted = (4 + 4 / 3.0) / (4 + 4 / 9.0) * 1e-10;           // 1.2e-10
  EXPECT_NEAR(cost["csr_vector"]["gather_bytes"].get<double>() / weighted, 1.0, 1e-9) << "unweighted: " << unweighted;
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[1].find("weighted relative error"), std::string::npos) << notes[1];
}

TEST(Timing, MedianOfOddAndEvenCountsAndOfNone) {
  EXPECT_EQ(tuner::median({3.0, 1.0, 2.0}), 2.0);
  EXPECT_EQ(tuner::median({4.0, 1.0, 3.0, 2.0}), 2.5);
  EXPECT_EQ(tuner::median({}), 0.0);
}

}  // namespace
}  // namespace sparsejit
