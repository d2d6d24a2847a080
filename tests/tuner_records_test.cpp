// `sparsejit tune --from-records` and `--precompile` on the CPU: a model retrained from
// synthetic records whose best variant is a known function of a feature (SDDMM's tree) or of
// the cost terms (SpMM's fitted coefficients) is kept because it predicts held-out patterns
// better; records it cannot improve on leave the stored model as it was; the held-out split
// is by pattern. Precompile compiles a small subset for sm_90 into a fresh cache once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <random>
#include <set>
#include <sstream>

#include "jit/compiler.hpp"
#include "models/model_store.hpp"
#include "plan/planner.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "support/test_support.hpp"
#include "tuner/from_records.hpp"
#include "tuner/precompile.hpp"
#include "tuner/search_space.hpp"
#include "tuner/training_set.hpp"
#include "tuner/train.hpp"
#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit {
namespace {

using nlohmann::json;

const cache::DeviceKey kDevice{"Fake GPU for records", 90, 13000, cache::current_key_context().library_version, 132};

std::string fingerprint(int i) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%016x", 0x1000 + i);
  return text;
}

// A measured selection of pattern i at `features`, with these settings timed.
cache::TuningRecord selection(int i, const json& features, const std::vector<plan::RecordedTiming>& timed,
                              const std::string& op) {
  cache::TuningRecord r;
  r.kind = cache::RecordKind::Measured;
  r.device = kDevice;
  r.op = op;
  r.fingerprint = fingerprint(i);
  r.plan_key = "plan:" + op + ":f32:k64:n";
  r.model_version = "test";
  r.variant = timed.front().variant;
  r.features = features;
  for (const auto& t : timed) r.timings.push_back(plan::to_json(t));
  return r;
}

// SDDMM patterns whose fastest variant is `high` when row_mean >= 100 and `low` when it is at
// most 25 (a wide gap, so any threshold learned between them generalizes), 1.5x apart.
std::vector<cache::TuningRecord> sddmm_records_by_row_mean(const std::string& low, const std::string& high) {
  std::vector<cache::TuningRecord> records;
  for (int i = 0; i < 50; ++i) {
    const double row_mean = i < 25 ? 1 + i : 100 + i;
    const json features = {{"tile_fill", 0.1}, {"row_mean", row_mean}, {"row_cv", 0.5}, {"density", 1e-3},
                           {"nnz", 1000 * (i + 1)}, {"k", 64}, {"value_bytes", 4}, {"pattern_reused", 0}};
    const bool is_high = row_mean >= 100;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    records.push_back(selection(i, features,
                                {{low, json::object(), is_high ? 1.5 : 1.0, nan, json::object()},
                                 {high, json::object(), is_high ? 1.0 : 1.5, nan, json::object()}},
                                "sddmm"));
  }
  return records;
}

class FromRecords : public ::testing::Test {
 protected:
  void SetUp() override { store_ = std::make_unique<cache::CacheStore>(dir_.string()); }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void insert(const std::vector<cache::TuningRecord>& records) {
    for (const auto& r : records) store_->insert_tuning_record(r);
  }
  std::filesystem::path dir_ = test::fresh_dir("from-records");
  std::unique_ptr<cache::CacheStore> store_;
};

TEST_F(FromRecords, SplitHoldsOutWholePatterns) {
  int skipped = 0;
  std::vector<cache::TuningRecord> records = sddmm_records_by_row_mean("a", "b");
  records.push_back(records.front());
  records.back().features = json::object();  // an older record: no features
  const auto measurements = tuner::measurements_from_records(records, skipped);
  EXPECT_EQ(skipped, 1);
  EXPECT_EQ(measurements.size(), 100u);
  const tuner::PatternSplit split = tuner::split_by_pattern(measurements);
  EXPECT_EQ(split.held_out_patterns, 10u);
  EXPECT_EQ(split.training_patterns, 40u);
  std::set<std::string> trained, held;
  for (const auto& m : split.training) trained.insert(tuner::pattern_of(m));
  for (const auto& m : split.held_out) held.insert(tuner::pattern_of(m));
  EXPECT_EQ(held.size(), 10u);
  for (const auto& p : held) EXPECT_EQ(trained.count(p), 0u) << p;
  // One pattern: nothing to hold out.
  const auto one = tuner::split_by_pattern({measurements[0], measurements[1]});
  EXPECT_EQ(one.held_out_patterns, 0u);
  EXPECT_EQ(one.training.size(), 2u);
}

