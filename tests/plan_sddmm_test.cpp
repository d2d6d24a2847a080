// The SDDMM planner (CPU only): its candidates, the registered variants of
// runtime/variants/sddmm/, their defaults, checks, neighbours and search space, the decision
// tree, reuse gating and a model passed in.
#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <set>

#include "formats/sddmm_dense_tiles.hpp"
#include "models/decision_tree.hpp"
#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/matrix.hpp"
#include "support/plan_support.hpp"
#include "variants/sddmm/dense_tiles.hpp"
#include "variants/sddmm/gather.hpp"

namespace sparsejit {
namespace {

using test::candidate;
using test::forcing_neighbour;
using test::small_features;

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

TEST(MeasuredSelection, SddmmNeighboursAreValidWhenForcedAndDifferFromTheirCentre) {
  const Csr<double> s = generate::from_spec("uniform:4096:410", 5);  // 512 tiles for panel_gather at K = 128
  const Features f = inspect(s.pattern());
  std::set<std::string> with_neighbours;
  for (int32_t k : {1, 32, 64, 128}) {
    const plan::SddmmProblem problem{k, DType::F32, k, k};
    for (const auto& [variant, params] : plan::sddmm_search_space(f, problem, {})) {
      for (const auto& n : plan::sddmm_neighbors(variant, params, problem, {})) {
        SCOPED_TRACE(variant + " " + params.dump() + " -> " + n.params.dump() + " k=" + std::to_string(k));
        Options forced = forcing_neighbour(variant, params, n);
        forced.reuse = Reuse::Many;  // reindexed_tiled runs only on reused patterns
        EXPECT_NO_THROW(plan::plan_sddmm(f, problem, {}, forced));
        with_neighbours.insert(variant);
      }
    }
  }
  EXPECT_EQ(with_neighbours,
            (std::set<std::string>{"coo_flat", "row_gather", "panel_gather", "dense_tile", "dense_mma", "dense_wgmma",
                                   "tiled_shared", "reindexed_tiled"}));
  EXPECT_TRUE(plan::sddmm_neighbors("cusparse", nlohmann::json::object(), {64, DType::F32, 64, 64}, {}).empty());
}

// tiled_shared's batch neighbours: double always (up to 16), half only above 1; a tuning record
// older than the parameter (no batch) is batch 1.
TEST(MeasuredSelection, TiledNeighboursDoubleTheBatchAndHalveItAboveOne) {
  const plan::SddmmProblem problem{64, DType::F32, 64, 64};
  auto batches = [&](const nlohmann::json& centre) {
    std::multiset<int64_t> found;
    for (const auto& n : plan::sddmm_neighbors("tiled_shared", centre, problem, {}))
      if (n.params.contains("batch") && n.params.at("batch") != centre.value("batch", 1)) found.insert(n.params.at("batch").get<int64_t>());
    return found;
  };
  nlohmann::json centre = {{"vector_width", 4}, {"tile_rows", 64}, {"tile_cols", 64}, {"slice", 64},
                           {"group_size", 8}, {"combine", "reduce"}, {"threads_per_block", 256}, {"batch", 4}};
  EXPECT_EQ(batches(centre), (std::multiset<int64_t>{2, 8}));
  centre["batch"] = 16;
  EXPECT_EQ(batches(centre), (std::multiset<int64_t>{8}));  // 32 is out of range
  centre.erase("batch");
  EXPECT_EQ(batches(centre), (std::multiset<int64_t>{2}));
}

// dense_tile's slice neighbours: half always, double only while the slice is shorter than K; its
// stage neighbours: one fewer while there is more than one, one more while the stages in
// flight cover less than K.
TEST(MeasuredSelection, DenseTileNeighboursHalveTheSliceAndDoubleItOnlyBelowK) {
  const nlohmann::json centre = {{"vector_width", 4}, {"tile_rows", 64}, {"tile_cols", 64}, {"micro_rows", 4},
                                 {"micro_cols", 4}, {"slice", 32}, {"stages", 2}};
  auto changed = [&](int32_t k, const char* key) {
    std::multiset<int64_t> found;
    for (const auto& n : plan::sddmm_neighbors("dense_tile", centre, {k, DType::F32, k, k}, {}))
      if (n.params.at("tile_rows") == 64 && n.params.at("tile_cols") == 64 && n.params.at(key) != centre.at(key))
        found.insert(n.params.at(key).get<int64_t>());
    return found;
  };
  EXPECT_EQ(changed(128, "slice"), (std::multiset<int64_t>{16, 64}));
  EXPECT_EQ(changed(32, "slice"), (std::multiset<int64_t>{16}));
  EXPECT_EQ(changed(128, "stages"), (std::multiset<int64_t>{1, 3}));
  EXPECT_EQ(changed(64, "stages"), (std::multiset<int64_t>{1}));  // two slices of 32 are all of K
}

// dense_tile keeps the model's 3 slices in flight by default, fewer when K has fewer; stages and
// slice are checked, naming the value, and a ring past the device's shared memory is refused.
TEST(Planner, DenseTileStagesDefaultToTheModelsCappedByTheSlicesOfK) {
  const Features f = inspect(generate::uniform(512, 512, 256, 3).pattern());
  Options o;
  o.variant = "dense_tile";
  for (const auto& [k, stages] : std::vector<std::pair<int32_t, int64_t>>{{3, 1}, {16, 1}, {32, 1}, {64, 2}, {128, 3}, {1000, 3}}) {
    const nlohmann::json params = plan::plan_sddmm(f, {k, DType::F32, k, k}, {}, o).params;
    EXPECT_EQ(params.at("stages").get<int64_t>(), stages) << k;
    EXPECT_EQ(params.at("slice").get<int64_t>() % 4, 0) << k;  // whole 16-byte runs, also for k = 3
  }
  const auto refused = [&](const nlohmann::json& params, const std::string& message) {
    o.params = params;
    try {
      plan::plan_sddmm(f, {128, DType::F32, 128, 128}, {}, o);
      ADD_FAILURE() << params.dump() << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  refused({{"stages", 5}}, "stages = 5 outside [1, 4]");
  refused({{"stages", 0}}, "stages = 0 outside [1, 4]");
  refused({{"slice", 6}, {"vector_width", 1}}, "slice = 6 is not a positive multiple of 4");
  refused({{"tile_rows", 256}, {"tile_cols", 256}, {"micro_rows", 8}, {"micro_cols", 8}, {"slice", 64}, {"stages", 4}},
          "bytes of shared memory");
}

// Planning `options.variant` forced with `forced` params throws, naming `message`.
void expect_sddmm_refused(const Features& f, const plan::SddmmProblem& problem, const plan::DeviceTarget& device,
                          Options options, const nlohmann::json& forced, const std::string& message) {
  options.params = forced;
  try {
    plan::plan_sddmm(f, problem, device, options);
    ADD_FAILURE() << forced.dump() << " accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

// dense_mma: slices of whole mma steps (8, also for K = 3), the model's stages capped by K's
// slices; f32 on sm_80+ only, and every bad value refused naming it.
TEST(Planner, DenseMmaTakesWholeMmaStepsAndOnlyF32OnTensorCores) {
  const Features f = inspect(generate::uniform(512, 512, 256, 3).pattern());
  Options o;
  o.variant = "dense_mma";
  for (const auto& [k, slice, stages] :
       std::vector<std::array<int64_t, 3>>{{1, 8, 1}, {3, 8, 1}, {32, 32, 1}, {33, 32, 2}, {128, 32, 3}}) {
    const nlohmann::json params = plan::plan_sddmm(f, {int32_t(k), DType::F32, k, k}, {}, o).params;
    EXPECT_EQ(params.at("slice").get<int64_t>(), slice) << k;
    EXPECT_EQ(params.at("stages").get<int64_t>(), stages) << k;
    EXPECT_EQ(variants::sddmm::dense_mma_threads(params), 128) << k;  // 2 x 2 warps of 32 x 32
    // 128 staged rows per stage of slice + 4 floats.
    EXPECT_EQ(variants::sddmm::dense_tile_shared_bytes(params, DType::F32), stages * 128 * (slice + 4) * 4) << k;
  }
  const auto refused = [&](const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& forced,
                           const std::string& message) { expect_sddmm_refused(f, problem, device, o, forced, message); };
  const plan::SddmmProblem k128{128, DType::F32, 128, 128};
  refused({128, DType::F64, 128, 128}, {}, {}, "f64: the 3xTF32 split serves f32 only");
  plan::DeviceTarget turing;
  turing.sm = 75;
  refused(k128, turing, {}, "the device is sm_75");
  refused(k128, {}, {{"warp_rows", 24}}, "warp_rows = 24 is not 16, 32, 48 or 64");
  refused(k128, {}, {{"warp_cols", 12}}, "warp_cols = 12 is not a multiple of 8");
  refused(k128, {}, {{"tile_rows", 48}}, "tile_rows = 48 is not a multiple of warp_rows = 32");
  refused(k128, {}, {{"slice", 12}}, "slice = 12 is not a positive multiple of 8 (one mma step)");
  refused(k128, {}, {{"stages", 5}}, "stages = 5 outside [1, 4]");
  refused(k128, {}, {{"tile_rows", 256}, {"tile_cols", 256}, {"warp_rows", 16}, {"warp_cols", 16}}, "past 1024");
  refused(k128, {}, {{"tile_rows", 256}, {"tile_cols", 256}, {"warp_rows", 64}, {"warp_cols", 64}, {"slice", 64}, {"stages", 4}},
          "bytes of shared memory");
  // Measured selection also tries half the tile with half the warp rows (the same 4 warps).
  Options mma_defaults;
  mma_defaults.variant = "dense_mma";
  const nlohmann::json centre = plan::plan_sddmm(f, k128, {}, mma_defaults).params;
  bool halved = false;
  for (const auto& n : plan::sddmm_neighbors("dense_mma", centre, k128, {}))
    halved = halved || (n.params["tile_rows"] == 32 && n.params["warp_rows"] == 16 && variants::sddmm::dense_mma_threads(n.params) == 128);
  EXPECT_TRUE(halved);
  // Unforced, the variant is a candidate for f32 only, with the reason shown otherwise.
  const Decision f64 = plan::plan_sddmm(f, {128, DType::F64, 128, 128}, {}, {});
  for (const auto& c : f64.candidates) {
    if (c.variant == "dense_mma") {
      EXPECT_NE(c.rejected_because.find("f32 only"), std::string::npos);
    }
  }
}

// dense_wgmma: on sm_90 only (sm_90a binaries), f32 only; its tile width is the one whose
// busiest block slot has the least work (512 x 4608 at 10%: 96 columns give 8 x 48 = 384 tiles,
// one round of three blocks on each of 132 SMs, where 144 gives two rounds of two and 64 two
// rounds of four; 4096 x 4096 at 50%: every width takes eight rounds, the narrowest the least
// work), its cost terms count that work, and every bad value is refused naming it.
TEST(Planner, DenseWgmmaRunsOnSm90OnlyAndPicksTheTileWidthByBlockSlots) {
  const Features f = inspect(generate::uniform(512, 4608, 461, 4).pattern());  // 10%
  const plan::SddmmProblem k128{128, DType::F32, 128, 128};
  Options o;
  o.variant = "dense_wgmma";
  const Decision d = plan::plan_sddmm(f, k128, {}, o);
  const nlohmann::json& params = d.params;
  EXPECT_EQ(params.at("tile_cols"), 96);
  EXPECT_EQ(params.at("tile_rows"), 64);
  EXPECT_EQ(params.at("vector_width"), 4);
  EXPECT_EQ(variants::sddmm::dense_wgmma_threads(params), 128);
  // Two stages of (64 + 96) rows of 128 bytes, two slices of small_b, 1 KB of alignment.
  EXPECT_EQ(variants::sddmm::dense_wgmma_shared_bytes(params), 2 * 160 * 128 + 2 * 96 * 128 + 1024);
  // One round of (96 + 48) columns, four K slices of 32.
  const auto terms = [](const Decision& decision) {
    for (const auto& c : decision.candidates)
      if (c.variant == "dense_wgmma") return c.terms;
    return nlohmann::json();
  };
  EXPECT_DOUBLE_EQ(terms(d).at("slot_work").get<double>(), 144.0);
  EXPECT_DOUBLE_EQ(terms(d).at("slot_slice_work").get<double>(), 4 * 144.0);
  const Features half = inspect(generate::uniform(4096, 4096, 2048, 5).pattern());
  EXPECT_EQ(plan::plan_sddmm(half, {32, DType::F32, 32, 32}, {}, o).params.at("tile_cols"), 64);
  EXPECT_EQ(plan::plan_sddmm(f, {33, DType::F32, 33, 33}, {}, o).params.at("vector_width"), 1);
  const auto refused = [&](const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& forced,
                           const std::string& message) { expect_sddmm_refused(f, problem, device, o, forced, message); };
  plan::DeviceTarget ampere;
  ampere.sm = 80;
  refused(k128, ampere, {}, "the device is sm_80");
  refused({128, DType::F64, 128, 128}, {}, {}, "f64: the 3xTF32 split serves f32 only");
  refused(k128, {}, {{"tile_cols", 100}}, "tile_cols = 100 is not one of 64, 96, 128, 144, 192, 256");
  refused(k128, {}, {{"tile_rows", 96}}, "tile_rows = 96 is neither 64 nor 128");
  refused(k128, {}, {{"stages", 1}}, "stages = 1 outside [2, 4]");
  refused(k128, {}, {{"vector_width", 2}}, "vector_width = 2");
  refused(k128, {}, {{"tile_rows", 128}, {"tile_cols", 256}, {"stages", 4}}, "bytes of shared memory");
  // Unforced it is a candidate on sm_90 and not on sm_80, the reason shown.
  const auto reason = [&](const plan::DeviceTarget& device) {
    for (const auto& c : plan::plan_sddmm(f, k128, device, {}).candidates)
      if (c.variant == "dense_wgmma") return c.rejected_because;
    return std::string("absent");
  };
  EXPECT_EQ(reason({}), "");
  EXPECT_NE(reason(ampere).find("needs wgmma"), std::string::npos) << reason(ampere);
}

// ---------------------------------------------------------------------------------------
// SDDMM planner: the decision tree, reuse gating, model override, forced parameters and the
// tuner's search space.

Features with_density(double density) {
  Features f = small_features();
  f.basic.density = density;
  return f;
}

const plan::SddmmProblem kSddmm32{32, DType::F32, 32, 32};

// The shipped model has no variant tree: the choice is the cheapest eligible candidate.
const Candidate& cheapest_eligible(const Decision& d) {
  const Candidate* best = nullptr;
  for (const auto& c : d.candidates)
    if (c.rejected_because.empty() && (best == nullptr || c.predicted_ms < best->predicted_ms)) best = &c;
  return *best;
}

TEST(SddmmPlan, TheShippedModelTakesTheCheapestCandidate) {
  const Decision d = plan::plan_sddmm(with_density(3e-6), kSddmm32, {}, {});
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "sddmm-default");
  EXPECT_FALSE(models::shipped_model("sddmm").contains("tree"));
  EXPECT_TRUE(d.path.empty());
  EXPECT_EQ(d.variant, cheapest_eligible(d).variant);
  // six nonzeros: one of the kernels that launch once over the nonzeros, not a dense one
  EXPECT_TRUE(d.variant == "coo_flat" || d.variant == "row_gather") << d.variant;
  EXPECT_EQ(d.features["pattern_reused"], 0);
  ASSERT_EQ(d.candidates.size(), 9u);
  for (const auto& c : d.candidates) {
    if (c.rejected_because.empty()) {
      EXPECT_GT(c.predicted_ms, 0.0) << c.variant;
    }
  }
  EXPECT_TRUE(d.features.contains("tile_fill"));
}

// The dense-tile formats are refused past 1 GiB, each for its own default tile: 1.5 M non-empty
// tiles take about 560 MiB at dense_tile's 32 x 64 and 1.1 GiB at dense_mma's 64 x 64.
TEST(SddmmPlan, DenseFormatsPastAGibibyteAreRefusedPerTileShape) {
  plan::SddmmProblem problem{128, DType::F32, 128, 128};
  problem.tile_count = [](int32_t, int32_t) { return int64_t(1500000); };
  const Decision d = plan::plan_sddmm(with_density(1e-4), problem, {}, {});
  std::map<std::string, std::string> reasons;
  for (const auto& c : d.candidates) reasons[c.variant] = c.rejected_because;
  EXPECT_EQ(reasons.at("dense_tile"), "");
  EXPECT_NE(reasons.at("dense_mma").find("its tile format would take about 1110 MiB"), std::string::npos)
      << reasons.at("dense_mma");
}

TEST(SddmmPlan, ReindexedOnlyForReusedPatterns) {
  const Decision once = plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, {});
  EXPECT_NE(candidate(once, "reindexed_tiled").rejected_because.find("Reuse::Many"), std::string::npos);
  Options forced;
  forced.variant = "reindexed_tiled";
  EXPECT_THROW(plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, forced), UnsupportedError);

  Options many;
  many.reuse = Reuse::Many;
  const Decision reused = plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, many);
  EXPECT_TRUE(candidate(reused, "reindexed_tiled").rejected_because.empty());
  EXPECT_EQ(reused.features["pattern_reused"], 1);

  plan::SddmmProblem seen = kSddmm32;
  seen.pattern_seen = true;
  EXPECT_TRUE(candidate(plan::plan_sddmm(with_density(5e-3), seen, {}, {}), "reindexed_tiled").rejected_because.empty());
  forced.reuse = Reuse::Many;
  EXPECT_EQ(plan::plan_sddmm(with_density(5e-3), kSddmm32, {}, forced).source, DecisionSource::Forced);
}

int64_t round_up_to(int64_t x, int64_t step) { return (x + step - 1) / step * step; }
int64_t pow2_not_below(int64_t x) {
  int64_t p = 1;
  while (p < x) p *= 2;
  return p;
}

TEST(SddmmPlan, TiledDefaultsFitKAndDensity) {
  Options o;
  o.variant = "tiled_shared";
  const nlohmann::json& launch = models::shipped_model("sddmm")["launch"]["tiled_shared"];
  const int64_t group = launch["group_size"].get<int64_t>(), slice = launch["slice"].get<int64_t>();
  const auto k3 = plan::plan_sddmm(with_density(0.1), {3, DType::F32, 3, 3}, {}, o).params;
  EXPECT_EQ(k3["vector_width"], 1);
  EXPECT_EQ(k3["group_size"], std::min<int64_t>(group, 4));  // no more lanes than the 3 values need
  // K = 3 rounded up to one step of the group, not a full slice.
  EXPECT_EQ(k3["slice"], round_up_to(3, std::min<int64_t>(group, 4)));
  const auto k128 = plan::plan_sddmm(with_density(0.1), {128, DType::F32, 128, 128}, {}, o).params;
  EXPECT_EQ(k128["vector_width"], 4);
  EXPECT_EQ(k128["slice"], round_up_to(std::min<int64_t>(slice, 128), 4 * std::min<int64_t>(group, 32)));
  // Sparser matrices get taller panels, so a tile still holds several nonzeros per staged row.
  Features sparse_f = with_density(1e-3), dense_f = with_density(0.1);
  sparse_f.basic.rows = dense_f.basic.rows = 1 << 20;
  const auto sparse = plan::plan_sddmm(sparse_f, kSddmm32, {}, o).params;
  const auto dense = plan::plan_sddmm(dense_f, kSddmm32, {}, o).params;
  EXPECT_GT(sparse["tile_rows"].get<int>(), dense["tile_rows"].get<int>());
  // tile_nnz_target nonzeros / (0.1 * tile_cols columns) rows, the next power of two.
  EXPECT_EQ(dense["tile_rows"], pow2_not_below(int64_t(std::ceil(launch["tile_nnz_target"].get<double>() /
                                                                  (0.1 * launch["tile_cols"].get<double>())))));
  // Never taller than the matrix (small_features has 4 rows).
  EXPECT_EQ(plan::plan_sddmm(with_density(1e-3), kSddmm32, {}, o).params["tile_rows"], 4);
}

TEST(SddmmPlan, ForcedParamsAreChecked) {
  Options o;
  o.variant = "tiled_shared";
  o.params = {{"slice", 30}};  // not a multiple of vector_width 4 * group_size 4
  try {
    plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o);
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("slice = 30"), std::string::npos) << e.what();
  }
  o.params = {{"combine", "sum"}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o), InvalidInputError);
  o.params = {{"batch", 3}};
  try {
    plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o);
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("batch = 3 is not a power of two in [1, 16]"), std::string::npos) << e.what();
  }
  o.params = {{"tile_cols", 4096}, {"slice", 256}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o), UnsupportedError);  // shared memory
  o.variant = "coo_flat";
  o.params = {{"nnz_per_group", 8}, {"group_size", 4}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), kSddmm32, {}, o), InvalidInputError);
  o.params = {{"vector_width", 4}};
  EXPECT_THROW(plan::plan_sddmm(with_density(0.1), {33, DType::F32, 33, 33}, {}, o), InvalidInputError);
}

