// `sparsejit tune --quick` on the GPU into a temporary cache directory: every candidate is
// recorded, the tuned model is stored and written, a second run measures nothing new, and
// the planner (explain and the Runtime) then uses the records of this device. `tune --op
// spamm` on a small input: its crossover lines, and its tuned model then priced with. `tune
// --op spgemm --quick`: a line per case, the selection lines, and its tuned model then priced with.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/cache_store.hpp"
#include "formats/sddmm_dense_tiles.hpp"
#include "ops/runtime_state.hpp"
#include "ops/plan_sources.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/test_support.hpp"
#include "tuner/search_space.hpp"
#include "tuner/training_set.hpp"

namespace sparsejit {
namespace {

// Set before anything in this process opens the cache, so explain and the Runtime read the
// records the CLI writes.
const std::string kCacheDir = [] {
  const auto dir = std::filesystem::temp_directory_path() / ("sparsejit_tune_gpu_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::setenv("SPARSEJIT_CACHE_DIR", dir.c_str(), 1);
  return dir.string();
}();

test::CliResult run_tune(const std::string& args) {
  return test::run_cli("tune " + args, "SPARSEJIT_CACHE_DIR='" + kCacheDir + "'");
}

std::vector<cache::TuningRecord> records_of(const std::string& op) {
  cache::CacheStore store(kCacheDir);
  std::vector<cache::TuningRecord> out;
  for (auto& r : store.all_tuning_records())
    if (r.op == op) out.push_back(std::move(r));
  return out;
}

// The candidates `tune` measures per quick case at K = 32, f32: the planner's search space
// for that matrix on this device (tuner/search_space.hpp), so the counts follow the space.
std::vector<std::size_t> quick_space_sizes(Op op) {
  const plan::DeviceTarget target = detail::explain_target(0);
  std::vector<std::size_t> sizes;
  for (const auto& m : tuner::generated_training_matrices(true, 1)) {
    const Features f = inspect(m.matrix.pattern());
    plan::SddmmProblem sddmm{32, DType::F32, 32, 32};  // with exact dense-tile counts, as tune plans
    sddmm.tile_count = [&](int32_t rows, int32_t cols) { return formats::count_tiles(m.matrix.pattern(), rows, cols); };
    sizes.push_back(op == Op::SpMM ? tuner::spmm_candidates(f, {32, DType::F32, false}, target).size()
                                   : tuner::sddmm_candidates(f, sddmm, target).size());
  }
  return sizes;
}

std::size_t sum(const std::vector<std::size_t>& sizes) {
  std::size_t total = 0;
  for (std::size_t n : sizes) total += n;
  return total;
}

// Each case's progress line "[i/3] <matrix> K=32 f32: best ... (<n> candidates)" names its
// own count.
void expect_case_lines(const std::string& out, const std::vector<std::size_t>& sizes) {
  const auto quick = tuner::generated_training_matrices(true, 1);
  ASSERT_EQ(quick.size(), sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const std::string head = "[" + std::to_string(i + 1) + "/3] " + quick[i].name + " K=32 f32: best ";
    const std::size_t at = out.find(head);
    ASSERT_NE(at, std::string::npos) << head << "\n" << out;
    const std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_NE(line.find("(" + std::to_string(sizes[i]) + " candidates)"), std::string::npos) << line;
  }
}

class TuneGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!driver_available()) GTEST_SKIP() << driver_unavailable_reason();
  }
};

