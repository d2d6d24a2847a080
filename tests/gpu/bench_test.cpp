// `sparsejit bench` end to end on the GPU: tiny SpMM and SDDMM runs with --check, every JSON
// line parsed and its numbers checked against each other (speedup, oracle, GFLOP/s, SDDMM's
// "reuse"), the --json-out copy, the closing table, f64 with --variants auto, Aᵀ·B on a
// rectangular matrix file, --no-reuse, SpGEMM's numeric phase with every kernel forced, and a
// failing input skipped.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/planner.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/io.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct Result {
  int status = -1;
  std::vector<json> records;  // one per stdout line
  std::string err;
};

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class BenchGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!driver_available()) GTEST_SKIP() << driver_unavailable_reason();
    dir_ = fs::temp_directory_path() / ("sparsejit_bench_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Runs the CLI; every stdout line must parse as JSON.
  Result bench(const std::string& args) {
    Result r;
    const fs::path err = dir_ / "stderr.txt";
    // A cache of this test's own: no measured selection recorded by an earlier run answers for
    // auto (the assertions below expect it to time its shortlist).
    const std::string cmd = "SPARSEJIT_CACHE_DIR='" + (dir_ / "cache").string() + "' " + test::cli_path() + " bench " + args +
                            " 2>'" + err.string() + "'";
    FILE* pipe = popen(cmd.c_str(), "r");
    if (pipe == nullptr) return r;
    std::string out;
    std::array<char, 4096> buf{};
    std::size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
    const int raw = pclose(pipe);
    r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
    r.err = read_text(err);
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_NO_THROW(r.records.push_back(json::parse(line))) << "not a JSON line: " << line;
    }
    return r;
  }

  fs::path dir_;
};

double min_number(const json& object, const std::vector<std::string>& keys) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& key : keys)
    if (object.contains(key) && object[key].is_number()) best = std::min(best, object[key].get<double>());
  return best;
}