TEST(SddmmPlan, AModelPassedInWithATreeDecidesByItAndOverridesTheLaunchShapes) {
  nlohmann::json model = models::shipped_model("sddmm");
  const auto with_model = [&] { return plan::PlanSources{std::make_shared<const nlohmann::json>(model), {}}; };
  model["id"] = "sddmm-tuned";
  model["tree"] = nlohmann::json::parse(R"({"feature": "k", "threshold": 64, "left": {"leaf": "cusparse"}, "right": {"leaf": "tiled_shared"}})");
  model["launch"] = {{"tiled_shared", {{"tile_cols", 32}}}};  // the rest falls back to the shipped launch
  const Decision small_k = plan::plan_sddmm(with_density(1e-6), kSddmm32, {}, {}, with_model());
  EXPECT_EQ(small_k.variant, "cusparse");
  EXPECT_EQ(small_k.model_id, "sddmm-tuned");
  ASSERT_EQ(small_k.path.size(), 1u);
  EXPECT_EQ(small_k.path[0].feature, "k");
  const Decision big_k = plan::plan_sddmm(with_density(1e-6), {128, DType::F32, 128, 128}, {}, {}, with_model());
  EXPECT_EQ(big_k.variant, "tiled_shared");
  EXPECT_EQ(big_k.params["tile_cols"], 32);
  EXPECT_EQ(big_k.params["threads_per_block"], 256);
  // A leaf that cannot run the problem falls back to the cheapest eligible candidate.
  model["tree"] = {{"leaf", "reindexed_tiled"}};
  const Decision fallback = plan::plan_sddmm(with_density(0.1), kSddmm32, {}, {}, with_model());
  EXPECT_NE(fallback.variant, "reindexed_tiled");
  double cheapest = 1e300;
  for (const auto& c : fallback.candidates)
    if (c.rejected_because.empty()) cheapest = std::min(cheapest, c.predicted_ms);
  EXPECT_DOUBLE_EQ(candidate(fallback, fallback.variant).predicted_ms, cheapest);
}