TEST_F(TuneGpu, QuickSpmmTuneRecordsResumesAndIsUsedByThePlanner) {
  const std::string models_dir = kCacheDir + "/models";
  const test::CliResult first = run_tune("--op spmm --quick --k 32 --write-models '" + models_dir + "'");
  ASSERT_EQ(first.status, 0) << first.out;
  const std::vector<std::size_t> sizes = quick_space_sizes(Op::SpMM);
  expect_case_lines(first.out, sizes);
  EXPECT_NE(first.out.find("threshold tree for the planner"), std::string::npos) << first.out;

  // 3 matrices x 1 K x each one's search space, each candidate a record of this device with its case.
  const std::size_t total = sum(sizes);
  const auto records = records_of("spmm");
  ASSERT_EQ(records.size(), total) << first.out;
  const cache::DeviceKey key = ops::device_key(detail::explain_target(0));
  std::set<std::string> cases, passed_cases;
  for (const auto& r : records) {
    EXPECT_EQ(r.device.device_name, key.device_name);
    EXPECT_EQ(r.device.driver_version, key.driver_version);
    const std::string c = r.params.at(plan::kMeasuredOn).at("case").get<std::string>();
    cases.insert(c);
    // What `tune --from-records` trains on without the matrix: features, and the measurement
    // with the cost terms it was priced with.
    EXPECT_EQ(r.features.value("k", 0), 32) << r.features.dump();
    EXPECT_EQ(r.fingerprint, c.substr(0, c.find(' ')));
    ASSERT_EQ(r.timings.size(), 1u);
    EXPECT_EQ(r.timings[0]["variant"], r.variant);
    if (r.checked) {
      EXPECT_GT(r.time_ms, 0) << r.variant << " " << r.params.dump();
      EXPECT_FALSE(r.timings[0]["terms"].empty()) << r.variant << " " << r.params.dump();
      passed_cases.insert(c);
    } else {
      EXPECT_TRUE(r.params[plan::kMeasuredOn].contains("error")) << r.params.dump();
    }
  }
  EXPECT_EQ(cases.size(), 3u);
  EXPECT_EQ(passed_cases.size(), 3u);  // csr_rowwarp runs every case correctly

  cache::CacheStore store(kCacheDir);
  const auto model = store.find_model("spmm", key);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->json["id"], plan::tuned_model_id(Op::SpMM, key.device_name));
  std::ifstream file(models_dir + "/spmm.json");
  ASSERT_TRUE(file.good());
  EXPECT_EQ(nlohmann::json::parse(file)["id"], model->json["id"]);

  // Nothing new is measured the second time.
  const test::CliResult again = run_tune("--op spmm --quick --k 32");
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_NE(again.out.find("measured 0 candidates"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("reused " + std::to_string(total)), std::string::npos) << again.out;
  EXPECT_EQ(records_of("spmm").size(), total);

  // explain in this process: the tuned bucket uses the record, another bucket the tuned model.
  const auto quick = tuner::generated_training_matrices(true, 1);
  const Decision tuned = explain_spmm(quick[2].matrix.pattern(), 32, DType::F32);
  EXPECT_EQ(tuned.source, DecisionSource::Tuned) << describe(tuned);
  EXPECT_EQ(tuned.model_version, tuned.features["feature_bucket"].get<std::string>());
  const Csr<double> other = generate::rmat(1 << 16, 400000, 5);
  const Decision modelled = explain_spmm(other.pattern(), 512, DType::F32);
  EXPECT_EQ(modelled.source, DecisionSource::Model) << describe(modelled);
  EXPECT_EQ(modelled.model_id, plan::tuned_model_id(Op::SpMM, key.device_name));

  // The Runtime's automatic call follows the record and computes the right product.
  Runtime rt(0);
  Csr<float> a = cast<float>(quick[2].matrix);
  const uint64_t seed = test::fresh_seed();
  generate::fill_random(a.values, seed);
  Dense<float> b(a.cols, 32);
  generate::fill_random(b, seed + 1);
  Dense<float> expected;
  reference::spmm(a, b, expected);
  DeviceCsr<float> da(rt.context(), a);
  DeviceDense<float> db(rt.context(), b), dc(rt.context(), a.rows, 32);
  dc.buffer().fill_bytes(0xFF);
  const CallInfo call = rt.spmm(da, db, dc);
  rt.context().synchronize();
  EXPECT_EQ(call.decision->source, DecisionSource::Tuned);
  EXPECT_EQ(call.decision->variant, tuned.variant);
  const Dense<float> got = dc.download();
  EXPECT_LE(test::relative_error(std::vector<double>(got.data.begin(), got.data.end()),
                                 std::vector<double>(expected.data.begin(), expected.data.end())),
            1e-5)
      << "seed " << seed;
}

TEST_F(TuneGpu, QuickSddmmTuneReportsTheDensityThreshold) {
  const test::CliResult r = run_tune("--op sddmm --quick --k 32 --restart");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::vector<std::size_t> sizes = quick_space_sizes(Op::SDDMM);
  expect_case_lines(r.out, sizes);
  EXPECT_NE(r.out.find("(paper: 1.0e-04)"), std::string::npos) << r.out;
  const auto records = records_of("sddmm");
  EXPECT_EQ(records.size(), sum(sizes));
  int coo_flat = 0;
  for (const auto& record : records) {
    if (record.variant != "coo_flat") continue;
    ++coo_flat;
    EXPECT_TRUE(record.checked) << "every coo_flat shape must pass the reference check: " << record.params.dump();
  }
  EXPECT_GT(coo_flat, 0);
  cache::CacheStore store(kCacheDir);
  const auto model = store.find_model("sddmm", ops::device_key(detail::explain_target(0)));
  ASSERT_TRUE(model);
  EXPECT_TRUE(model->json["launch"].contains("coo_flat")) << model->json.dump();

  // Retraining from those records holds one of the three patterns out and reports both rates.
  const test::CliResult retrained = run_tune("--op sddmm --from-records");
  ASSERT_EQ(retrained.status, 0) << retrained.out;
  EXPECT_NE(retrained.out.find("2 patterns trained on, 1 held out"), std::string::npos) << retrained.out;
  EXPECT_NE(retrained.out.find("held-out cases within 10% of the fastest timed: before "), std::string::npos) << retrained.out;
  EXPECT_TRUE(retrained.out.find("stored the retrained model") != std::string::npos ||
              retrained.out.find("kept the model as it was") != std::string::npos)
      << retrained.out;
}