std::vector<std::string> keys_of(const json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

// Every field of a record with --variants all and --check, and the relations between them.
void check_record(const json& r, const std::string& op, const std::string& matrix, int64_t rows, int32_t k,
                  const std::vector<std::string>& our_variants, const std::vector<std::string>& vendor_algs) {
  SCOPED_TRACE(r.dump());
  EXPECT_FALSE(r["device"].get<std::string>().empty());
  const std::string date = r["date"].get<std::string>();
  ASSERT_EQ(date.size(), 20u);
  EXPECT_EQ(date[10], 'T');
  EXPECT_EQ(date.back(), 'Z');
  EXPECT_EQ(r["op"], op);
  EXPECT_EQ(r["dtype"], "f32");
  EXPECT_EQ(r["matrix"], matrix);
  EXPECT_EQ(r["rows"].get<int64_t>(), rows);
  EXPECT_EQ(r["cols"].get<int64_t>(), rows);
  const int64_t nnz = r["nnz"].get<int64_t>();
  EXPECT_GT(nnz, 0);
  EXPECT_EQ(r["k"].get<int32_t>(), k);
  EXPECT_GE(r["sets"].get<int>(), 1);

  const double auto_ms = r["auto"]["ms"].get<double>();
  EXPECT_GT(auto_ms, 0);
  EXPECT_FALSE(r["auto"]["variant"].get<std::string>().empty());
  EXPECT_TRUE(r["auto"]["params"].is_object());
  EXPECT_NEAR(r["auto"]["gflops"].get<double>(), 2.0 * double(nnz) * k / (auto_ms * 1e6), 1e-9 * r["auto"]["gflops"].get<double>());
  // The first call on a new handle, and the same in calls of auto's steady state.
  const double first_ms = r["first_call"]["ms"].get<double>();
  EXPECT_GT(first_ms, 0);
  EXPECT_NEAR(r["first_call"]["calls"].get<double>(), first_ms / auto_ms, 1e-9 * first_ms / auto_ms);

  // Every variant of ours, cusparse (the runtime's, forced) included, each a time or "unsupported".
  EXPECT_EQ(keys_of(r["variants"]), our_variants);
  for (const auto& [name, value] : r["variants"].items())
    EXPECT_TRUE((value.is_number() && value.get<double>() > 0) || value == "unsupported") << name;

  const json& vendor = r["vendor"];
  for (const auto& alg : vendor_algs)
    EXPECT_TRUE((vendor[alg].is_number() && vendor[alg].get<double>() > 0) || vendor[alg] == "unsupported") << alg;
  const double vendor_best = min_number(vendor, vendor_algs);
  ASSERT_TRUE(std::isfinite(vendor_best)) << "no vendor algorithm ran";
  EXPECT_EQ(vendor["best"].get<double>(), vendor_best);
  EXPECT_EQ(vendor[vendor["best_alg"].get<std::string>()].get<double>(), vendor_best);
  EXPECT_GT(r["speedup"].get<double>(), 0);
  EXPECT_NEAR(r["speedup"].get<double>(), vendor_best / auto_ms, 1e-9 * vendor_best / auto_ms);

  // The oracle is the fastest forced variant, or vendor algorithm where its bare call computes
  // the op (SpMM's; SDDMM's skips the scaling by S's values).
  const double forced_best = min_number(r["variants"], our_variants);
  const double oracle = op == "sddmm" ? forced_best : std::min(forced_best, vendor_best);
  EXPECT_EQ(r["oracle"]["ms"].get<double>(), oracle);
  EXPECT_FALSE(r["oracle"]["variant"].get<std::string>().empty());
  EXPECT_NEAR(r["auto_over_oracle"].get<double>(), auto_ms / oracle, 1e-9 * auto_ms / oracle);

  // Where auto timed its shortlist: what that took, and the model's own choice timed alone.
  if (r["auto"]["source"] == "measured") {
    const double measure_ms = r["auto"]["measure_ms"].get<double>();
    EXPECT_GT(measure_ms, 0);
    EXPECT_NEAR(r["auto"]["measure_calls"].get<double>(), measure_ms / auto_ms, 1e-9 * measure_ms / auto_ms);
    double steps_ms = 0;  // the steps, in timing order, are what measure_ms was spent on
    for (const auto& step : r["auto"]["measure_steps"]) steps_ms += step["host_ms"].get<double>();
    EXPECT_FALSE(r["auto"]["measure_steps"].empty());
    EXPECT_LE(steps_ms, measure_ms);
    const double model_ms = r["model"]["ms"].get<double>();
    EXPECT_GT(model_ms, 0);
    EXPECT_FALSE(r["model"]["variant"].get<std::string>().empty());
    EXPECT_NEAR(r["model"]["speedup"].get<double>(), vendor_best / model_ms, 1e-9 * vendor_best / model_ms);
  } else {
    EXPECT_FALSE(r.contains("model"));
  }

  EXPECT_TRUE(r["check"]["ok"].get<bool>());
  EXPECT_LT(r["check"]["rel_error"].get<double>(), 1e-4);
}

// An SDDMM record's "reuse" object and its relations to the record's other times: prepare is
// the fresh handle's first call less one steady call; the best choice without reuse is the
// fastest of auto, every forced candidate but reindexed_tiled and the vendor; the payoff is
// the least number of calls that recovers the preprocessing.
void check_reuse(const json& r) {
  SCOPED_TRACE(r.dump());
  ASSERT_TRUE(r.contains("reuse"));
  const json& reuse = r["reuse"];
  const double first = reuse["first_call_ms"].get<double>();
  const double prepare = reuse["prepare_ms"].get<double>();
  const double reindexed = reuse["reindexed_ms"].get<double>();
  EXPECT_GT(first, 0);
  EXPECT_GE(prepare, 0);
  EXPECT_GT(reindexed, 0);
  EXPECT_NEAR(prepare, std::max(0.0, first - reindexed), 1e-12 * first);
  if (r["variants"].contains("reindexed_tiled")) {
    EXPECT_EQ(reindexed, r["variants"]["reindexed_tiled"].get<double>());
  }

  double without = r["vendor"]["best"].get<double>();
  if (r["auto"]["variant"] != "reindexed_tiled") without = std::min(without, r["auto"]["ms"].get<double>());
  for (const auto& [name, ms] : r["variants"].items())
    if (name != "reindexed_tiled" && ms.is_number()) without = std::min(without, ms.get<double>());
  EXPECT_EQ(reuse["without_reuse_ms"].get<double>(), without);
  EXPECT_NE(reuse["without_reuse_variant"].get<std::string>(), "reindexed_tiled");
  EXPECT_GT(reuse["auto_reuse_ms"].get<double>(), 0);
  EXPECT_FALSE(reuse["auto_reuse_variant"].get<std::string>().empty());

  if (reindexed < without) {
    const int64_t calls = reuse["pays_off_after_calls"].get<int64_t>();
    const double saved = without - reindexed;
    EXPECT_GE(calls, 1);
    EXPECT_LE(prepare, double(calls) * saved * (1 + 1e-9));
    if (calls > 1) {
      EXPECT_GT(prepare, double(calls - 1) * saved * (1 - 1e-9));
    }
  } else {
    EXPECT_TRUE(reuse["pays_off_after_calls"].is_null());
  }
}

// nlohmann::json orders object keys alphabetically.
std::vector<std::string> sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(BenchGpu, SpmmTinyRunWithCheck) {
  const fs::path json_out = dir_ / "spmm.jsonl";
  const Result r = bench("gen:uniform:2000:8 gen:band:2000:16:40 --op spmm -k 32 --repeat 3 --warmup 1 --check "
                         "--measure-skip-margin inf --measure-budget-calls inf --json-out '" + json_out.string() + "'");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.records.size(), 2u) << r.err;
  const auto ours = sorted(plan::spmm_variants());
  const std::vector<std::string> algs = {"csr_alg1", "csr_alg2", "csr_alg3"};
  check_record(r.records[0], "spmm", "gen:uniform:2000:8", 2000, 32, ours, algs);
  EXPECT_EQ(r.records[0]["nnz"].get<int64_t>(), 2000 * 8);
  check_record(r.records[1], "spmm", "gen:band:2000:16:40", 2000, 32, ours, algs);
  for (const json& record : r.records) {
    EXPECT_FALSE(record.contains("reuse")) << "reuse is measured for SDDMM only";
    // Each handle serves more than one call, so auto times its shortlist (ours and cuSPARSE).
    EXPECT_EQ(record["auto"]["source"], "measured") << record.dump();
  }

  // --json-out holds the same lines; stderr ends with the table and the K=32 summary.
  std::istringstream saved(read_text(json_out));
  std::vector<json> saved_records;
  for (std::string line; std::getline(saved, line);) saved_records.push_back(json::parse(line));
  EXPECT_EQ(saved_records, r.records);
  EXPECT_NE(r.err.find("auto ms"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gen:band:2000:16:40"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("K=32: 2 matrices"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("K=32 measured selection on 2 matrices"), std::string::npos) << r.err;
}

TEST_F(BenchGpu, SddmmTinyRunWithCheck) {
  const Result r = bench("gen:uniform:2000:8 gen:band:2000:16:40 --op sddmm -k 32 --repeat 3 --warmup 1 --check");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.records.size(), 2u) << r.err;
  const auto ours = sorted(plan::sddmm_variants());
  check_record(r.records[0], "sddmm", "gen:uniform:2000:8", 2000, 32, ours, {"sddmm_alg_default"});
  check_record(r.records[1], "sddmm", "gen:band:2000:16:40", 2000, 32, ours, {"sddmm_alg_default"});
  for (const json& record : r.records) check_reuse(record);
  EXPECT_NE(r.err.find("K=32 reuse: reindexed_tiled beats every choice without reuse on "), std::string::npos) << r.err;
}

// With --variants auto the reuse measurement times reindexed_tiled itself and compares it
// with auto and the vendor only; --no-reuse leaves the record and its summary line out.
TEST_F(BenchGpu, SddmmReuseWithVariantsAutoAndNoReuse) {
  const Result r = bench("gen:uniform:1000:5 --op sddmm -k 16 --variants auto --repeat 2 --warmup 1 --check");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.records.size(), 1u) << r.err;
  EXPECT_TRUE(r.records[0]["variants"].empty());
  check_reuse(r.records[0]);
  EXPECT_TRUE(r.records[0]["check"]["ok"].get<bool>());
  EXPECT_NE(r.err.find("K=16 reuse: "), std::string::npos) << r.err;

  const Result off = bench("gen:uniform:1000:5 --op sddmm -k 16 --variants auto --repeat 2 --warmup 1 --no-reuse");
  ASSERT_EQ(off.status, 0) << off.err;
  ASSERT_EQ(off.records.size(), 1u) << off.err;
  EXPECT_FALSE(off.records[0].contains("reuse"));
  EXPECT_EQ(off.err.find("K=16 reuse: "), std::string::npos) << off.err;
}

