// The models' neighbour correction (models/neighbour_correction.hpp): its arithmetic on
// hand-made sections, its refusals of malformed ones, the planner's prices and explain text
// with it, the shipped SpMM model's section, and the tuner leaving it out of a tuned model
// (CPU only).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "models/model_check.hpp"
#include "models/model_store.hpp"
#include "models/neighbour_correction.hpp"
#include "plan/planner.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/error.hpp"
#include "support/plan_support.hpp"
#include "tuner/train.hpp"

namespace sparsejit {
namespace {

using test::candidate;
using test::small_features;

// Two features (rows, k) compared as logs, scale 1, the 2 nearest averaged with softening 1.
// Points at log positions (0, 0), (1, 0) and (5, 0); the first two timed csr_vector.
nlohmann::json section() {
  return {{"features", {"rows", "k"}},
          {"scale", {1.0, 1.0}},
          {"count", 2},
          {"softening", 1.0},
          {"points",
           {{{"at", {0.0, 0.0}}, {"log_ratio", {{"csr_vector", std::log(2.0)}, {"dense", 0.5}}}},
            {{"at", {1.0, 0.0}}, {"log_ratio", {{"csr_vector", std::log(4.0)}}}},
            {{"at", {5.0, 0.0}}, {"log_ratio", {{"csr_vector", 3.0}, {"cusparse", -1.0}}}}}}};
}

nlohmann::json model_with(const nlohmann::json& neighbours) { return {{"cost", nlohmann::json::object()}, {"neighbours", neighbours}}; }

// At log position (0, 0) (rows 1, k 1) the two nearest csr_vector points are at distances 0
// and 1: weights 1 and 1/2, so the factor is exp((log 2 + log 4 / 2) / 1.5) = 4^(2/3).
TEST(NeighbourCorrection, WeightsTheNearestTimedPointsByDistance) {
  const nlohmann::json model = model_with(section());
  EXPECT_NEAR(models::neighbour_factor(model, "csr_vector", {{"rows", 1.0}, {"k", 1.0}}), std::pow(4.0, 2.0 / 3.0), 1e-12);
  // At (1, 0): distances 1 and 0, weights 1/2 and 1: exp((log 2 / 2 + log 4) / 1.5) = 2^(5/3).
  EXPECT_NEAR(models::neighbour_factor(model, "csr_vector", {{"rows", std::exp(1.0)}, {"k", 1.0}}), std::pow(2.0, 5.0 / 3.0), 1e-12);
}

TEST(NeighbourCorrection, UsesOnlyPointsThatTimedTheVariant) {
  const nlohmann::json model = model_with(section());
  // dense: one point (count 2 takes what there is); cusparse: the far point alone.
  EXPECT_NEAR(models::neighbour_factor(model, "dense", {{"rows", 1.0}, {"k", 1.0}}), std::exp(0.5), 1e-12);
  EXPECT_NEAR(models::neighbour_factor(model, "cusparse", {{"rows", 1.0}, {"k", 1.0}}), std::exp(-1.0), 1e-12);
  EXPECT_EQ(models::neighbour_factor(model, "rs", {{"rows", 1.0}, {"k", 1.0}}), 1.0);
  EXPECT_EQ(models::neighbour_factor({{"cost", nlohmann::json::object()}}, "csr_vector", {{"rows", 1.0}}), 1.0);
}

// With a regret weight the same two nearest points' regrets join the mean: at (0, 0) the
// weights are 1 and 1/2, csr_vector's regrets log 1.5 and 0, so the factor gains
// exp(0.5 x (log 1.5) / 1.5) = 1.5^(1/3), for the problems of the timings (4-byte values);
// an 8-byte problem gets the ratio correction alone.
TEST(NeighbourCorrection, ARegretWeightAddsTheNeighboursRegret) {
  nlohmann::json s = section();
  s["regret_weight"] = 0.5;
  s["regret_when"] = {{"value_bytes", 4}};
  s["points"][0]["log_regret"] = {{"csr_vector", std::log(1.5)}, {"dense", 0.2}};
  s["points"][1]["log_regret"] = {{"csr_vector", 0.0}};
  s["points"][2]["log_regret"] = {{"csr_vector", 0.7}, {"cusparse", 0.0}};
  ASSERT_FALSE(models::neighbours_problem(s).has_value()) << *models::neighbours_problem(s);
  const nlohmann::json at_origin = {{"rows", 1.0}, {"k", 1.0}, {"value_bytes", 4}};
  EXPECT_NEAR(models::neighbour_factor(model_with(s), "csr_vector", at_origin), std::pow(4.0, 2.0 / 3.0) * std::cbrt(1.5), 1e-12);
  EXPECT_NEAR(models::neighbour_factor(model_with(s), "dense", at_origin), std::exp(0.5 + 0.5 * 0.2), 1e-12);
  // The regret's own part of each factor, which the skip margin divides out.
  const auto corrections = models::neighbour_factors(model_with(s), at_origin);
  EXPECT_NEAR(corrections.at("csr_vector").regret, std::cbrt(1.5), 1e-12);
  EXPECT_NEAR(corrections.at("dense").regret, std::exp(0.5 * 0.2), 1e-12);
  EXPECT_NEAR(corrections.at("csr_vector").factor / corrections.at("csr_vector").regret, std::pow(4.0, 2.0 / 3.0), 1e-12);
  const nlohmann::json f64_at_origin = {{"rows", 1.0}, {"k", 1.0}, {"value_bytes", 8}};
  EXPECT_NEAR(models::neighbour_factor(model_with(s), "csr_vector", f64_at_origin), std::pow(4.0, 2.0 / 3.0), 1e-12);
  EXPECT_NEAR(models::neighbour_factor(model_with(s), "csr_vector", {{"rows", 1.0}, {"k", 1.0}}), std::pow(4.0, 2.0 / 3.0), 1e-12);
  EXPECT_EQ(models::neighbour_factors(model_with(s), f64_at_origin).at("csr_vector").regret, 1.0);
  // Weight 0: the regrets are read and change nothing.
  s["regret_weight"] = 0.0;
  EXPECT_NEAR(models::neighbour_factor(model_with(s), "csr_vector", at_origin), std::pow(4.0, 2.0 / 3.0), 1e-12);
  EXPECT_EQ(models::neighbour_factors(model_with(s), at_origin).at("csr_vector").regret, 1.0);
}

TEST(NeighbourCorrection, MalformedRegretsAreRefusedByName) {
  nlohmann::json s = section();
  s["regret_weight"] = 0.5;
  s["regret_when"] = {{"value_bytes", 4}, {"transpose_a", false}};
  for (auto& point : s["points"]) {
    point["log_regret"] = nlohmann::json::object();
    for (const auto& [variant, ratio] : point["log_ratio"].items()) point["log_regret"][variant] = 0.1;
  }
  const auto problem = [&](const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json spoilt = s;
    spoil(spoilt);
    const auto p = models::neighbours_problem(spoilt);
    return p ? *p : std::string("accepted");
  };
  EXPECT_EQ(problem([](nlohmann::json&) {}), "accepted");
  EXPECT_NE(problem([](nlohmann::json& x) { x["regret_weight"] = -1.0; }).find("\"regret_weight\" -1"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& x) { x["regret_weight"] = "half"; }).find("regret_weight"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& x) { x.erase("regret_when"); }).find("needs a \"regret_when\""), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& x) { x["regret_when"]["value_bytes"] = "f32"; }).find("regret_when's value_bytes is \"f32\""),
            std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& x) { x["points"][1].erase("log_regret"); }).find("point 1 has no \"log_regret\""),
            std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& x) { x["points"][2]["log_regret"].erase("cusparse"); }).find("log_regret has no cusparse"),
            std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& x) { x["points"][0]["log_regret"]["dense"] = -0.5; }).find("log_regret of dense is -0.5"),
            std::string::npos);
}