TEST(SddmmPlan, SearchSpaceEntriesAreValidAndCoverTheKnobs) {
  for (const plan::SddmmProblem& p : {kSddmm32, plan::SddmmProblem{3, DType::F64, 3, 3}, plan::SddmmProblem{128, DType::F32, 128, 128}}) {
    const auto space = plan::sddmm_search_space(with_density(0.01), p, {});
    std::map<std::string, bool> variants, combines;
    std::map<int, bool> groups;
    for (const auto& [variant, params] : space) {
      variants[variant] = true;
      if (params.contains("combine")) combines[params["combine"].get<std::string>()] = true;
      if (params.contains("group_size")) groups[params["group_size"].get<int>()] = true;
      Options o;
      o.variant = variant;
      o.params = params;
      o.reuse = Reuse::Many;
      const Decision d = plan::plan_sddmm(with_density(0.01), p, {}, o);
      EXPECT_EQ(d.params, variant == "cusparse" ? nlohmann::json::object() : params) << variant << " " << params.dump();
    }
    // dense_tile only where tiles are fuller (below), panel_gather only on many long chunks
    // (SddmmNeighboursAreValidWhenForcedAndDifferFromTheirCentre).
    EXPECT_EQ(variants.size(), 5u) << p.k;
    for (const char* v : {"coo_flat", "row_gather", "tiled_shared", "reindexed_tiled", "cusparse"}) EXPECT_TRUE(variants.count(v)) << v;
    EXPECT_EQ(combines.size(), 2u);
    EXPECT_GE(groups.size(), 2u);
  }
  EXPECT_TRUE(plan::sddmm_search_space(with_density(0.01), {32, DType::F16, 32, 32}, {}).empty());
}