// --time-limit: no item starts past it. A limit already reached when the runtime is up starts
// none; a limit of minutes starts every one; either way the run ends with its report, status 0.
TEST_F(BenchGpu, TimeLimitStartsNoItemPastIt) {
  const Result none = bench("gen:uniform:1000:5 gen:band:1000:8:20 --op spmm -k 16,32 --variants auto --repeat 2 --warmup 1 "
                            "--time-limit 0.000001");
  ASSERT_EQ(none.status, 0) << none.err;
  EXPECT_TRUE(none.records.empty()) << none.err;
  EXPECT_NE(none.err.find("stopped by --time-limit 0s: 4 of 4 items not started"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("no (matrix, K) was measured"), std::string::npos) << none.err;

  const Result all = bench("gen:uniform:1000:5 gen:band:1000:8:20 --op spmm -k 16,32 --variants auto --repeat 2 --warmup 1 "
                           "--time-limit 600");
  ASSERT_EQ(all.status, 0) << all.err;
  EXPECT_EQ(all.records.size(), 4u) << all.err;
  EXPECT_EQ(all.err.find("stopped by --time-limit"), std::string::npos) << all.err;
}

TEST_F(BenchGpu, F64AutoOnlyHasNoOracle) {
  const Result r = bench("gen:uniform:1000:5 --op spmm -k 7,33 --dtype f64 --variants auto --repeat 2 --warmup 1 --check");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.records.size(), 2u) << r.err;
  for (const json& record : r.records) {
    EXPECT_EQ(record["dtype"], "f64");
    EXPECT_TRUE(record["variants"].empty());
    EXPECT_TRUE(record["oracle"].is_null());
    EXPECT_TRUE(record["check"]["ok"].get<bool>());
    EXPECT_LT(record["check"]["rel_error"].get<double>(), 1e-10);
  }
  EXPECT_EQ(r.records[0]["k"], 7);
  EXPECT_EQ(r.records[1]["k"], 33);
}