// A crossover line per precision timed, "crossover fp16 N=1024: measured 12.3%, model <5% (...)",
// each share a number within the shares timed (or a bound at one of them), then the tuned
// model stored for this device is the one explain and the Runtime price SpAMM with.
TEST_F(TuneGpu, SpammTuneReportsCrossoversAndItsModelIsUsed) {
  const test::CliResult r = run_tune("--op spamm --sizes 1024 --precisions full,fp16 --shares 0.05,0.5 --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::regex line(R"(crossover (\w+) N=(\d+): measured ([<>]?)([0-9.]+)%, model ([<>]?)([0-9.]+)% \()");
  std::set<std::string> precisions;
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), line); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    precisions.insert(m[1].str());
    EXPECT_EQ(m[2].str(), "1024") << m[0].str();
    // A bound is a share timed: 5% or 50% as the search reached them (a Toeplitz input's norm
    // products tie, so the kept share moves in steps: within 30%, as the bench test allows).
    for (int at : {3, 5}) {
      const double share = std::stod(m[at + 1].str());
      if (m[at].str() == "<") EXPECT_NEAR(share, 5, 1.5) << m[0].str();
      else if (m[at].str() == ">") EXPECT_NEAR(share, 50, 15) << m[0].str();
      else EXPECT_TRUE(share > 3.5 && share < 65) << m[0].str();
    }
  }
  EXPECT_EQ(precisions, (std::set<std::string>{"full", "fp16"})) << r.out;
  EXPECT_NE(r.out.find("c_tiles = "), std::string::npos) << r.out;

  const cache::DeviceKey key = ops::device_key(detail::explain_target(0));
  const auto model = cache::CacheStore(kCacheDir).find_model(plan::tuned_model_name(Op::SpAMM), key);
  ASSERT_TRUE(model) << r.out;
  const std::string id = plan::tuned_model_id(Op::SpAMM, key.device_name);
  EXPECT_EQ(model->json["id"], id);
  EXPECT_NE(r.out.find("tuned model " + id + " stored in "), std::string::npos) << r.out;

  ops::forget_tuned_lookups();
  const Dense<float> a = cast<float>(generate::algebraic_decay(1024, 1024, 0.1, 0.1, generate::DecaySigns::Positive, 0));
  SpammOptions o;
  o.valid_ratio = 0.1;
  o.precision = SpammPrecision::FP16;
  const Decision explained = explain_spamm(a, a, o);
  EXPECT_EQ(explained.source, DecisionSource::Model) << describe(explained);
  EXPECT_EQ(explained.model_id, id) << describe(explained);
  Runtime rt(0);
  DeviceDense<float> da(rt.context(), a), dc(rt.context(), 1024, 1024);
  const SpammInfo info = rt.spamm(da, da, dc, o);
  rt.context().synchronize();
  EXPECT_EQ(info.decision->model_id, id) << describe(*info.decision);
}

// A line per quick case "<input> f32: <products> products; <variant> <ms> ms, ... (auto: <variant>)",
// the selection lines, then the tuned model stored for this device is the one explain and the
// Runtime price SpGEMM with.
TEST_F(TuneGpu, QuickSpgemmTuneStoresAModelThePlannerUses) {
  const test::CliResult r = run_tune("--op spgemm --quick --quiet");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::regex case_line(R"((^|\n)gen:\S+ f32: [0-9.e+]+ products; (row_hash|bitmap_tc|cusparse) [0-9.e+-]+ ms)");
  EXPECT_EQ(std::distance(std::sregex_iterator(r.out.begin(), r.out.end(), case_line), std::sregex_iterator()), 3) << r.out;
  EXPECT_NE(r.out.find("picks within 10% of the fastest timed, every case: base "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("held-out matrices (gen:"), std::string::npos) << r.out;

  const cache::DeviceKey key = ops::device_key(detail::explain_target(0));
  const auto model = cache::CacheStore(kCacheDir).find_model(plan::tuned_model_name(Op::SpGEMM), key);
  ASSERT_TRUE(model) << r.out;
  const std::string id = plan::tuned_model_id(Op::SpGEMM, key.device_name);
  EXPECT_EQ(model->json["id"], id);
  EXPECT_NE(r.out.find("tuned model " + id + " stored in "), std::string::npos) << r.out;

  ops::forget_tuned_lookups();
  const Csr<float> a = cast<float>(generate::from_spec("uniform:3000:6", 2));
  const Decision explained = explain_spgemm(a.pattern(), a.pattern(), DType::F32);
  EXPECT_EQ(explained.source, DecisionSource::Model) << describe(explained);
  EXPECT_EQ(explained.model_id, id) << describe(explained);
  Runtime rt(0);
  const DeviceCsr<float> da(rt.context(), a);
  CallInfo info;
  rt.spgemm(da, da, {}, &info);
  rt.context().synchronize();
  EXPECT_EQ(info.decision->model_id, id) << describe(*info.decision);
}

}  // namespace
}  // namespace sparsejit