// ---------------------------------------------------------------------------------------
// row_gather and dense_tile: the tree on real patterns, tile_fill, defaults and checks.

Features features_of(const Csr<double>& m) { return inspect(m.pattern()); }

TEST(SddmmPlan, TheCostsDecideOnRealPatternsAndDenseTileTakesTheShippedShape) {
  const Features half = features_of(generate::uniform(1024, 1024, 512, 1));  // 50%
  for (int32_t k : {32, 128}) {
    const Decision d = plan::plan_sddmm(half, {k, DType::F32, k, k}, {}, {});
    EXPECT_NEAR(d.features["tile_fill"].get<double>(), 0.5, 0.01);
    EXPECT_EQ(d.variant, cheapest_eligible(d).variant) << k;
    // Half the products are kept: a dense tensor-core kernel, not a gather per nonzero.
    EXPECT_TRUE(d.variant == "dense_tile" || d.variant == "dense_mma" || d.variant == "dense_wgmma") << k << " " << d.variant;
  }
  Options o;
  o.variant = "dense_tile";
  const Decision dense = plan::plan_sddmm(half, kSddmm32, {}, o);
  const nlohmann::json& launch = models::shipped_model("sddmm")["launch"]["dense_tile"];
  EXPECT_EQ(dense.params["tile_rows"], launch["tile_rows"]);
  EXPECT_EQ(dense.params["slice"], launch["slice"]);
  EXPECT_EQ(dense.params["vector_width"], 4);

  // 1e-5: 300000 x 300000 with 3 nonzeros per row.
  const Features sparse = features_of(generate::uniform(300000, 300000, 3, 2));
  EXPECT_NEAR(sparse.basic.density, 1e-5, 1e-6);
  const Decision gather = plan::plan_sddmm(sparse, kSddmm32, {}, {});
  EXPECT_TRUE(gather.variant == "row_gather" || gather.variant == "coo_flat") << gather.variant;
  EXPECT_LT(gather.features["tile_fill"].get<double>(), 0.01);
  // 1% with 40 per row (160000 nonzeros): row_gather, the kernel for long rows.
  EXPECT_EQ(plan::plan_sddmm(features_of(generate::uniform(4000, 4000, 40, 3)), kSddmm32, {}, {}).variant, "row_gather");
}