// C = Aᵀ·B on a RECTANGULAR matrix (900 x 2300, clustered so rs has heavy segments): were
// any run of ours or the vendor's made without the transpose, B (900 x K) would not fit A·B
// and the run would fail; were the reference's transpose wrong, every check would fail. Every
// variant that runs Aᵀ·B is checked; cuSPARSE's CSR_ALG3 (A·B only) is recorded as
// unsupported without calling cuSPARSE, whose own complaint must not appear.
TEST_F(BenchGpu, TransposedSpmmChecksEveryVariantOnARectangularMatrix) {
  const fs::path file = dir_ / "wide.mtx";
  io::write_matrix_market(file.string(), generate::clustered(900, 2300, 24, 0.5, 16, 7));
  const Result r = bench("'" + file.string() + "' --op spmm -k 32,33 --transpose --repeat 2 --warmup 1 --check");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.records.size(), 2u) << r.err;
  EXPECT_EQ(r.err.find("On entry to"), std::string::npos) << r.err;
  for (const json& record : r.records) {
    SCOPED_TRACE(record.dump());
    EXPECT_TRUE(record["transpose"].get<bool>());
    EXPECT_EQ(record["rows"].get<int64_t>(), 900);
    EXPECT_EQ(record["cols"].get<int64_t>(), 2300);
    // csr_rowwarp computes A·B only; csr_vector and rs run and are checked.
    EXPECT_EQ(record["variants"]["csr_rowwarp"], "unsupported");
    EXPECT_TRUE(record["variants"]["csr_vector"].is_number());
    EXPECT_TRUE(record["variants"]["rs"].is_number());
    EXPECT_EQ(record["vendor"]["csr_alg3"], "unsupported");
    EXPECT_TRUE(record["vendor"]["csr_alg1"].is_number() || record["vendor"]["csr_alg2"].is_number());
    EXPECT_TRUE(record["check"]["ok"].get<bool>());
    EXPECT_LT(record["check"]["rel_error"].get<double>(), 1e-4);
  }
}