// The variant tree learns row_mean: every held-out pattern is then predicted, where the shipped
// tree (which reads other features and names other leaves) was not; the model is stored.
TEST_F(FromRecords, SddmmTreeLearnsTheVariantFromAFeatureAndIsKept) {
  const std::vector<std::string> leaves = tuner::sddmm_tree_variants();
  ASSERT_GE(leaves.size(), 2u);
  insert(sddmm_records_by_row_mean(leaves[0], leaves[1]));
  const json shipped = models::shipped_model("sddmm");
  const tuner::RetrainSummary s = tuner::retrain_from_records(*store_, kDevice, Op::SDDMM, shipped);
  ASSERT_TRUE(s.trained) << (s.notes.empty() ? "" : s.notes[0]);
  EXPECT_EQ(s.records, 50);
  EXPECT_EQ(s.held_out_patterns, 10u);
  EXPECT_EQ(s.after.cases, 10);
  EXPECT_EQ(s.after.within, 10);
  EXPECT_LT(s.before.rate(), s.after.rate());
  EXPECT_TRUE(s.stored);
  const auto tuned = store_->find_model(plan::tuned_model_name(Op::SDDMM), kDevice);
  ASSERT_TRUE(tuned.has_value());
  EXPECT_EQ(tuned->json["tree"]["feature"], "row_mean") << tuned->json["tree"].dump();
  EXPECT_EQ(tuned->json, s.model.model);
}

// Records the current model already predicts: the retrained model is no better, so the stored
// model stays as it was.
TEST_F(FromRecords, RecordsThatDoNotImproveKeepTheModel) {
  const std::vector<std::string> leaves = tuner::sddmm_tree_variants();
  insert(sddmm_records_by_row_mean(leaves[0], leaves[1]));
  const tuner::RetrainSummary first = tuner::retrain_from_records(*store_, kDevice, Op::SDDMM, models::shipped_model("sddmm"));
  ASSERT_TRUE(first.stored);
  json current = first.model.model;
  current["description"] = "the model in use";
  store_->put_model({plan::tuned_model_name(Op::SDDMM), 1, kDevice, current, 0});
  const tuner::RetrainSummary again = tuner::retrain_from_records(*store_, kDevice, Op::SDDMM, current);
  ASSERT_TRUE(again.trained);
  EXPECT_EQ(again.before.rate(), 1.0);
  EXPECT_FALSE(again.stored);
  EXPECT_EQ(store_->find_model(plan::tuned_model_name(Op::SDDMM), kDevice)->json["description"], "the model in use");
}

TEST_F(FromRecords, TooFewPatternsRetrainNothing) {
  const std::vector<std::string> leaves = tuner::sddmm_tree_variants();
  insert({sddmm_records_by_row_mean(leaves[0], leaves[1]).front()});
  const tuner::RetrainSummary s = tuner::retrain_from_records(*store_, kDevice, Op::SDDMM, models::shipped_model("sddmm"));
  EXPECT_FALSE(s.trained);
  EXPECT_FALSE(s.stored);
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_NE(s.notes[0].find("needs at least 2"), std::string::npos) << s.notes[0];
  EXPECT_FALSE(store_->find_model(plan::tuned_model_name(Op::SDDMM), kDevice).has_value());
  // Another device's records are not this device's.
  cache::DeviceKey other = kDevice;
  other.device_name = "Another GPU";
  EXPECT_EQ(tuner::retrain_from_records(*store_, other, Op::SDDMM, models::shipped_model("sddmm")).records, 0);
}