TEST(SddmmPlan, TileFillCountsTilesExactlyWhenThePatternIsAtHand) {
  // A block diagonal of dense 64 x 64 blocks: each non-empty tile is full, though the density is low.
  Coo<double> coo;
  coo.rows = coo.cols = 64 * 40;
  for (int32_t block = 0; block < 40; ++block)
    for (int32_t r = 0; r < 64; ++r)
      for (int32_t c = 0; c < 64; ++c) {
        coo.row_idx.push_back(block * 64 + r);
        coo.col_idx.push_back(block * 64 + c);
        coo.values.push_back(1.0);
      }
  const Csr<double> blocks = to_csr(coo);
  const Features f = features_of(blocks);
  EXPECT_LT(f.basic.density, 0.03);
  // The estimate from the 8 x 8 bitmap tiles spreads them over the grid: far too many tiles.
  EXPECT_LT(plan::sddmm_tile_fill(f, kSddmm32, 64, 64), 0.08);
  EXPECT_NE(plan::plan_sddmm(f, kSddmm32, {}, {}).variant, "dense_tile");
  // The exact count (what the executor and explain pass) sees the 40 full tiles.
  plan::SddmmProblem counted = kSddmm32;
  counted.tile_count = [&](int32_t ti, int32_t tj) { return formats::count_tiles(blocks.pattern(), ti, tj); };
  EXPECT_DOUBLE_EQ(plan::sddmm_tile_fill(f, counted, 64, 64), 1.0);
  // The dense kernels are priced at the 40 tiles they compute, below the estimate's price.
  const Decision estimated = plan::plan_sddmm(f, kSddmm32, {}, {});
  const Decision exact = plan::plan_sddmm(f, counted, {}, {});
  for (const char* dense : {"dense_tile", "dense_mma"})
    EXPECT_LT(candidate(exact, dense).predicted_ms, candidate(estimated, dense).predicted_ms) << dense;
  // A uniform pattern: the estimate is close to the count.
  const Csr<double> uniform = generate::uniform(2048, 2048, 300, 4);
  plan::SddmmProblem uniform_counted = kSddmm32;
  uniform_counted.tile_count = [&](int32_t ti, int32_t tj) { return formats::count_tiles(uniform.pattern(), ti, tj); };
  EXPECT_NEAR(plan::sddmm_tile_fill(features_of(uniform), kSddmm32, 64, 64),
              plan::sddmm_tile_fill(features_of(uniform), uniform_counted, 64, 64), 0.005);
}

