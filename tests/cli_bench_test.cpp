// `sparsejit bench` without a GPU: its help, the one-line argument errors (which come before
// any GPU work) and the no-driver message. tests/gpu/bench_test.cpp runs it for real.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "sparsejit/device.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using test::run_cli;
using Result = test::CliResult;

std::size_t lines(const std::string& text) { return std::size_t(std::count(text.begin(), text.end(), '\n')); }

// Exit status 1 and exactly one line that contains every one of `needles`.
void expect_one_line_error(const std::string& args, std::initializer_list<const char*> needles) {
  SCOPED_TRACE("bench " + args);
  const Result r = run_cli("bench " + args);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(lines(r.out), 1u) << r.out;
  for (const char* needle : needles) EXPECT_NE(r.out.find(needle), std::string::npos) << "missing '" << needle << "' in: " << r.out;
  EXPECT_EQ(r.out.find("nothing to measure"), std::string::npos) << "argument errors come before the GPU: " << r.out;
}

TEST(CliBench, HelpListsEveryOption) {
  const Result r = run_cli("bench --help");
  EXPECT_EQ(r.status, 0);
  for (const char* option : {"Usage", "--op", "-k", "--dtype", "--repeat", "--warmup", "--variants", "--clock", "--transpose", "--check",
                             "--no-reuse", "--json-out", "--seed", "--quiet", "--time-limit", "ETA", "gen:", "uniform:N:R"})
    EXPECT_NE(r.out.find(option), std::string::npos) << option << " missing from: " << r.out;
}

TEST(CliBench, UnknownOp) { expect_one_line_error("gen:uniform:100:4 --op gemm", {"--op", "gemm"}); }

TEST(CliBench, SpgemmTakesNoSpmmOrSddmmOptions) {
  expect_one_line_error("gen:uniform:100:4 --op spgemm --transpose", {"--transpose applies to --op spmm only"});
  expect_one_line_error("gen:uniform:100:4 --op spgemm --no-reuse", {"--no-reuse applies to --op sddmm only"});
}

TEST(CliBench, KMustBePositiveIntegers) {
  expect_one_line_error("gen:uniform:100:4 -k 0", {"-k 0"});
  expect_one_line_error("gen:uniform:100:4 -k 32,-4", {"-k -4"});
  expect_one_line_error("gen:uniform:100:4 -k 32,abc", {"'abc'"});
  expect_one_line_error("gen:uniform:100:4 -k 32,", {"-k ''"});
}

TEST(CliBench, NoInputs) { expect_one_line_error("--op spmm -k 32", {"no inputs"}); }

TEST(CliBench, MissingFile) { expect_one_line_error("/nonexistent/bench_matrix.mtx", {"/nonexistent/bench_matrix.mtx"}); }

TEST(CliBench, EmptyGeneratorSpec) { expect_one_line_error("gen:", {"gen:"}); }

TEST(CliBench, OtherBadOptions) {
  expect_one_line_error("gen:uniform:100:4 --dtype f16", {"f16"});
  expect_one_line_error("gen:uniform:100:4 --repeat 0", {"--repeat 0"});
  expect_one_line_error("gen:uniform:100:4 --warmup -1", {"--warmup -1"});
  expect_one_line_error("gen:uniform:100:4 --variants some", {"some"});
  expect_one_line_error("gen:uniform:100:4 --op sddmm --transpose", {"--transpose"});
  expect_one_line_error("gen:uniform:100:4 --op spmm --no-reuse", {"--no-reuse", "sddmm"});
  expect_one_line_error("gen:uniform:100:4 --clock fast", {"clock 'fast'", "graph, events"});
  expect_one_line_error("gen:uniform:100:4 --json-out /nonexistent/dir/out.jsonl", {"/nonexistent/dir/out.jsonl"});
  expect_one_line_error("gen:uniform:100:4 --time-limit 0", {"--time-limit 0 must be a positive number of seconds"});
  expect_one_line_error("gen:uniform:100:4 --time-limit -30", {"--time-limit -30 must be a positive"});
  expect_one_line_error("gen:uniform:100:4 --time-limit nan", {"--time-limit nan must be a positive"});
  expect_one_line_error("--op spamm --time-limit 60", {"--time-limit applies to --op spmm, sddmm and spgemm"});
}

TEST(CliBench, DirectoryWithoutMatrices) {
  const auto dir = std::filesystem::temp_directory_path() / ("sparsejit_bench_empty_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "notes.txt") << "not a matrix\n";
  const std::string path = dir.string();
  expect_one_line_error("'" + path + "'", {path.c_str(), "no .mtx"});
  std::filesystem::remove_all(dir);
}

TEST(CliBench, WithoutDriverNothingToMeasure) {
  if (driver_available()) GTEST_SKIP() << "a CUDA driver and GPU exist here";
  const Result r = run_cli("bench gen:uniform:100:4 -k 8");
  EXPECT_EQ(r.status, 1);
  EXPECT_EQ(lines(r.out), 1u) << r.out;
  EXPECT_EQ(r.out.rfind("sparsejit bench: no ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(": nothing to measure\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace sparsejit
