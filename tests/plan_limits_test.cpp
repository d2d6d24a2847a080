// Issue 27: every size and forced parameter a planner takes has a stated range, and a value
// outside it is refused with an InvalidInputError naming it (CPU only). explain -k 100000000
// used to plan a 40 TB operand without a word, and a forced parameter that was a string or
// past int32 escaped as a JSON type error or wrapped around.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <limits>
#include <string>
#include <vector>

#include "models/model_check.hpp"
#include "models/model_store.hpp"
#include "plan/operand_limits.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "support/plan_support.hpp"

namespace sparsejit {
namespace {

using test::small_features;

void expect_invalid(const std::function<void()>& call, const std::vector<std::string>& parts) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one mentioning " << parts.front();
  } catch (const InvalidInputError& e) {
    for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

Decision plan_spmm(const Features& f, int32_t k, const Options& o = {}, bool transpose = false) {
  return plan::plan_spmm(f, {k, DType::F32, transpose}, {}, o);
}

Decision plan_sddmm(const Features& f, int32_t k, const Options& o = {}) {
  return plan::plan_sddmm(f, {k, DType::F32}, {}, o);
}

Options forcing(const std::string& variant, nlohmann::json params) {
  Options o;
  o.variant = variant;
  o.params = std::move(params);
  return o;
}

TEST(PlanLimits, KOutsideItsRangeIsRefusedByEveryPlanner) {
  for (const int32_t k : {0, -3, 100000000, int32_t(plan::kMaxK) + 1}) {
    const std::string named = "k = " + std::to_string(k) + " out of range [1, 16777216]";
    expect_invalid([&] { plan_spmm(small_features(), k); }, {"spmm", named});
    expect_invalid([&] { plan_sddmm(small_features(), k); }, {"sddmm", named});
  }
  EXPECT_EQ(plan_spmm(small_features(), int32_t(plan::kMaxK)).features.at("k"), plan::kMaxK);
}

// A matrix of 2e9 rows at K = 2^20 would need an 8 PB C: refused naming the operand, its
// shape and bytes. Transposed, B takes A's rows and C its columns.
TEST(PlanLimits, DenseOperandsPastATebibyteAreRefused) {
  Features tall = small_features();
  tall.basic.rows = 2000000000;
  const int32_t k = 1 << 20;
  expect_invalid([&] { plan_spmm(tall, k); }, {"dense operand C (2000000000 x 1048576 f32)", "8388608000000000 bytes"});
  expect_invalid([&] { plan_spmm(tall, k, {}, /*transpose=*/true); }, {"dense operand B (2000000000 x 1048576 f32)"});
  expect_invalid([&] { plan_sddmm(tall, k); }, {"dense operand A (2000000000 x 1048576 f32)"});
  EXPECT_NO_THROW(plan_spmm(tall, 128));  // 1 TB is the limit: 2e9 x 128 x 4 bytes is 1.02e12
}

TEST(PlanLimits, ForcedParametersOfTheWrongKindOrPastInt32AreRefusedNamingThem) {
  expect_invalid([] { plan_spmm(small_features(), 32, forcing("csr_rowwarp", {{"warps_per_block", "abc"}})); },
                 {"csr_rowwarp", "warps_per_block = \"abc\" is not an integer"});
  expect_invalid([] { plan_spmm(small_features(), 32, forcing("csr_rowwarp", {{"warps_per_block", 4294967304LL}})); },
                 {"warps_per_block = 4294967304 is not an integer in the range of int32"});
  expect_invalid([] { plan_spmm(small_features(), 32, forcing("csr_rowwarp", {{"warps_per_block", 2.5}})); },
                 {"warps_per_block = 2.5 is not an integer"});
  expect_invalid([] { plan_sddmm(small_features(), 32, forcing("coo_flat", {{"threads_per_block", true}})); },
                 {"coo_flat", "threads_per_block = true is not an integer"});
}

// The issue's examples: warps_per_block = 0 and 100000 pass no check.
TEST(PlanLimits, ForcedParametersOutsideTheirRangeAreRefused) {
  for (const int warps : {0, 33, 100000})
    expect_invalid([&] { plan_spmm(small_features(), 32, forcing("csr_rowwarp", {{"warps_per_block", warps}})); },
                   {"warps_per_block", std::to_string(warps)});
  EXPECT_EQ(plan_spmm(small_features(), 32, forcing("csr_rowwarp", {{"warps_per_block", 32}})).params.at("warps_per_block"), 32);
  // rs needs the split statistics of a real pattern.
  const Csr<double> clustered = generate::clustered(2048, 2048, 16, 0.6, 16, 2);
  const Features features = inspect(clustered.pattern());
  const plan::SplitStatsSource split = [&](int32_t w, int32_t t) { return row_segment_split(clustered.pattern(), w, t); };
  auto plan_rs = [&](nlohmann::json params) {
    return plan::plan_spmm(features, {32, DType::F32, false}, {}, forcing("rs", std::move(params)), split);
  };
  for (const int blocks : {0, 33, 100000})
    expect_invalid([&] { plan_rs({{"blocks_per_sm", blocks}}); },
                   {"rs: blocks_per_sm = " + std::to_string(blocks) + " must be in [1, 32]"});
  expect_invalid([&] { plan_rs({{"segments_per_block", 2000000}}); }, {"segments_per_block = 2000000 must be in [1, 1048576]"});
  EXPECT_EQ(plan_rs({{"blocks_per_sm", 2}}).params.at("blocks_per_sm"), 2);
  // The panel width is derived by dividing by these; a forced 0 was a SIGFPE in the planner.
  expect_invalid([&] { plan_rs({{"heavy_lanes", 0}}); }, {"heavy_lanes"});
  expect_invalid([&] { plan_rs({{"cf_v", 0}}); }, {"cf_v"});
  expect_invalid([&] { plan_rs({{"vec_width", 0}}); }, {"vec_width = 0"});
  expect_invalid([] { plan_sddmm(small_features(), 32, forcing("panel_gather", {{"band_rows", 0}})); }, {"band_rows = 0 outside"});
  expect_invalid([] { plan_sddmm(small_features(), 32, forcing("panel_gather", {{"panel_cols", 1 << 21}})); },
                 {"panel_cols = 2097152 outside [1, 1048576]"});
}

// Every integer parameter of every SpMM and SDDMM variant, forced to values past any sensible
// range: the planner returns a plan or throws a sparsejit::Error, never crashes or lets another
// exception out (rs's blocks_per_sm = 0 was a SIGFPE). Values a variant accepts must then be
// ones its own check accepts too (the plan's params pass check again in the planner).
TEST(PlanLimits, EveryIntegerParameterForcedOutOfRangeIsAPlanOrAnError) {
  const Csr<double> clustered = generate::clustered(2048, 2048, 16, 0.6, 16, 2);
  const Features features = inspect(clustered.pattern());
  const plan::SplitStatsSource split = [&](int32_t w, int32_t t) { return row_segment_split(clustered.pattern(), w, t); };
  const std::vector<int64_t> bad = {0, -1, 3, 1 << 30, std::numeric_limits<int32_t>::max()};
  int tried = 0;
  auto sweep = [&](const std::string& variant, const std::function<Decision(const Options&)>& plan) {
    nlohmann::json defaults;
    try {
      defaults = plan(forcing(variant, nlohmann::json::object())).params;
    } catch (const Error&) {
      return;  // cannot run this problem at all
    }
    for (const auto& [key, value] : defaults.items()) {
      if (!value.is_number_integer()) continue;
      for (const int64_t v : bad) {
        ++tried;
        try {
          plan(forcing(variant, {{key, v}}));
        } catch (const Error&) {
        } catch (const std::exception& e) {
          ADD_FAILURE() << variant << ": " << key << " = " << v << " escaped as " << e.what();
        }
      }
    }
  };
  for (const std::string& v : plan::spmm_variants())
    sweep(v, [&](const Options& o) { return plan::plan_spmm(features, {64, DType::F32, false}, {}, o, split); });
  for (const std::string& v : plan::sddmm_variants())
    sweep(v, [&](const Options& o) { return plan::plan_sddmm(features, {64, DType::F32}, {}, o); });
  EXPECT_GT(tried, 100);
}

// A tuned model comes back from the cache database; a damaged one used to fail every call
// ("cost coefficient '' is not a number"). model_problem names what is wrong, and the shipped
// models have none of it.
TEST(PlanLimits, ModelProblemsAreNamedAndShippedModelsHaveNone) {
  for (const std::string& name : models::shipped_model_names())
    EXPECT_EQ(models::model_problem(models::shipped_model(name), models::shipped_model(name)), std::nullopt) << name;
  const std::vector<std::pair<std::string, std::string>> damaged = {
      {"[]", "not a JSON object"},
      {R"({"id": 5, "cost": {}})", "\"id\" is not a string"},
      {R"({"tree": {"leaf": "rs"}})", "no \"cost\" section"},
      {R"({"cost": {"rs": 5}})", "entry 'rs' is not an object"},
      {R"({"cost": {"rs": {"launch": "x"}}})", "'launch' is not a number"},
      {R"({"cost": {}, "launch": 5})", "\"launch\" is not an object"},
      {R"({"cost": {}, "launch": {"tiled_shared": {"combine": 3}}})", "'combine' is not a string"},
      {R"({"cost": {}, "launch": {"coo_flat": {"threads_per_block": "many"}}})", "'threads_per_block' is not a number"},
      {R"({"cost": {}, "tree": []})", "\"tree\": decision tree node root is not an object"},
      {R"({"cost": {}, "threshold_tree": {"feature": "k"}})", "\"threshold_tree\""},
  };
  for (const auto& [text, named] : damaged) {
    const auto problem = models::model_problem(nlohmann::json::parse(text), models::shipped_model("sddmm"));
    ASSERT_TRUE(problem.has_value()) << text;
    EXPECT_NE(problem->find(named), std::string::npos) << text << ": " << *problem;
  }
}

}  // namespace
}  // namespace sparsejit