TEST(SddmmPlan, RowGatherDefaultsCoverKWithBoundedRegisters) {
  Options o;
  o.variant = "row_gather";
  auto params = [&](int k, DType t, int64_t ld) { return plan::plan_sddmm(small_features(), {k, t, ld, ld}, {}, o).params; };
  EXPECT_EQ(params(32, DType::F32, 32)["group_size"], 8);   // 8 float4 cover K = 32
  EXPECT_EQ(params(32, DType::F32, 32)["unroll"], 8);
  EXPECT_EQ(params(1, DType::F32, 1)["group_size"], 4);
  EXPECT_EQ(params(1, DType::F32, 1)["vector_width"], 1);
  const auto k512 = params(512, DType::F32, 512);
  EXPECT_EQ(k512["group_size"], 32);
  EXPECT_EQ(variants::sddmm::row_lane_vectors(k512, 512), 4);
  EXPECT_EQ(k512["unroll"], 4);  // 4 vectors x 4 nonzeros in flight
  const auto f64_odd = params(512, DType::F64, 513);  // odd ld: scalar loads, 16 values per lane
  EXPECT_EQ(f64_odd["vector_width"], 1);
  EXPECT_EQ(variants::sddmm::row_lane_vectors(f64_odd, 512), 16);
  EXPECT_EQ(f64_odd["unroll"], 1);
  // K past 16 vectors per lane of 32 lanes: declined with the reason, not planned.
  const Decision big = plan::plan_sddmm(small_features(), {1000, DType::F32, 1001, 1001}, {}, {});
  EXPECT_NE(candidate(big, "row_gather").rejected_because.find("k = 1000"), std::string::npos);
}

