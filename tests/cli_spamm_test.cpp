// The CLI's SpAMM commands without a GPU: `explain --op spamm` on decay inputs (τ, kept share,
// bound and choice, as the library's CPU computation gives them), with the shipped model or
// this device's tuned one, and the one-line errors of explain, run, bench and tune, which come
// before any GPU work.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "cache/cache_store.hpp"
#include "models/model_store.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "plan/tuned.hpp"
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
  for (const char* text : {"precision fp16", "tile 64", "valid ratio", "error bound", "tau search:", "spamm: wgmma", "mma", "cublas"})
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

// Without --devices the bench runs on one GPU: its options are accepted, and here, without a
// driver, the one refusal is that there is nothing to measure on.
TEST(CliSpamm, BenchWithoutDevicesIsOneGpu) {
  const Result r = run_cli("bench --op spamm --sizes 512 --ratios 10 --precisions full --paths auto --repeat 1");
  if (r.status == 0) return;  // a GPU is present and the bench ran
  EXPECT_EQ(r.out.find("--devices"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nothing to measure"), std::string::npos) << r.out;
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
  expect_one_line_error("bench --op spamm --devices 0,x", {"'x' is not a number"});
  expect_one_line_error("bench --op spamm --devices=-1", {"--devices -1 is not a GPU ordinal"});
  expect_one_line_error("explain algebraic:1024 --op spamm --variant mma:slice=48", {"slice = 48"});
  expect_one_line_error("explain algebraic:1024 --op spamm --variant mma:slice", {"--variant 'mma:slice'"});
  expect_one_line_error("tune --op spamm --precisions full,fp8", {"'fp8'"});
  expect_one_line_error("tune --op spamm --sizes 4096,0", {"--sizes 0"});
  expect_one_line_error("tune --op spamm --sizes=-64", {"--sizes -64"});
  expect_one_line_error("tune --op spamm --sizes 70000", {"--sizes 70000"});
  expect_one_line_error("tune --op spamm --shares 0.1,0", {"--shares 0"});
  expect_one_line_error("tune --op spamm --shares 1.5", {"--shares 1.5"});
  expect_one_line_error("tune --op spamm --shares=-0.2", {"--shares -0.2"});
  expect_one_line_error("tune --op spamm --k 32", {"--k", "does not apply"});
  expect_one_line_error("tune --op spamm --from-records", {"--from-records", "does not apply"});
  expect_one_line_error("tune --op spmm --sizes 4096", {"--sizes", "is for --op spamm"});
}

// "spamm: mma {...}": the variant the Decision printed chose.
std::string chosen_variant(const std::string& out) {
  const std::size_t at = out.find("spamm: ");
  if (at == std::string::npos) return "";
  const std::size_t start = at + 7;
  return out.substr(start, out.find(' ', start) - start);
}

// A tuned SpAMM model stored for this device (as `tune --op spamm` stores it) is the one
// `explain --op spamm` prices with, named in the Decision's source; stats count it, prune keeps
// it and clear --tuning removes it, as for the other ops' tuned models.
TEST(CliSpamm, ExplainTakesTheTunedModelOfThisDevice) {
  const std::string args = "explain algebraic:640 --op spamm --valid-ratio 0.1 --precision fp16";
  const Result shipped = run_cli(args, "SPARSEJIT_CACHE_DIR=''");
  ASSERT_EQ(shipped.status, 0) << shipped.out;
  const std::string shipped_choice = chosen_variant(shipped.out);
  ASSERT_FALSE(shipped_choice.empty()) << shipped.out;
  EXPECT_NE(shipped.out.find("(model spamm-default"), std::string::npos) << shipped.out;

  // Tuned: the shipped model with its choice priced out.
  const plan::DeviceTarget target = detail::explain_target(0);
  nlohmann::json model = models::shipped_model("spamm");
  model["id"] = plan::tuned_model_id(Op::SpAMM, target.name);
  model["version"] = "1";
  model["cost"][shipped_choice]["launch"] = 1e6;
  const std::string dir = test::fresh_dir("cli_spamm_tuned").string();
  cache::CacheStore(dir).put_model({plan::tuned_model_name(Op::SpAMM), 1, ops::device_key(target), model, 0});
  const std::string env = "SPARSEJIT_CACHE_DIR='" + dir + "'";
  const Result tuned = run_cli(args, env);
  ASSERT_EQ(tuned.status, 0) << tuned.out;
  EXPECT_NE(tuned.out.find("source: model (model " + model["id"].get<std::string>() + " v1)"), std::string::npos) << tuned.out;
  EXPECT_NE(chosen_variant(tuned.out), shipped_choice) << tuned.out;

  for (const char* command : {"cache stats", "cache prune"}) ASSERT_EQ(run_cli(std::string(command) + " --dir '" + dir + "'").status, 0);
  EXPECT_NE(run_cli("cache stats --dir '" + dir + "'").out.find("models:         1"), std::string::npos);
  const Result cleared = run_cli("cache clear --tuning --dir '" + dir + "'");
  EXPECT_NE(cleared.out.find(", 1 models"), std::string::npos) << cleared.out;
  EXPECT_NE(run_cli(args, env).out.find("(model spamm-default"), std::string::npos);
}

}  // namespace
}  // namespace sparsejit