// A feature of 0 (an empty row, density 0) sits at the floor's log, not at minus infinity.
TEST(NeighbourCorrection, AZeroFeatureSitsAtTheFloor) {
  nlohmann::json s = section();
  s["points"] = {{{"at", {std::log(models::kFeatureFloor), 0.0}}, {"log_ratio", {{"csr_vector", 1.0}}}}};
  const double f = models::neighbour_factor(model_with(s), "csr_vector", {{"rows", 0.0}, {"k", 1.0}});
  EXPECT_NEAR(f, std::exp(1.0), 1e-12);
}

TEST(NeighbourCorrection, AMissingFeatureIsNamed) {
  try {
    models::neighbour_factor(model_with(section()), "csr_vector", {{"rows", 1.0}});
    FAIL() << "no error for a missing feature";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("'k'"), std::string::npos) << e.what();
  }
}

// Each malformed section is refused with a message naming what is wrong.
TEST(NeighbourCorrection, MalformedSectionsAreRefusedByName) {
  const auto problem = [](const std::function<void(nlohmann::json&)>& spoil) {
    nlohmann::json s = section();
    spoil(s);
    const auto p = models::neighbours_problem(s);
    return p ? *p : std::string("accepted");
  };
  EXPECT_EQ(problem([](nlohmann::json&) {}), "accepted");
  EXPECT_NE(problem([](nlohmann::json& s) { s = 3; }).find("not an object"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s.erase("count"); }).find("\"count\""), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["features"] = nlohmann::json::array(); }).find("features"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["features"][1] = 7; }).find("7"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["scale"] = {1.0}; }).find("2 numbers"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["scale"][0] = 0.0; }).find("positive"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["count"] = 0; }).find("count"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["softening"] = -1.0; }).find("-1"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["points"][1]["at"] = {1.0}; }).find("point 1"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["points"][2]["log_ratio"]["cusparse"] = "x"; }).find("cusparse"), std::string::npos);
  EXPECT_NE(problem([](nlohmann::json& s) { s["points"][0].erase("log_ratio"); }).find("point 0"), std::string::npos);
  // model_problem reads the section too, so a damaged tuned model falls back to the shipped one.
  nlohmann::json model = models::shipped_model("spmm");
  model["neighbours"]["count"] = "six";
  const auto p = models::model_problem(model, models::shipped_model("spmm"));
  ASSERT_TRUE(p.has_value());
  EXPECT_NE(p->find("count"), std::string::npos) << *p;
}