// panel_gather: a panel's B rows fill about 256 KB of L1 (wider panels at smaller K), the lane
// group holds A's row in at most 16 vectors, and the cost prices L2 per tile and L1 per
// product: on a 10% 4096 x 4096 pattern at K = 128 (the panel's rows reused by ~6 rows of a
// band) below row_gather's. It is proposed only with 1.5 tiles per SM and 8 nonzeros per row
// in a panel: at K = 64 (4 panels of 1024: 256 tiles), not at K = 32 (2 panels of 2048), nor
// for the 512-row layers, nor at 1%; forced it runs there all the same.
TEST(SddmmPlan, PanelGatherPanelsFitL1AndIsProposedOnlyForManyLongChunks) {
  Options o;
  o.variant = "panel_gather";
  const Features dense10 = features_of(generate::uniform(4096, 4096, 410, 1));
  const Decision k128 = plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, o);
  EXPECT_EQ(k128.params["panel_cols"], 512);  // 512 rows of 512 bytes
  EXPECT_EQ(k128.params["band_rows"], 64);
  EXPECT_EQ(k128.params["group_size"], 8);
  EXPECT_EQ(variants::sddmm::row_lane_vectors(k128.params, 128), 4);
  EXPECT_EQ(k128.params["unroll"], 8);  // 32 B vectors in flight
  EXPECT_EQ(plan::plan_sddmm(dense10, {32, DType::F32, 32, 32}, {}, o).params["panel_cols"], 2048);
  const auto f64 = plan::plan_sddmm(dense10, {512, DType::F64, 512, 512}, {}, o).params;
  EXPECT_EQ(f64["panel_cols"], 64);
  EXPECT_EQ(f64["group_size"], 16);  // 8 lanes would need 32 double2 each
  const Decision proposed = plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, {});
  EXPECT_TRUE(candidate(proposed, "panel_gather").rejected_because.empty());
  EXPECT_LT(candidate(proposed, "panel_gather").predicted_ms, candidate(proposed, "row_gather").predicted_ms);
  // Declined: shown as such, never the choice nor timed by measured selection; forced, it runs.
  const auto declined = [&](const Features& f, int32_t k) {
    const Decision d = plan::plan_sddmm(f, {k, DType::F32, k, k}, {}, {});
    const std::string why = candidate(d, "panel_gather").rejected_because;
    EXPECT_EQ(why.rfind("runs only when forced: ", 0), 0u) << why;
    EXPECT_NE(d.variant, "panel_gather");
    for (const auto& t : plan::measured_shortlist(d, "cusparse")) EXPECT_NE(t.variant, "panel_gather");
    EXPECT_NO_THROW(plan::plan_sddmm(f, {k, DType::F32, k, k}, {}, o));
    return why;
  };
  EXPECT_NE(declined(dense10, 32).find("128 tiles of 64 x 2048, too few for 132 SMs"), std::string::npos);
  EXPECT_TRUE(candidate(plan::plan_sddmm(dense10, {64, DType::F32, 64, 64}, {}, {}), "panel_gather").rejected_because.empty());
  const Features layer = features_of(generate::uniform(512, 4608, 461, 2));
  EXPECT_NE(declined(layer, 128).find("72 tiles"), std::string::npos);
  const Features one_percent = features_of(generate::uniform(4096, 4096, 41, 3));
  const std::string one_percent_why = declined(one_percent, 128);
  EXPECT_NE(one_percent_why.find("about 5.2 nonzeros per row in a panel of 512 columns"), std::string::npos) << one_percent_why;
  // A band's rows lie in one or two panels: by the exact count of its tiles (what a call and
  // explain pass) it has about 22 nonzeros a row in a panel and panel_gather is proposed,
  // priced by the tiles it has; estimated from the features alone (8 x 8 tiles spread
  // uniformly) it seems 1.6 a row and is declined.
  const Csr<double> band = generate::from_spec("band:20000:24:64", 6);
  plan::SddmmProblem counted{64, DType::F32, 64, 64};
  counted.tile_count = [&](int32_t ti, int32_t tj) { return formats::count_tiles(band.pattern(), ti, tj); };
  const Features band_features = features_of(band);
  const Candidate by_count = candidate(plan::plan_sddmm(band_features, counted, {}, {}), "panel_gather");
  EXPECT_TRUE(by_count.rejected_because.empty()) << by_count.rejected_because;
  EXPECT_EQ(by_count.terms.at("tiles").get<double>(), double(formats::count_tiles(band.pattern(), 64, 1024)));
  const std::string spread_why = declined(band_features, 64);
  EXPECT_NE(spread_why.find("about 1.6 nonzeros per row in a panel of 1024 columns"), std::string::npos) << spread_why;
  o.params = {{"panel_cols", 0}};
  EXPECT_THROW(plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, o), InvalidInputError);
  o.params = {{"band_rows", -2}};
  try {
    plan::plan_sddmm(dense10, {128, DType::F32, 128, 128}, {}, o);
    ADD_FAILURE() << "band_rows = -2 was accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("band_rows = -2"), std::string::npos) << e.what();
  }
  o.params = {{"group_size", 4}};  // K = 512 f32 in 4 lanes: 32 float4 each
  EXPECT_THROW(plan::plan_sddmm(dense10, {512, DType::F32, 512, 512}, {}, o), InvalidInputError);
}