// SpMM picks by cost: two variants whose true coefficients are 3x and 0.5x the shipped ones.
// The shipped formulas rank them wrongly wherever they predict the first cheaper by less
// than 6x; refitted on the training patterns' terms, they rank every held-out pattern right.
TEST_F(FromRecords, SpmmCostsRefitFromTermsAndAreKept) {
  const json shipped = models::shipped_model("spmm");
  std::vector<std::string> variants;
  for (const auto& [name, _] : shipped["cost"].items()) variants.push_back(name);
  ASSERT_GE(variants.size(), 2u);
  const double truth[] = {3.0, 0.5};
  std::mt19937 random(7);
  std::uniform_real_distribution<double> share(0.1, 1.0);
  std::vector<cache::TuningRecord> records;
  for (int i = 0; i < 60; ++i) {
    std::vector<plan::RecordedTiming> timed;
    for (int v = 0; v < 2; ++v) {
      const json& coefficients = shipped["cost"][variants[v]];
      json terms = json::object();
      double predicted = 0;
      for (const auto& [term, c] : coefficients.items()) {
        const double coefficient = c.get<double>();
        // Each term contributes a random share of a millisecond to the shipped prediction.
        terms[term] = coefficient > 0 ? share(random) / coefficient : 0.0;
        predicted += coefficient * terms[term].get<double>();
      }
      timed.push_back({variants[v], json::object(), truth[v] * predicted, predicted, terms});
    }
    records.push_back(selection(i, {{"k", 64}, {"value_bytes", 4}}, timed, "spmm"));
  }
  insert(records);
  const tuner::RetrainSummary s = tuner::retrain_from_records(*store_, kDevice, Op::SpMM, shipped);
  ASSERT_TRUE(s.trained) << (s.notes.empty() ? "" : s.notes[0]);
  EXPECT_EQ(s.after.cases, 12);
  EXPECT_EQ(s.after.within, 12);
  EXPECT_LT(s.before.within, s.after.within);
  EXPECT_TRUE(s.stored);
  for (int v = 0; v < 2; ++v) {
    const auto& fitted = s.model.model["cost"][variants[v]];
    for (const auto& [term, c] : shipped["cost"][variants[v]].items()) {
      if (c.get<double>() <= 0) continue;  // an unused term: not fitted
      EXPECT_NEAR(fitted[term].get<double>() / c.get<double>(), truth[v], 1e-3 * truth[v]) << term;
    }
  }
}

// Precompile: a small subset (the quick matrices, K = 32, f32, one variant) for sm_90 into a
// fresh cache: every kernel compiled once, and found in the cache by a second run.
TEST(Precompile, CompilesASubsetOnceThenFindsItCached) {
  const std::filesystem::path dir = test::fresh_dir("precompile");
  tuner::PrecompileOptions o;
  o.ops = {Op::SpMM};
  o.ks = {32};
  o.quick = true;
  o.variants = {"csr_rowwarp"};
  std::ostringstream progress;
  tuner::PrecompileSummary first;
  {
    jit::Compiler compiler(dir.string());
    first = tuner::precompile(compiler, o, progress);
  }
  EXPECT_TRUE(first.failures.empty()) << first.failures[0];
  EXPECT_GT(first.kernels, 0);
  EXPECT_EQ(first.compiled, first.kernels);
  EXPECT_EQ(cache::cache_stats(dir.string()).entries, first.kernels);
  for (const auto& e : cache::cache_list(dir.string())) EXPECT_EQ(e.key.arch, "sm_90");
  EXPECT_NE(progress.str().find("spmm "), std::string::npos) << progress.str();

  jit::Compiler again(dir.string());
  const tuner::PrecompileSummary second = tuner::precompile(again, o, progress);
  EXPECT_EQ(second.kernels, first.kernels);
  EXPECT_EQ(second.compiled, 0);
  EXPECT_EQ(second.cached, first.kernels);

  // The vendor variant compiles nothing.
  o.variants = {"cusparse"};
  EXPECT_EQ(tuner::precompile(again, o, progress).kernels, 0);
  std::filesystem::remove_all(dir);
}