TEST(NeighbourCorrection, TheShippedSpmmModelHasAValidSection) {
  const nlohmann::json& model = models::shipped_model("spmm");
  ASSERT_TRUE(model.contains("neighbours"));
  EXPECT_FALSE(models::neighbours_problem(model["neighbours"]).has_value());
  EXPECT_GT(model["neighbours"]["points"].size(), 100u);
  EXPECT_GT(model["neighbours"].value("regret_weight", 0.0), 0.0);
  EXPECT_EQ(model["neighbours"]["regret_when"], nlohmann::json({{"transpose_a", false}, {"value_bytes", 4}}));
}

// The planner multiplies a variant's formula by its factor, records the factor on the
// candidate and names it in explain's text; a large enough factor moves the choice.
TEST(NeighbourCorrection, ThePlannerPricesWithItAndExplainSaysSo) {
  nlohmann::json model = models::shipped_model("spmm");
  model.erase("neighbours");
  const plan::SpmmProblem problem{32, DType::F32, false};
  const Decision plain = plan::plan_spmm(small_features(), problem, {}, {}, {}, {std::make_shared<const nlohmann::json>(model), {}});
  const Candidate& chosen = candidate(plain, plain.variant);
  EXPECT_EQ(chosen.correction, 1.0);

  // One point exactly where this problem lies that prices the chosen variant 100x.
  nlohmann::json features = plain.features;
  const nlohmann::json names = {"rows", "cols", "row_mean", "row_max", "k", "density"};
  nlohmann::json at = nlohmann::json::array();
  for (const auto& n : names) at.push_back(std::log(std::max(features[n.get<std::string>()].get<double>(), models::kFeatureFloor)));
  model["neighbours"] = {{"features", names},
                         {"scale", {1, 1, 1, 1, 1, 1}},
                         {"count", 3},
                         {"softening", 0.3},
                         {"points", {{{"at", at}, {"log_ratio", {{plain.variant, std::log(100.0)}}}}}}};
  ASSERT_FALSE(models::neighbours_problem(model["neighbours"]).has_value());
  const Decision corrected =
      plan::plan_spmm(small_features(), problem, {}, {}, {}, {std::make_shared<const nlohmann::json>(model), {}});
  const Candidate& priced = candidate(corrected, plain.variant);
  EXPECT_NEAR(priced.correction, 100.0, 1e-9);
  EXPECT_NEAR(priced.predicted_ms, chosen.predicted_ms * 100.0, chosen.predicted_ms * 1e-9);
  EXPECT_NE(corrected.variant, plain.variant) << describe(corrected);
  EXPECT_NE(describe(corrected).find("x 100 from timed neighbours"), std::string::npos) << describe(corrected);
  EXPECT_EQ(to_json(corrected)["candidates"][0]["correction"].is_number(), true);
}

// The tuner calibrates its own coefficients: the base's correction (how far the base's were
// off) is not carried into the tuned model.
TEST(NeighbourCorrection, ATunedModelLeavesTheBasesCorrectionOut) {
  const nlohmann::json& shipped = models::shipped_model("spmm");
  ASSERT_TRUE(shipped.contains("neighbours"));
  const tuner::TrainedModel trained = tuner::train_spmm_model({}, shipped, "Fake GPU");
  EXPECT_FALSE(trained.model.contains("neighbours"));
  EXPECT_FALSE(trained.model.contains("measure_skip_margin"));  // judged with the base's correction
  EXPECT_FALSE(models::model_problem(trained.model, shipped).has_value());
}

}  // namespace
}  // namespace sparsejit
