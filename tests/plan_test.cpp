// Planners, forced choices, model evaluation and the Decision record (CPU only).
#include <gtest/gtest.h>

#include <cstdlib>

#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "models/model_store.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit {
namespace {

// A 4x6 matrix with rows of length 3, 0, 2, 1.
Features small_features() {
  Coo<double> coo;
  coo.rows = 4;
  coo.cols = 6;
  coo.row_idx = {0, 0, 0, 2, 2, 3};
  coo.col_idx = {0, 2, 5, 1, 3, 4};
  coo.values.assign(6, 1.0);
  const Csr<double> a = to_csr(coo);
  return inspect(a.pattern());
}

struct ForceEnv {
  explicit ForceEnv(const char* value) { setenv("SPARSEJIT_FORCE", value, 1); }
  ~ForceEnv() { unsetenv("SPARSEJIT_FORCE"); }
};

TEST(Force, ParsesOpVariantAndParams) {
  const ForcedChoice c = parse_force("spmm:csr_rowwarp:warps_per_block=8,flag=true,name=x,scale=0.5");
  EXPECT_EQ(c.op, Op::SpMM);
  EXPECT_EQ(c.variant, "csr_rowwarp");
  EXPECT_EQ(c.params["warps_per_block"], 8);
  EXPECT_EQ(c.params["flag"], true);
  EXPECT_EQ(c.params["name"], "x");
  EXPECT_DOUBLE_EQ(c.params["scale"].get<double>(), 0.5);
  EXPECT_TRUE(parse_force("sddmm:cusparse").params.empty());
}

TEST(Force, RejectsMalformedSpecs) {
  for (const char* bad : {"spmm", "spmm:", ":x", "gemm:x", "spmm:x:novalue", "spmm:x:=3"}) {
    EXPECT_THROW(parse_force(bad), InvalidInputError) << bad;
  }
}

TEST(Plan, ModelPicksTheCheapestEligibleCandidate) {
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, false}, {}, {});
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "spmm-default");
  ASSERT_EQ(d.candidates.size(), 2u);
  double best = 1e300;
  std::string best_name;
  for (const auto& c : d.candidates) {
    EXPECT_GT(c.predicted_ms, 0.0) << c.variant;
    if (c.predicted_ms < best) { best = c.predicted_ms; best_name = c.variant; }
  }
  EXPECT_EQ(d.variant, best_name);
  EXPECT_EQ(d.features["k"], 32);
  EXPECT_EQ(d.features["nnz"], 6);
}

TEST(Plan, TransposeRejectsRowwarp) {
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, true}, {}, {});
  EXPECT_EQ(d.variant, "cusparse");
  EXPECT_FALSE(d.candidates[0].rejected_because.empty());
  Options forced;
  forced.variant = "csr_rowwarp";
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F32, true}, {}, forced), UnsupportedError);
}

TEST(Plan, OptionsForceVariantAndParams) {
  Options o;
  o.variant = "csr_rowwarp";
  o.params = {{"warps_per_block", 8}};
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F64, false}, {}, o);
  EXPECT_EQ(d.source, DecisionSource::Forced);
  EXPECT_EQ(d.variant, "csr_rowwarp");
  EXPECT_EQ(d.params["warps_per_block"], 8);
  o.params = {{"tile", 8}};
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F64, false}, {}, o), InvalidInputError);
  o.variant = "nope";
  try {
    plan::plan_spmm(small_features(), {32, DType::F64, false}, {}, o);
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("csr_rowwarp"), std::string::npos) << e.what();
  }
}

TEST(Plan, EnvironmentForcesOnlyItsOp) {
  ForceEnv env("sddmm:cusparse");
  EXPECT_EQ(plan::plan_sddmm(small_features(), {64, DType::F32, 64, 64}, {}, {}).source, DecisionSource::Forced);
  EXPECT_EQ(plan::plan_sddmm(small_features(), {64, DType::F32, 64, 64}, {}, {}).variant, "cusparse");
  EXPECT_EQ(plan::plan_spmm(small_features(), {64, DType::F32, false}, {}, {}).source, DecisionSource::Model);
}

TEST(Plan, SddmmVectorWidthAndGroupFollowK) {
  Options o;
  o.variant = "coo_flat";
  auto params = [&](int k, DType t) { return plan::plan_sddmm(small_features(), {k, t, k, k}, {}, o).params; };
  EXPECT_EQ(params(128, DType::F32)["vector_width"], 4);
  EXPECT_EQ(params(128, DType::F32)["group_size"], 32);
  EXPECT_EQ(params(33, DType::F32)["vector_width"], 1);
  EXPECT_EQ(params(33, DType::F32)["group_size"], 32);
  EXPECT_EQ(params(1, DType::F32)["group_size"], 4);
  EXPECT_EQ(params(6, DType::F64)["vector_width"], 2);
  EXPECT_EQ(params(6, DType::F64)["group_size"], 4);
}

TEST(Plan, UnsupportedTypeRejectsEveryCandidate) {
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F16, false}, {}, {}), UnsupportedError);
}

TEST(Plan, DecisionJsonAndDescriptionNameTheChoice) {
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, false}, {}, {});
  const auto j = to_json(d);
  EXPECT_EQ(j["variant"], d.variant);
  EXPECT_EQ(j["source"], "model");
  EXPECT_EQ(j["candidates"].size(), 2u);
  const std::string text = describe(d);
  EXPECT_NE(text.find("* " + d.variant), std::string::npos) << text;
  EXPECT_NE(text.find("spmm-default"), std::string::npos) << text;
}

TEST(Models, TreeEvaluationRecordsThePath) {
  const auto tree = nlohmann::json::parse(R"({"feature": "density", "threshold": 1e-4,
      "left": {"leaf": "coo"}, "right": {"feature": "k", "threshold": 64, "left": {"leaf": "small"}, "right": {"leaf": "big"}}})");
  const auto r = models::evaluate_tree(tree, {{"density", 0.5}, {"k", 128}});
  EXPECT_EQ(r.leaf, "big");
  ASSERT_EQ(r.path.size(), 2u);
  EXPECT_EQ(r.path[0].feature, "density");
  EXPECT_FALSE(r.path[0].taken);
  EXPECT_EQ(models::evaluate_tree(tree, {{"density", 1e-5}}).leaf, "coo");
  EXPECT_THROW(models::evaluate_tree(tree, {{"density", 0.5}}), InvalidInputError);  // k missing
  EXPECT_THROW(models::validate_tree(nlohmann::json::parse(R"({"feature": "x", "left": {"leaf": 1}, "right": {"leaf": 2}})")), InvalidInputError);
}

TEST(Models, LinearCostSumsCoefficientTimesTerm) {
  EXPECT_DOUBLE_EQ(models::linear_cost({{"a", 2.0}, {"b", 0.5}}, {{"a", 3.0}, {"b", 4.0}, {"c", 100.0}}), 8.0);
  EXPECT_THROW(models::linear_cost({{"a", 2.0}}, {{"b", 1.0}}), InvalidInputError);
}

TEST(Models, EveryShippedModelParses) {
  const auto names = models::shipped_model_names();
  EXPECT_GE(names.size(), 2u);
  for (const auto& n : names) {
    const auto& m = models::shipped_model(n);
    EXPECT_TRUE(m.contains("id")) << n;
    EXPECT_TRUE(m.contains("cost")) << n;
  }
  EXPECT_THROW(models::shipped_model("nope"), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit
