// `sparsejit bench` without a GPU: the SDDMM reuse arithmetic (after how many calls the
// reindexing pays off, the best choice without reuse, the "reuse" object) and the closing
// report's reuse summary, on hand-made records with hand-computed answers.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "cli/bench.hpp"

namespace sparsejit::cli::bench {
namespace {

using nlohmann::ordered_json;

TEST(BenchReuse, PaysOffAfterTheFirstCallThatRecoversThePreprocessing) {
  // 1.0 ms of preprocessing, 0.02 ms saved per call: 50 calls (1.0 + 50·0.03 = 50·0.05).
  EXPECT_EQ(pays_off_after_calls(1.0, 0.05, 0.03), 50);
  // 0.1 / 0.03 = 3.33: three calls save 0.09 < 0.1, the fourth pays it back.
  EXPECT_EQ(pays_off_after_calls(0.1, 0.04, 0.01), 4);
  EXPECT_EQ(pays_off_after_calls(1.0, 0.5, 0.25), 4);
  // No preprocessing left to pay: the first call already wins.
  EXPECT_EQ(pays_off_after_calls(0.0, 0.05, 0.03), 1);
}

TEST(BenchReuse, NeverPaysOffWhenTheReindexedVariantIsNotFaster) {
  EXPECT_EQ(pays_off_after_calls(1.0, 0.03, 0.05), std::nullopt);
  EXPECT_EQ(pays_off_after_calls(1.0, 0.05, 0.05), std::nullopt);
  EXPECT_EQ(pays_off_after_calls(0.0, 0.03, 0.05), std::nullopt);
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  EXPECT_EQ(pays_off_after_calls(inf, 0.05, 0.03), std::nullopt);
  EXPECT_EQ(pays_off_after_calls(nan, 0.05, 0.03), std::nullopt);
  EXPECT_EQ(pays_off_after_calls(1.0, inf, 0.03), std::nullopt);
}

ordered_json timed_record(const ordered_json& variants, double vendor_best) {
  ordered_json r;
  r["auto"] = {{"ms", 0.06}, {"variant", "coo_flat"}};
  r["variants"] = variants;
  r["vendor"] = {{"sddmm_alg_default", vendor_best}, {"best", vendor_best}, {"best_alg", "sddmm_alg_default"}};
  return r;
}

TEST(BenchReuse, BestWithoutReuseSkipsTheReindexedVariantAndWhatDidNotRun) {
  const ordered_json variants = {{"coo_flat", 0.061},       {"dense_tile", "unsupported"}, {"reindexed_tiled", 0.01},
                                 {"reindexed_tiled{\"tile_cols\":64}", 0.009}, {"row_gather", 0.05}, {"tiled_shared", "failed"}};
  const Fastest ours = best_without_reuse(timed_record(variants, 0.08));
  EXPECT_EQ(ours.name, "row_gather");
  EXPECT_EQ(ours.ms, 0.05);
  const Fastest vendor = best_without_reuse(timed_record(variants, 0.04));
  EXPECT_EQ(vendor.name, "cusparse:sddmm_alg_default");
  EXPECT_EQ(vendor.ms, 0.04);
}

TEST(BenchReuse, BestWithoutReuseWithVariantsAutoIsAutoOrTheVendor) {
  EXPECT_EQ(best_without_reuse(timed_record(ordered_json::object(), 0.08)).name, "coo_flat");
  ordered_json r = timed_record(ordered_json::object(), 0.08);
  r["auto"]["variant"] = "reindexed_tiled";  // needs reuse: not a choice without it
  EXPECT_EQ(best_without_reuse(r).name, "cusparse:sddmm_alg_default");
  r["vendor"]["best"] = nullptr;
  EXPECT_FALSE(best_without_reuse(r).found());
}

Fastest fastest(const std::string& name, double ms) {
  Fastest f;
  f.offer(name, ms);
  return f;
}

std::vector<std::string> keys_of(const ordered_json& object) {
  std::vector<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.push_back(key);
  return keys;
}

TEST(BenchReuse, RecordWhenTheReindexedVariantWins) {
  // Binary-exact times: prepare = 1.25 - 0.25 = 1.0 ms, saving 0.25 ms a call: 4 calls.
  const ordered_json r = reuse_record({1.25, 0.25, 0.3, "reindexed_tiled"}, fastest("row_gather", 0.5));
  EXPECT_EQ(keys_of(r), (std::vector<std::string>{"first_call_ms", "prepare_ms", "reindexed_ms", "without_reuse_ms",
                                                   "without_reuse_variant", "auto_reuse_ms", "auto_reuse_variant",
                                                   "pays_off_after_calls"}));
  EXPECT_EQ(r["first_call_ms"], 1.25);
  EXPECT_EQ(r["prepare_ms"], 1.0);
  EXPECT_EQ(r["reindexed_ms"], 0.25);
  EXPECT_EQ(r["without_reuse_ms"], 0.5);
  EXPECT_EQ(r["without_reuse_variant"], "row_gather");
  EXPECT_EQ(r["auto_reuse_ms"], 0.3);
  EXPECT_EQ(r["auto_reuse_variant"], "reindexed_tiled");
  EXPECT_EQ(r["pays_off_after_calls"], 4);
}

TEST(BenchReuse, RecordWhenTheReindexedVariantLoses) {
  const ordered_json r = reuse_record({2.0, 0.5, 0.25, "row_gather"}, fastest("row_gather", 0.25));
  EXPECT_EQ(r["prepare_ms"], 1.5);
  EXPECT_TRUE(r["pays_off_after_calls"].is_null());
}

TEST(BenchReuse, PrepareIsNeverNegative) {
  // A first call measured below the steady state (noise): nothing to pay back.
  const ordered_json r = reuse_record({0.2, 0.25, 0.25, "reindexed_tiled"}, fastest("coo_flat", 0.5));
  EXPECT_EQ(r["prepare_ms"], 0.0);
  EXPECT_EQ(r["pays_off_after_calls"], 1);
}

TEST(BenchReuse, RecordWithoutReindexedTimes) {
  const ordered_json r = reuse_record({std::nullopt, std::nullopt, 0.3, "coo_flat"}, fastest("coo_flat", 0.3));
  EXPECT_TRUE(r["first_call_ms"].is_null());
  EXPECT_TRUE(r["prepare_ms"].is_null());
  EXPECT_TRUE(r["reindexed_ms"].is_null());
  EXPECT_EQ(r["without_reuse_ms"], 0.3);
  EXPECT_TRUE(r["pays_off_after_calls"].is_null());
  EXPECT_TRUE(reuse_record({1.0, 0.2, 0.3, "coo_flat"}, Fastest())["without_reuse_ms"].is_null());
}

// A record with every field the table reads; `reuse` null leaves it out (SpMM, --no-reuse).
ordered_json report_record(const std::string& matrix, int k, const ordered_json& reuse) {
  ordered_json r = {{"matrix", matrix}, {"nnz", 1000}, {"k", k}, {"auto", {{"ms", 0.05}, {"variant", "coo_flat"}}},
                    {"vendor", {{"best", 0.1}}}, {"speedup", 2.0}, {"oracle", nullptr}, {"auto_over_oracle", nullptr},
                    {"check", nullptr}};
  if (!reuse.is_null()) r["reuse"] = reuse;
  return r;
}

ordered_json reuse_of(const ordered_json& prepare, const ordered_json& reindexed, const ordered_json& without,
                      const ordered_json& calls) {
  return {{"prepare_ms", prepare}, {"reindexed_ms", reindexed}, {"without_reuse_ms", without}, {"pays_off_after_calls", calls}};
}

TEST(BenchReport, ReuseSummaryPerK) {
  const std::vector<ordered_json> records = {
      // Preprocessing in calls of the variant: 1.0/0.03 = 33.3, 1.5/0.05 = 30, 0.5/0.1 = 5 -> median 30.0;
      // it wins on m1 (50 calls) and m2 (30 calls) -> median 40, most 50 (m1).
      report_record("m1", 32, reuse_of(1.0, 0.03, 0.05, 50)),
      report_record("m2", 32, reuse_of(1.5, 0.05, 0.1, 30)),
      report_record("m3", 32, reuse_of(0.5, 0.1, 0.05, nullptr)),
      report_record("m1", 64, reuse_of(nullptr, nullptr, 0.05, nullptr)),
      report_record("m1", 128, nullptr),
  };
  std::ostringstream out;
  print_report(out, records);
  const std::string text = out.str();
  EXPECT_NE(text.find("\nK=32 reuse: reindexed_tiled beats every choice without reuse on 2 of 3 matrices; preprocessing "
                      "median 30.0 of its calls; pays off after median 40 calls, most 50 (m1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("\nK=64 reuse: reindexed_tiled not measured\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("K=128 reuse"), std::string::npos) << text;
  // The reuse lines come after the per-K speedup summary.
  EXPECT_LT(text.find("K=128: 1 matrix"), text.find("K=32 reuse")) << text;
}

TEST(BenchReport, ReuseSummaryWhenTheReindexedVariantNeverWins) {
  std::ostringstream out;
  print_report(out, {report_record("m3", 32, reuse_of(0.5, 0.1, 0.05, nullptr))});
  EXPECT_NE(out.str().find("\nK=32 reuse: reindexed_tiled beats every choice without reuse on 0 of 1 matrix; "
                           "preprocessing median 5.0 of its calls\n"),
            std::string::npos)
      << out.str();
}

// Measured selection per K: auto's speedups 2.0, 1.0, 0.5 (geomean 1.00, one under 0.95x)
// next to the model's own 2.0, 0.8, 0.5 (geomean 0.93, two under); measuring took 100, 300
// and 200 calls -> median 200, most 300 (m2). Records without "model" are left out.
TEST(BenchReport, MeasuredSelectionSummaryPerK) {
  std::vector<ordered_json> records = {report_record("m1", 128, nullptr), report_record("m2", 128, nullptr),
                                       report_record("m3", 128, nullptr), report_record("m4", 128, nullptr)};
  const double speedups[] = {2.0, 1.0, 0.5}, model[] = {2.0, 0.8, 0.5}, calls[] = {100, 300, 200};
  for (int i = 0; i < 3; ++i) {
    records[i]["speedup"] = speedups[i];
    records[i]["model"] = {{"ms", 1.0}, {"variant", "csr_vector"}, {"speedup", model[i]}};
    records[i]["auto"]["measure_calls"] = calls[i];
  }
  std::ostringstream out;
  print_report(out, records);
  EXPECT_NE(out.str().find("\nK=128 measured selection on 3 matrices: speedup geomean 1.00x (1 under 0.95x), the model's own "
                           "choice 0.93x (2 under 0.95x); measuring took median 200 calls of auto, most 300 (m2)\n"),
            std::string::npos)
      << out.str();
}

// Plain launches per K: auto at 0.05 ms; plain 0.0503, 0.0502 and 0.0504 ms against a vendor
// 0.1, 0.04 and 0.2 ms: speedups 1.99, 0.80, 3.97 -> geomean 1.85, one under 0.95x; saved 0.3,
// 0.2 and 0.4 µs -> median 0.30. A record without it (an older line) is skipped.
TEST(BenchReport, PlainLaunchSummaryPerK) {
  std::vector<ordered_json> records = {report_record("m1", 64, nullptr), report_record("m2", 64, nullptr),
                                       report_record("m3", 64, nullptr), report_record("m4", 64, nullptr)};
  const double plain[] = {0.0503, 0.0502, 0.0504}, vendor[] = {0.1, 0.04, 0.2};
  for (int i = 0; i < 3; ++i) records[i]["plain_launch"] = {{"ms", plain[i]}, {"speedup", vendor[i] / plain[i]}};
  std::ostringstream out;
  print_report(out, records);
  EXPECT_NE(out.str().find("\nK=64 plain launches (early launch off): speedup geomean 1.85x (1 under 0.95x); early "
                           "launch saved median 0.30 us per call\n"),
            std::string::npos)
      << out.str();
}

// The first call on a new handle in calls of auto: 40, 8 and 20 -> median 20, most 40 (m1); a
// record without it (an older line) is skipped, and a K without any prints no line.
TEST(BenchReport, FirstCallSummaryPerK) {
  std::vector<ordered_json> records = {report_record("m1", 32, nullptr), report_record("m2", 32, nullptr),
                                       report_record("m3", 32, nullptr), report_record("m4", 32, nullptr),
                                       report_record("m1", 64, nullptr)};
  records[0]["first_call"] = {{"ms", 2.0}, {"calls", 40.0}};
  records[1]["first_call"] = {{"ms", 0.4}, {"calls", 8.0}};
  records[2]["first_call"] = {{"ms", 1.0}, {"calls", 20.0}};
  std::ostringstream out;
  print_report(out, records);
  EXPECT_NE(out.str().find("\nK=32 first call on a new handle: median 20.0 calls of auto, most 40.0 (m1)\n"), std::string::npos)
      << out.str();
  EXPECT_EQ(out.str().find("K=64 first call"), std::string::npos) << out.str();
}

ordered_json spgemm_record(const std::string& matrix, double auto_ms, const ordered_json& vendor_ms, double oracle_ms) {
  ordered_json r;
  r["op"] = "spgemm";
  r["matrix"] = matrix;
  r["nnz"] = 100;
  r["products"] = 1000;
  r["nnz_c"] = 400;
  r["auto"] = {{"variant", "row_hash"}, {"ms", auto_ms}, {"gflops", 2e-3 / auto_ms}};
  if (vendor_ms.is_number()) {
    r["vendor"] = {{"name", "cusparse:alg1"}, {"best", vendor_ms}};
    r["speedup"] = vendor_ms.get<double>() / auto_ms;
  } else {
    r["vendor"] = {{"name", "cusparse:alg1"}, {"best", nullptr}, {"failed", "out of resources"}};
    r["speedup"] = nullptr;
  }
  r["auto_over_oracle"] = auto_ms / oracle_ms;
  return r;
}

// SpGEMM records: speedups 4x, 1x and 0.5x -> geomean 1.26x, min 0.50x (m3), one under 0.95x;
// auto/oracle 1, 1.5, 1 -> median 1.00, worst 1.50 (m2); a failed vendor is named, not counted.
TEST(BenchReport, SpgemmSummary) {
  const std::vector<ordered_json> records = {spgemm_record("m1", 0.25, 1.0, 0.25), spgemm_record("m2", 1.5, 1.5, 1.0),
                                             spgemm_record("m3", 2.0, 1.0, 2.0), spgemm_record("m4", 3.0, nullptr, 3.0)};
  std::ostringstream out;
  print_report(out, records);
  EXPECT_NE(out.str().find("spgemm: 3 matrices, speedup over cuSPARSE's whole call geomean 1.26x, min 0.50x (m3), 1 under "
                           "0.95x; auto/oracle median 1.00, worst 1.50 (m2)\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("spgemm: cuSPARSE failed on 1: m4\n"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("K="), std::string::npos) << out.str();
  EXPECT_EQ(out.str().find("numeric phase"), std::string::npos) << out.str();  // no record has one
  EXPECT_EQ(out.str().find("CHECK FAILED"), std::string::npos) << out.str();  // no record has a check (bench without --check)
}

// Peak memory, auto over cuSPARSE's, on the ten records with the most products: twelve
// records with products 1..12 and ratios 0.1..1.2; the two smallest products (ratios 0.1, 0.2)
// are left out, so the median of 0.3..1.2 is 0.75 and the most 1.2 (m12). A record without
// the vendor's peak (its call failed) is not counted.
TEST(BenchReport, SpgemmPeakMemoryOnTheLargest) {
  std::vector<ordered_json> records;
  for (int i = 1; i <= 12; ++i) {
    ordered_json r = spgemm_record("m" + std::to_string(i), 1.0, 2.0, 1.0);
    r["products"] = 1000 * i;
    r["auto"]["peak_bytes"] = 100 * i;
    r["vendor"]["peak_bytes"] = 1000;
    records.push_back(r);
  }
  ordered_json failed = spgemm_record("m13", 1.0, nullptr, 1.0);
  failed["products"] = 99000;
  failed["auto"]["peak_bytes"] = 5000;
  records.push_back(failed);
  std::ostringstream out;
  print_report(out, records);
  EXPECT_NE(out.str().find("spgemm peak device memory, auto over cuSPARSE's, on the 10 with the most products: median 0.75x, "
                           "most 1.20x (m12)\n"),
            std::string::npos)
      << out.str();
}

// With --check, a failed comparison is flagged on its matrix's line, a passed one is not.
TEST(BenchReport, SpgemmCheckFailuresAreFlagged) {
  std::vector<ordered_json> records = {spgemm_record("m1", 1.0, 2.0, 1.0), spgemm_record("m2", 1.0, 2.0, 1.0)};
  records[0]["check"] = {{"ok", true}};
  records[1]["check"] = {{"ok", false}};
  std::ostringstream out;
  print_report(out, records);
  const std::string text = out.str();
  const std::size_t m1 = text.find("\nm1 "), m2 = text.find("\nm2 ");
  ASSERT_NE(m1, std::string::npos) << text;
  ASSERT_NE(m2, std::string::npos) << text;
  EXPECT_EQ(text.substr(m1, m2 - m1).find("CHECK FAILED"), std::string::npos) << text;
  EXPECT_NE(text.substr(m2, text.find('\n', m2 + 1) - m2).find("CHECK FAILED"), std::string::npos) << text;
}

// The numeric phase with the pattern reused: speedups 2x and 8x -> geomean 4.00x, min 2.00x
// (m1), and likewise the replayed and the device-time ratios; a record whose cuSPARSE reuse
// failed (null speedup) is left out.
TEST(BenchReport, SpgemmNumericPhaseSummary) {
  std::vector<ordered_json> records = {spgemm_record("m1", 1.0, 2.0, 1.0), spgemm_record("m2", 1.0, 2.0, 1.0),
                                       spgemm_record("m3", 1.0, 2.0, 1.0)};
  records[0]["numeric"] = {{"ms", 0.5}, {"vendor_ms", 1.0}, {"speedup", 2.0}, {"replay_speedup", 2.5}, {"graph_speedup", 1.5}};
  records[1]["numeric"] = {{"ms", 0.5}, {"vendor_ms", 4.0}, {"speedup", 8.0}, {"replay_speedup", 10.0}, {"graph_speedup", 6.0}};
  records[2]["numeric"] = {{"ms", 0.5}, {"vendor_ms", nullptr}, {"vendor_failed", "no"}, {"speedup", nullptr}};
  std::ostringstream out;
  print_report(out, records);
  EXPECT_NE(out.str().find("spgemm numeric phase (pattern reused): 2 matrices, speedup over cusparseSpGEMMreuse_compute "
                           "geomean 4.00x, min 2.00x (m1)\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("spgemm numeric phase replayed as a graph (Options::replay_launches): geomean 5.00x, min 2.50x (m1)\n"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("spgemm numeric phase, device time (both sides' calls replayed from a captured graph): geomean 3.00x, "
                           "min 1.50x (m1)\n"),
            std::string::npos)
      << out.str();
  // Records without replayed times (older ones) print no such lines.
  for (int i = 0; i < 2; ++i) {
    records[i]["numeric"].erase("replay_speedup");
    records[i]["numeric"].erase("graph_speedup");
  }
  std::ostringstream older;
  print_report(older, records);
  EXPECT_EQ(older.str().find("replayed as a graph"), std::string::npos) << older.str();
  EXPECT_EQ(older.str().find("device time"), std::string::npos) << older.str();
}

}  // namespace
}  // namespace sparsejit::cli::bench
