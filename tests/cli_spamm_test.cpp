// The CLI's SpAMM commands without a GPU: `explain --op spamm` on decay inputs (τ, kept share,
// bound and choice, as the library's CPU computation gives them), and the one-line errors of
// explain, run and bench, which come before any GPU work.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "sparsejit/runtime.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using test::run_cli;
using Result = test::CliResult;

std::size_t lines(const std::string& text) { return std::size_t(std::count(text.begin(), text.end(), '\n')); }

void expect_one_line_error(const std::string& args, std::initializer_list<const char*> needles) {
  SCOPED_TRACE(args);
  const Result r = run_cli(args);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(lines(r.out), 1u) << r.out;
  for (const char* needle : needles) EXPECT_NE(r.out.find(needle), std::string::npos) << "missing '" << needle << "' in: " << r.out;
  EXPECT_EQ(r.out.find("nothing to measure"), std::string::npos) << "argument errors come before the GPU: " << r.out;
}

TEST(CliSpamm, ExplainShowsTheSelectionAndTheChoice) {
  const Result r = run_cli("explain algebraic:640 --op spamm --valid-ratio 0.1 --precision fp16");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* text : {"precision fp16", "tile 64", "valid ratio", "error bound", "tau search:", "spamm: mma", "cublas"})
    EXPECT_NE(r.out.find(text), std::string::npos) << text << " missing from: " << r.out;
}

// The JSON record carries what the library computes on the CPU for the same input and options.
TEST(CliSpamm, ExplainJsonMatchesTheLibrary) {
  const Result r = run_cli("explain exponential:300:0.98 --op spamm --tau 0.5 --tile 32 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  Dense<double> a(300, 300);
  for (int32_t i = 0; i < 300; ++i)
    for (int32_t k = 0; k < 300; ++k) a.at(i, k) = std::pow(0.98, std::abs(i - k));
  SpammOptions o;
  o.tau = 0.5;
  o.tile = 32;
  SpammInfo info;
  const Decision d = explain_spamm(cast<float>(a), cast<float>(a), o, &info);
  EXPECT_EQ(j.at("features").at("valid_products").get<int64_t>(), info.valid_products);
  EXPECT_NEAR(j.at("features").at("error_bound").get<double>(), info.error_bound, 1e-9 * info.error_bound);
  EXPECT_EQ(j.at("variant").get<std::string>(), d.variant);
  EXPECT_GT(info.valid_products, 0);
  EXPECT_LT(info.valid_products, info.tile_products);
}

// --variant takes NAME[:key=value,...] for spamm as for the other ops: the forced parameters
// reach the Decision.
TEST(CliSpamm, ExplainTakesForcedParameters) {
  const Result r = run_cli("explain algebraic:1024 --op spamm --tau 0.5 --precision fp16 --variant mma:slice=64,stages=2 --json");
  ASSERT_EQ(r.status, 0) << r.out;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("variant"), "mma");
  EXPECT_EQ(j.at("params").at("slice"), 64);
  EXPECT_EQ(j.at("params").at("stages"), 2);
}

TEST(CliSpamm, BadArgumentsGiveOneLine) {
  expect_one_line_error("explain algebraic:x --op spamm", {"'x' is not a number"});
  expect_one_line_error("explain cubic:64 --op spamm", {"cubic:64", "algebraic:N"});
  expect_one_line_error("explain algebraic:64 --op spamm --tau 1 --valid-ratio 0.1", {"at most one of tau, valid_ratio and max_error"});
  expect_one_line_error("explain algebraic:64 --op spamm --precision fp8", {"'fp8'"});
  expect_one_line_error("explain algebraic:64 --op spamm --dtype f64 --precision tf32", {"precision tf32 is for f32 operands"});
  expect_one_line_error("bench --op spamm --ratios 0", {"--ratios 0"});
  expect_one_line_error("bench --op spamm --sizes 10", {"--sizes 10"});
  expect_one_line_error("bench --op spamm --paths fast", {"'fast'"});
  expect_one_line_error("bench --op spamm --decays linear", {"'linear'"});
  expect_one_line_error("bench --op spamm gen:uniform:100:4", {"takes no inputs"});
  expect_one_line_error("explain algebraic:1024 --op spamm --variant mma:slice=48", {"slice = 48"});
  expect_one_line_error("explain algebraic:1024 --op spamm --variant mma:slice", {"--variant 'mma:slice'"});
}

}  // namespace
}  // namespace sparsejit