// What measured selection times, the planner's priced candidates and their neighbours (its
// second round: csr_merge's nnz_per_group halved and doubled, outside the search space at
// either end), is in the cache after precompiling: a warm cache means measuring never waits for
// NVRTC.
TEST(Precompile, CoversTheShortlistAndItsNeighbours) {
  const std::filesystem::path dir = test::fresh_dir("precompile-neighbours");
  tuner::PrecompileOptions o;
  o.ops = {Op::SpMM};
  o.ks = {32};
  o.quick = true;
  o.variants = {"csr_merge"};
  std::ostringstream progress;
  {
    jit::Compiler compiler(dir.string());
    ASSERT_TRUE(tuner::precompile(compiler, o, progress).failures.empty());
  }
  jit::Compiler again(dir.string());
  const plan::SpmmProblem problem{32, DType::F32, false, 32, 32};
  const auto expect_cached = [&](const Features& features, const std::string& variant, const json& params) {
    Options forced;
    forced.variant = variant;
    forced.params = params;
    const Decision d = plan::plan_spmm(features, problem, o.target, forced);
    for (const jit::KernelSpec& spec : variants::SpmmRegistry::find(d.variant)->kernel_specs(d, problem))
      EXPECT_NE(again.get_kernel(spec, o.target.sm).source, cache::KernelSource::Compiled) << variant << " " << d.params.dump();
  };
  int outside_the_space = 0;
  for (const tuner::TrainingMatrix& m : tuner::generated_training_matrices(true, o.seed)) {
    const Features features = inspect(m.matrix.pattern());
    const std::vector<tuner::SearchCandidate> space = tuner::spmm_candidates(features, problem, o.target);
    for (const Candidate& c : plan::plan_spmm(features, problem, o.target, {}).candidates) {
      if (c.variant != "csr_merge" || !c.rejected_because.empty()) continue;
      expect_cached(features, c.variant, c.params);
      for (const plan::TimedChoice& n : plan::spmm_neighbors(c.variant, c.params, problem, o.target)) {
        expect_cached(features, n.variant, n.params);
        outside_the_space += std::none_of(space.begin(), space.end(), [&](const tuner::SearchCandidate& s) { return s.params == n.params; });
      }
    }
  }
  EXPECT_GT(outside_the_space, 0) << "every neighbour checked was in the search space: the test shows nothing";
  std::filesystem::remove_all(dir);
}

TEST(Precompile, BadOptionsAreNamed) {
  jit::Compiler compiler(std::nullopt);
  std::ostringstream progress;
  tuner::PrecompileOptions o;
  o.ks = {0};
  try {
    tuner::precompile(compiler, o, progress);
    ADD_FAILURE() << "no exception";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("K = 0 must be >= 1"), std::string::npos) << e.what();
  }
  o.ks = {32};
  o.ops = {Op::SpGEMM};
  EXPECT_THROW(tuner::precompile(compiler, o, progress), InvalidInputError);
}