// A time on the graph clock: a positive number, or null with the reason the call could not be
// captured beside it (key + "_failed").
void expect_graph_time(const json& object, const std::string& key) {
  if (object[key].is_null()) {
    EXPECT_FALSE(object[key + "_failed"].get<std::string>().empty()) << key;
  } else {
    EXPECT_GT(object[key].get<double>(), 0) << key;
  }
}

// SpGEMM with --variants all and --check: the numeric phase with the pattern reused, auto's
// and cuSPARSE's on events and on the graph clock with the ratios the record states between
// them, and each positions kernel forced, timed on both clocks and its C checked.
TEST_F(BenchGpu, SpgemmNumericPhaseOnBothClocksWithEveryKernelForced) {
  const Result r = bench("gen:uniform:3000:6 --op spgemm --variants all --repeat 2 --warmup 1 --check");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(r.records.size(), 1u) << r.err;
  const json& n = r.records[0]["numeric"];
  SCOPED_TRACE(n.dump());
  EXPECT_TRUE(n["check"]["ok"].get<bool>());
  const double ms = n["ms"].get<double>(), vendor_ms = n["vendor_ms"].get<double>();
  const double graph_ms = n["graph_ms"].get<double>(), vendor_graph_ms = n["vendor_graph_ms"].get<double>();
  EXPECT_GT(ms, 0);
  EXPECT_GT(graph_ms, 0);
  EXPECT_NEAR(n["speedup"].get<double>(), vendor_ms / ms, 1e-9 * vendor_ms / ms);
  EXPECT_NEAR(n["graph_speedup"].get<double>(), vendor_graph_ms / graph_ms, 1e-9 * vendor_graph_ms / graph_ms);
  EXPECT_EQ(sorted(keys_of(n["kernels"])), (std::vector<std::string>{"blocks", "entries", "rows", "tiles", "warps"}));
  for (const auto& [name, kernel] : n["kernels"].items()) {
    SCOPED_TRACE(name);
    EXPECT_GT(kernel["ms"].get<double>(), 0);
    expect_graph_time(kernel, "graph_ms");
    EXPECT_TRUE(kernel["check"]["ok"].get<bool>());
  }
}

TEST_F(BenchGpu, FailingInputIsReportedAndSkipped) {
  const Result r = bench("gen:nosuchgenerator:10 gen:uniform:500:4 --op spmm -k 16 --repeat 2 --warmup 1");
  EXPECT_EQ(r.status, 1) << r.err;
  ASSERT_EQ(r.records.size(), 1u) << r.err;
  EXPECT_EQ(r.records[0]["matrix"], "gen:uniform:500:4");
  EXPECT_NE(r.err.find("bench: gen:nosuchgenerator:10: "), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sparsejit