TEST(SddmmPlan, RowGatherAndDenseTileForcedParamsAreChecked) {
  Options o;
  o.variant = "row_gather";
  auto message = [&](const plan::SddmmProblem& p) -> std::string {
    try {
      plan::plan_sddmm(with_density(0.1), p, {}, o);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  };
  o.params = {{"unroll", 16}, {"group_size", 8}};
  EXPECT_NE(message(kSddmm32).find("unroll = 16"), std::string::npos);
  o.params = {{"max_nnz", 0}};
  EXPECT_NE(message(kSddmm32).find("max_nnz = 0"), std::string::npos);
  o.params = {{"group_size", 4}};
  EXPECT_NE(message({512, DType::F32, 513, 513}).find("needs 128 A vectors"), std::string::npos);
  o.variant = "dense_tile";
  o.params = {{"micro_rows", 2}};
  EXPECT_NE(message(kSddmm32).find("micro-tile edge 2"), std::string::npos);
  o.params = {{"tile_rows", 62}};
  EXPECT_NE(message(kSddmm32).find("tile_rows = 62"), std::string::npos);
  o.params = {{"tile_rows", 60}, {"tile_cols", 64}};  // whole micro-tiles, but 15 x 16 threads are no whole warps
  EXPECT_NE(message(kSddmm32).find("240 threads"), std::string::npos);
  o.params = {{"tile_rows", 256}, {"tile_cols", 256}, {"micro_rows", 4}, {"micro_cols", 4}};
  EXPECT_NE(message(kSddmm32).find("4096 threads"), std::string::npos);
  o.params = {{"tile_rows", 128}, {"tile_cols", 128}, {"micro_rows", 8}, {"micro_cols", 8}, {"slice", 64}, {"stages", 4}};
  EXPECT_NE(message(kSddmm32).find("bytes of shared memory"), std::string::npos);
  o.params = {{"slice", 30}};
  EXPECT_NE(message(kSddmm32).find("slice = 30"), std::string::npos);
  o.params = {{"slice", 3}, {"vector_width", 1}};  // a 16-byte run is 4 floats
  EXPECT_NE(message({3, DType::F32, 3, 3}).find("slice = 3 is not a positive multiple of 4"), std::string::npos);
  o.params = {{"slice", 4}, {"vector_width", 1}};
  EXPECT_EQ(message({3, DType::F32, 3, 3}), "");
}

TEST(SddmmPlan, SearchSpaceMeasuresDenseTileOnFullTilesOnly) {
  const Features half = features_of(generate::uniform(1024, 1024, 512, 1));
  std::set<std::string> variants;
  for (const auto& [variant, params] : plan::sddmm_search_space(half, kSddmm32, {})) {
    variants.insert(variant);
    Options o;
    o.variant = variant;
    o.params = params;
    o.reuse = Reuse::Many;
    EXPECT_EQ(plan::plan_sddmm(half, kSddmm32, {}, o).params, variant == "cusparse" ? nlohmann::json::object() : params);
  }
  EXPECT_EQ(variants.count("dense_tile"), 1u);
  EXPECT_EQ(variants.count("row_gather"), 1u);
}

}  // namespace
}  // namespace sparsejit
