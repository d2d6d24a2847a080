// Runs the built `sparsejit` binary as a user would and checks what it prints.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using test::run_cli;
using Result = test::CliResult;

TEST(Cli, InspectEverySharedMatrix) {
  const auto files = test::shared_matrix_files();
  if (files.empty()) GTEST_SKIP() << "no shared matrices at " << test::shared_matrices_dir();
  for (const auto& file : files) {
    const Result r = run_cli("inspect --json '" + file + "'");
    ASSERT_EQ(r.status, 0) << file << ": " << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["features"]["rows"].get<int64_t>(), 0) << file;
    EXPECT_GT(j["features"]["nnz"].get<int64_t>(), 0) << file;
    EXPECT_EQ(j["features"]["fingerprint"].get<std::string>().rfind("0x", 0), 0u) << file;
  }
}

TEST(Cli, InspectTextNamesTheFormat) {
  const auto files = test::shared_matrix_files();
  if (files.empty()) GTEST_SKIP() << "no shared matrices";
  const Result r = run_cli("inspect '" + files.front() + "'");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("coordinate"), std::string::npos) << r.out;
}

TEST(Cli, MalformedFileGivesOneClearLine) {
  const auto dir = std::filesystem::temp_directory_path() / ("sparsejit_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto bad = (dir / "bad.mtx").string();
  std::ofstream(bad) << "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n";
  const Result r = run_cli("inspect '" + bad + "'");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("bad.mtx:4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("4"), std::string::npos) << r.out;
}

TEST(Cli, MissingFileGivesOneClearLine) {
  const Result r = run_cli("inspect /nonexistent/matrix.mtx");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("/nonexistent/matrix.mtx"), std::string::npos) << r.out;
}

TEST(Cli, HelpOnEveryCommand) {
  for (const char* command : {"info", "inspect", "demo", "explain", "run", "bench", "cache", "tune"}) {
    const Result r = run_cli(std::string(command) + " --help");
    EXPECT_EQ(r.status, 0) << command;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << command << ": " << r.out;
  }
}

TEST(Cli, UnknownCommandFails) {
  const Result r = run_cli("frobnicate");
  EXPECT_NE(r.status, 0);
}

TEST(Cli, DemoGeneratesPlansCompilesAndRunsOrSaysWhyNot) {
  const Result r = run_cli("demo --matrix uniform:2000:8 -k 32");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("16000 nonzeros"), std::string::npos) << r.out;  // 2000 rows x 8
  EXPECT_NE(r.out.find("planned and compiled"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(r.out.find("nothing ran") != std::string::npos ? "no CUDA driver" : "passed"), std::string::npos) << r.out;
}

// A second process finds the kernel the first one compiled in the shared disk cache.
TEST(Cli, SecondProcessLoadsTheKernelFromTheDiskCache) {
  const auto dir = std::filesystem::temp_directory_path() / ("sparsejit_cli_cache_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const std::string env = "SPARSEJIT_CACHE_DIR='" + dir.string() + "' ";
  const std::string args = "explain gen:uniform:3000:5 --op spmm -k 64 --variant csr_rowwarp --json";
  const Result first = run_cli(args, env);
  const Result second = run_cli(args, env);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(first.status, 0) << first.out;
  ASSERT_EQ(second.status, 0) << second.out;
  const auto j1 = nlohmann::json::parse(first.out), j2 = nlohmann::json::parse(second.out);
  EXPECT_EQ(j1["kernel_origin"], "compiled");
  EXPECT_GT(j1["compile_ms"].get<double>(), 0.0);
  EXPECT_EQ(j2["kernel_origin"], "disk");
  EXPECT_EQ(j2["compile_ms"].get<double>(), 0.0);
}

TEST(Cli, ExplainNamesTheChoiceAndListsVariants) {
  const Result r = run_cli("explain gen:uniform:3000:5 --op sddmm -k 32");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("candidates:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("source: "), std::string::npos) << r.out;
  const Result list = run_cli("explain --list --op spmm");
  EXPECT_NE(list.out.find("cusparse  cuSPARSE SpMM"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("[vendor]"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("\nrs  RS-SpMM"), std::string::npos) << list.out;
  EXPECT_EQ(run_cli("explain gen:uniform:3000:5 --op gemm").status, 1);
  EXPECT_EQ(run_cli("explain gen:uniform:3000:5 --op spmm --variant nope").status, 1);
}

TEST(Cli, ExplainSpgemmSquaresTheMatrix) {
  const Result r = run_cli("explain gen:band:2000:8:20 --op spgemm --dtype f64");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("C = A·A"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spgemm: row_hash"), std::string::npos) << r.out;
  const Result forced = run_cli("explain gen:band:2000:8:20 --op spgemm --variant cusparse --json");
  ASSERT_EQ(forced.status, 0) << forced.out;
  EXPECT_NE(forced.out.find("\"source\": \"forced\""), std::string::npos) << forced.out;
  EXPECT_NE(forced.out.find("\"products\""), std::string::npos) << forced.out;
  const Result list = run_cli("explain --list --op spgemm");
  EXPECT_NE(list.out.find("row_hash  Gustavson"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("cusparse  cuSPARSE generic SpGEMM"), std::string::npos) << list.out;
  const Result rect = run_cli("explain gen:rect:30:20:3 --op spgemm");
  EXPECT_EQ(rect.status, 1);
  EXPECT_NE(rect.out.find("must be square; rect:30:20:3 is 30x20"), std::string::npos) << rect.out;
  // bench takes spgemm (C = A·A per matrix): measured where a GPU is, else one line saying
  // there is nothing to measure (after the arguments were accepted).
  const Result bench = run_cli("bench gen:uniform:100:4 --op spgemm --repeat 2 --warmup 0");
  const bool measured = bench.status == 0 && bench.out.find("spgemm: 1 matrix, speedup over cuSPARSE") != std::string::npos;
  const bool no_gpu = bench.status == 1 && bench.out.find("nothing to measure") != std::string::npos;
  EXPECT_TRUE(measured || no_gpu) << bench.out;
}

// --memory-limit: below one pass's peak row_hash takes row panels, named in the plan and on the
// memory line; a limit of 0 or one for another op is refused naming it.
TEST(Cli, ExplainSpgemmUnderAMemoryLimitTakesRowPanels) {
  const std::string matrix = "gen:rmat:20000:200000";
  const Result one_pass = run_cli("explain " + matrix + " --op spgemm --variant row_hash --json");
  ASSERT_EQ(one_pass.status, 0) << one_pass.out;
  const nlohmann::json memory = nlohmann::json::parse(one_pass.out).at("features").at("memory");
  const int64_t c_bytes = memory.at("peak_bytes").at("row_hash").get<int64_t>() - memory.at("workspace_bytes").at("row_hash").get<int64_t>();
  const int64_t limit = c_bytes + memory.at("workspace_bytes").at("row_hash").get<int64_t>() * 6 / 10;
  const Result panels = run_cli("explain " + matrix + " --op spgemm --variant row_hash --memory-limit " + std::to_string(limit));
  ASSERT_EQ(panels.status, 0) << panels.out;
  EXPECT_EQ(panels.out.find("\"panels\":1}"), std::string::npos) << panels.out;
  EXPECT_NE(panels.out.find("memory: budget " + std::to_string(limit) + " bytes"), std::string::npos) << panels.out;
  const Result zero = run_cli("explain " + matrix + " --op spgemm --memory-limit 0");
  EXPECT_EQ(zero.status, 1);
  EXPECT_NE(zero.out.find("--memory-limit 0 must be a positive number of bytes"), std::string::npos) << zero.out;
  const Result spmm = run_cli("explain " + matrix + " --op spmm --memory-limit 4096");
  EXPECT_EQ(spmm.status, 1);
  EXPECT_NE(spmm.out.find("--memory-limit applies to --op spgemm only, not spmm"), std::string::npos) << spmm.out;
  const Result tiny = run_cli("explain " + matrix + " --op spgemm --memory-limit 1000");
  EXPECT_EQ(tiny.status, 1);
  EXPECT_NE(tiny.out.find("more than the 1000 bytes memory_limit_bytes allows"), std::string::npos) << tiny.out;
}

}  // namespace
}  // namespace sparsejit