// The commands as a user runs them, without a GPU.
TEST(TuneCommand, PrecompileReportsKernelsCacheAndTimeThenFindsThemCached) {
  const std::filesystem::path dir = test::fresh_dir("precompile-cli");
  const std::string env = "SPARSEJIT_CACHE_DIR='" + dir.string() + "'";
  const auto first = test::run_cli("tune --precompile --op sddmm --quick -k 32", env);
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_NE(first.out.find("precompiling for sm_90 into " + cache::database_path(dir.string())), std::string::npos) << first.out;
  const int64_t kernels = cache::cache_stats(dir.string()).entries;
  EXPECT_GT(kernels, 0);
  const std::string count = std::to_string(kernels) + " kernels (" + std::to_string(kernels) + " compiled now, 0 already cached";
  EXPECT_NE(first.out.find(count), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("bytes of cubin, file "), std::string::npos) << first.out;
  const auto second = test::run_cli("tune --precompile --op sddmm --quick -k 32", env);
  ASSERT_EQ(second.status, 0) << second.out;
  EXPECT_NE(second.out.find("(0 compiled now, " + std::to_string(kernels) + " already cached"), std::string::npos) << second.out;

  const auto bad = test::run_cli("tune --precompile --arch sm_5x", env);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("--arch 'sm_5x'"), std::string::npos) << bad.out;
  std::filesystem::remove_all(dir);
}

TEST(TuneCommand, FromRecordsWithoutRecordsKeepsTheModel) {
  const std::filesystem::path dir = test::fresh_dir("from-records-cli");
  const auto r = test::run_cli("tune --from-records --op spmm", "SPARSEJIT_CACHE_DIR='" + dir.string() + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("from 0 records"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not retrained: records of 0 pattern(s) with features"), std::string::npos) << r.out;
  const auto no_op = test::run_cli("tune --from-records", "SPARSEJIT_CACHE_DIR='" + dir.string() + "'");
  EXPECT_EQ(no_op.status, 1);
  EXPECT_NE(no_op.out.find("--op spmm|sddmm|spgemm|spamm is required"), std::string::npos) << no_op.out;
  std::filesystem::remove_all(dir);
}

TEST(RunCommand, BadMeasuringLimitsAreNamed) {
  const auto r = test::run_cli("run gen:uniform:300:7 --op spmm --measure-skip-margin 0.5");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("Options::measure_skip_margin = 0.5 must be >= 1"), std::string::npos) << r.out;
  const auto budget = test::run_cli("bench gen:uniform:300:7 --op spmm --measure-budget-ms -1");
  EXPECT_EQ(budget.status, 1);
  EXPECT_NE(budget.out.find("Options::measure_budget_ms = -1 must be > 0 ms"), std::string::npos) << budget.out;
  const auto calls = test::run_cli("run gen:uniform:300:7 --op spmm --measure-budget-calls 0");
  EXPECT_EQ(calls.status, 1);
  EXPECT_NE(calls.out.find("Options::measure_budget_calls = 0 must be > 0 calls"), std::string::npos) << calls.out;
}

// --held-out writes the held-out fingerprints (none without records) and names a path it
// cannot write.
TEST(TuneFromRecordsCli, HeldOutListIsWrittenOrItsPathNamed) {
  const std::filesystem::path dir = test::fresh_dir("from-records-held-out");
  const std::string env = "SPARSEJIT_CACHE_DIR='" + (dir / "cache").string() + "'";
  const std::filesystem::path list = dir / "held.txt";
  const auto r = test::run_cli("tune --from-records --op spmm --held-out '" + list.string() + "'", env);
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("wrote the 0 held-out patterns' fingerprints"), std::string::npos) << r.out;
  EXPECT_TRUE(std::filesystem::exists(list));
  EXPECT_EQ(std::filesystem::file_size(list), 0u);
  const std::string missing = (dir / "no_such_dir" / "held.txt").string();
  const auto bad = test::run_cli("tune --from-records --op spmm --held-out '" + missing + "'", env);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.out.find("tune --held-out: cannot write '" + missing + "'"), std::string::npos) << bad.out;
  const auto alone = test::run_cli("tune --op spmm --held-out '" + list.string() + "'", env);
  EXPECT_EQ(alone.status, 1);
  EXPECT_NE(alone.out.find("--held-out requires --from-records"), std::string::npos) << alone.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sparsejit
