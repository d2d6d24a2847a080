// The SpMM planner over its registered variants (runtime/variants/spmm/): the dense GEMM's
// terms, refusal and choice of GEMM (tensor cores or cuBLAS, the inner dimension's splits), the
// RS-SpMM split's parameters and prices, csr_merge's ranges, csr_rowsplit's
// waves, forced choices and search spaces (CPU only).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "models/cost_model.hpp"
#include "models/model_store.hpp"
#include "models/neighbour_correction.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "plan/spmm_params.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/matrix.hpp"
#include "support/plan_support.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using test::candidate;
using test::small_features;

// The dense GEMM's terms for the 4x6 matrix at K = 32 (f32): 2*4*6*32 flops; the dense copy,
// B and C in bytes; one 128x128 output tile, so the serial share is all the flops. Aᵀ·B
// swaps B's and C's rows.
TEST(PlanSpmm, DenseIsPricedByTheGemmItRuns) {
  const nlohmann::json& model = models::shipped_model("spmm");  // a planner given no sources prices with it
  for (bool transpose : {false, true}) {
    const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, transpose}, {}, {});
    const Candidate& c = candidate(d, "dense");
    ASSERT_TRUE(c.rejected_because.empty()) << c.rejected_because;
    EXPECT_DOUBLE_EQ(c.terms.at("dense_flops").get<double>(), 2.0 * 4 * 6 * 32);
    EXPECT_DOUBLE_EQ(c.terms.at("dense_bytes").get<double>(), (4.0 * 6 + 6 * 32 + 4 * 32) * 4);
    EXPECT_DOUBLE_EQ(c.terms.at("dense_serial_flops").get<double>(), 2.0 * 4 * 6 * 32);
    // The formula's price times the model's neighbour correction at the decision's features.
    EXPECT_DOUBLE_EQ(c.correction, models::neighbour_factor(model, "dense", d.features));
    EXPECT_DOUBLE_EQ(c.predicted_ms, models::linear_cost(model.at("cost").at("dense"), c.terms) * c.correction);
  }
}

TEST(PlanSpmm, DenseIsRejectedWhenItsCopyWouldBeTooLarge) {
  const Features big = inspect(generate::uniform(20000, 20000, 1, 3).pattern());  // 1.6e9 bytes in f32
  const Decision d = plan::plan_spmm(big, {32, DType::F32, false}, {}, {});
  EXPECT_NE(candidate(d, "dense").rejected_because.find("dense copy of A (20000x20000"), std::string::npos)
      << candidate(d, "dense").rejected_because;
  EXPECT_NE(d.variant, "dense");
  Options o;
  o.variant = "dense";
  EXPECT_THROW(plan::plan_spmm(big, {32, DType::F32, false}, {}, o), UnsupportedError);
  const Features fits = inspect(generate::uniform(16000, 16000, 1, 3).pattern());  // 1.02e9 bytes, under 1 GiB
  EXPECT_TRUE(candidate(plan::plan_spmm(fits, {32, DType::F32, false}, {}, {}), "dense").rejected_because.empty());
  o.params = {{"lanes", 8}};
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F32, false}, {}, o), InvalidInputError);
}

TEST(PlanSpmm, TransposeRejectsRowwarp) {
  const Decision d = plan::plan_spmm(small_features(), {32, DType::F32, true}, {}, {});
  EXPECT_NE(d.variant, "csr_rowwarp");
  EXPECT_FALSE(d.candidates[0].rejected_because.empty());
  Options forced;
  forced.variant = "csr_rowwarp";
  EXPECT_THROW(plan::plan_spmm(small_features(), {32, DType::F32, true}, {}, forced), UnsupportedError);
}

// csr_merge's A·B kernel forms B's row addresses with 32-bit multiplies, so it refuses a row
// stride of 2^32 bytes or more (2^30 floats, 2^29 doubles), names it, and is not chosen; a
// stride just under stays open, and Aᵀ·B (a kernel without the limit) stays open at any stride.
TEST(PlanSpmm, MergeRejectsARowStrideOfFourGibibytes) {
  const int64_t floats = int64_t(1) << 30;
  for (auto [dtype, limit] : {std::pair{DType::F32, floats}, std::pair{DType::F64, floats / 2}}) {
    const Decision far = plan::plan_spmm(small_features(), {32, dtype, false, limit, 32}, {}, {});
    EXPECT_NE(candidate(far, "csr_merge").rejected_because.find("B's row stride of 4294967296 bytes"), std::string::npos)
        << candidate(far, "csr_merge").rejected_because;
    EXPECT_NE(far.variant, "csr_merge");
    Options forced;
    forced.variant = "csr_merge";
    EXPECT_THROW(plan::plan_spmm(small_features(), {32, dtype, false, limit, 32}, {}, forced), UnsupportedError);
    EXPECT_TRUE(candidate(plan::plan_spmm(small_features(), {32, dtype, false, limit - 32, 32}, {}, {}), "csr_merge")
                    .rejected_because.empty());
    EXPECT_TRUE(candidate(plan::plan_spmm(small_features(), {32, dtype, true, limit, 32}, {}, {}), "csr_merge")
                    .rejected_because.empty());
  }
}

// ---------------------------------------------------------------------------------------
// The RS-SpMM candidates (csr_vector, rs) and their parameters.

struct Planned {
  Features features;
  plan::SplitStatsSource split;
  Csr<double> matrix;
};

Planned planned(Csr<double> m) {
  Planned p{inspect(m.pattern()), {}, std::move(m)};
  const Csr<double>* a = &p.matrix;
  p.split = [a](int32_t w, int32_t t) { return row_segment_split(a->pattern(), w, t); };
  return p;
}

double predicted(const Decision& d, const std::string& variant) {
  for (const auto& c : d.candidates)
    if (c.variant == variant) {
      EXPECT_TRUE(c.rejected_because.empty()) << variant << ": " << c.rejected_because;
      return c.predicted_ms;
    }
  ADD_FAILURE() << "no candidate " << variant;
  return 0;
}

plan::DeviceTarget h200() {
  plan::DeviceTarget t;
  t.name = "NVIDIA H200";
  t.multiprocessors = 132;
  t.shared_per_sm = 233472;
  t.shared_per_block_optin = 232448;
  return t;
}

// The dense variant's GEMM: the tensor-core kernel for f32 A·B on sm_80 and later (up to
// 65535 row tiles), with the
// inner dimension split until C's 64 x 32 tiles fill two blocks per SM (each part at least 128
// long, at most 16 parts); cuBLAS for f64, for Aᵀ·B and before sm_80. 16-byte copies only
// where K and A's column count allow them. Forced settings are checked by name.
TEST(PlanSpmm, DenseRunsTheTensorCoreGemmForF32AAndSplitsItsInnerDimension) {
  const Features layer = inspect(generate::uniform(256, 2304, 1152, 3).pattern());
  const auto dense_params = [&](const Features& f, const plan::SpmmProblem& problem, const plan::DeviceTarget& device) {
    return candidate(plan::plan_spmm(f, problem, device, {}), "dense").params;
  };
  // 4 x 16 tiles at K = 512: 64, 128, 256 blocks with 1, 2, 4 parts, still under 264; 8 parts.
  nlohmann::json p = dense_params(layer, {512, DType::F32, false}, h200());
  EXPECT_EQ(p.at("gemm"), "mma");
  EXPECT_EQ(p.at("splits"), 8);
  EXPECT_EQ(p.at("vec_width"), 4);
  // 4 x 1 tiles at K = 32: 16 parts would leave 144 each; 16 is the cap.
  EXPECT_EQ(dense_params(layer, {32, DType::F32, false}, h200()).at("splits"), 16);
  // A tall layer fills the device whole; a short inner dimension keeps parts of 128 or more
  // (300: two parts of 150, not four of 75).
  const Features tall = inspect(generate::uniform(8192, 512, 256, 3).pattern());
  EXPECT_EQ(dense_params(tall, {512, DType::F32, false}, h200()).at("splits"), 1);
  const Features short_rows = inspect(generate::uniform(64, 300, 150, 3).pattern());
  EXPECT_EQ(dense_params(short_rows, {32, DType::F32, false}, h200()).at("splits"), 2);
  EXPECT_EQ(dense_params(layer, {33, DType::F32, false}, h200()).at("vec_width"), 1);
  EXPECT_EQ(dense_params(inspect(generate::uniform(256, 2303, 1152, 3).pattern()), {512, DType::F32, false}, h200()).at("vec_width"), 1);
  EXPECT_EQ(dense_params(layer, {512, DType::F64, false}, h200()).at("gemm"), "cublas");
  EXPECT_EQ(dense_params(layer, {512, DType::F32, true}, h200()).at("gemm"), "cublas");
  // Past 65535 row tiles of 64 (the launch's gridDim.y), cuBLAS.
  const Features tallest = inspect(generate::uniform(65535 * 64 + 1, 8, 1, 3).pattern());
  EXPECT_EQ(dense_params(tallest, {32, DType::F32, false}, h200()).at("gemm"), "cublas");
  EXPECT_EQ(dense_params(inspect(generate::uniform(65535 * 64, 8, 1, 3).pattern()), {32, DType::F32, false}, h200()).at("gemm"), "mma");
  plan::DeviceTarget turing = h200();
  turing.sm = 75;
  EXPECT_EQ(dense_params(layer, {512, DType::F32, false}, turing).at("gemm"), "cublas");
  // The search space: cuBLAS and the kernel at 1 to 16 parts.
  std::vector<int> splits;
  int cublas = 0;
  for (const auto& [variant, params] : plan::spmm_search_space(layer, {512, DType::F32, false}, h200())) {
    if (variant != "dense") continue;
    if (params.at("gemm") == "cublas") ++cublas;
    else splits.push_back(params.at("splits").get<int>());
  }
  EXPECT_EQ(cublas, 1);
  EXPECT_EQ(splits, (std::vector<int>{1, 2, 4, 8, 16}));
  // Forced settings.
  Options o;
  o.variant = "dense";
  o.params = {{"gemm", "fast"}};
  EXPECT_THROW(plan::plan_spmm(layer, {512, DType::F32, false}, h200(), o), InvalidInputError);
  o.params = {{"gemm", "mma"}, {"splits", 0}};
  EXPECT_THROW(plan::plan_spmm(layer, {512, DType::F32, false}, h200(), o), InvalidInputError);
  o.params = {{"gemm", "mma"}};
  EXPECT_THROW(plan::plan_spmm(layer, {512, DType::F64, false}, h200(), o), UnsupportedError);
  EXPECT_THROW(plan::plan_spmm(layer, {512, DType::F32, true}, h200(), o), UnsupportedError);
  o.params = {{"gemm", "mma"}, {"vec_width", 4}};
  EXPECT_THROW(plan::plan_spmm(layer, {33, DType::F32, false}, h200(), o), InvalidInputError);
  o.params = {{"gemm", "cublas"}};
  EXPECT_EQ(plan::plan_spmm(layer, {512, DType::F64, false}, h200(), o).params.at("gemm"), "cublas");
}

TEST(PlanRs, ClusteredMatrixPricesTheSplitFromItsStatistics) {
  const Planned p = planned(generate::clustered(32768, 32768, 48, 0.9, 64, 3));
  const Decision d = plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), {}, p.split);
  // The split is priced from its own statistics: most nonzeros are heavy here, so the staged
  // panel bytes are a real cost term (whether rs then wins is the fitted model's call).
  const auto& rs = *std::find_if(d.candidates.begin(), d.candidates.end(), [](const Candidate& c) { return c.variant == "rs"; });
  // Two blocks of a 512-byte K slice per SM: (233472 / 2 - 1024) / 512 = 226 rows, 224 after rounding.
  EXPECT_EQ(rs.params["panel_width"], 224);
  EXPECT_EQ(rs.params["vec_width"], 4);
  EXPECT_EQ(rs.params["heavy_lanes"], 32);
  EXPECT_EQ(rs.params["cf_v"], 1);
  EXPECT_GT(rs.terms["shared_bytes"].get<double>(), 0.0);
  EXPECT_GT(rs.predicted_ms, 0.0);
}

TEST(PlanRs, UniformRandomMatrixDoesNotPayForTheSplit) {
  const Planned p = planned(generate::uniform(100000, 100000, 16, 5));
  const Decision d = plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), {}, p.split);
  EXPECT_NE(d.variant, "rs");
  EXPECT_LE(predicted(d, "csr_vector"), predicted(d, "rs"));
}

TEST(PlanRs, VectorWidthLanesAndCoarseningFollowKAndLeadingDimensions) {
  const Planned p = planned(generate::uniform(300, 300, 5, 1));
  Options o;
  o.variant = "csr_vector";
  auto params = [&](int32_t k, DType t, int64_t ld) {
    return plan::plan_spmm(p.features, {k, t, false, ld, ld}, h200(), o, p.split).params;
  };
  EXPECT_EQ(params(128, DType::F32, 128)["vec_width"], 4);
  EXPECT_EQ(params(128, DType::F32, 128)["lanes_per_row"], 32);
  EXPECT_EQ(params(128, DType::F32, 128)["cf_h"], 1);
  EXPECT_EQ(params(128, DType::F32, 129)["vec_width"], 1);  // a padded row breaks 16-byte alignment
  EXPECT_EQ(params(128, DType::F32, 130)["vec_width"], 1);  // only 16-byte vectors or single values
  EXPECT_EQ(params(32, DType::F32, 32)["lanes_per_row"], 8);
  EXPECT_EQ(params(64, DType::F64, 64)["lanes_per_row"], 32);
  EXPECT_EQ(params(512, DType::F32, 512)["cf_h"], 1);       // capped at 512 bytes per group row
  EXPECT_EQ(params(7, DType::F32, 7)["vec_width"], 1);
  EXPECT_EQ(params(7, DType::F32, 7)["lanes_per_row"], 8);
  EXPECT_EQ(params(100, DType::F32, 100)["cf_h"], 1);       // 25 float4 over 32 lanes
  EXPECT_EQ(params(99, DType::F32, 99)["cf_h"], 4);         // scalar: 99 columns over 32 lanes
}

TEST(PlanRs, ForcedParametersAreCheckedAndThePanelFollowsTheSlice) {
  const Planned p = planned(generate::clustered(4096, 4096, 24, 0.6, 16, 2));
  Options o;
  o.variant = "rs";
  o.params = {{"cf_v", 2}};
  const Decision d = plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split);
  EXPECT_EQ(d.params["panel_width"], 96);  // a 1 KiB slice row: (233472 / 2 - 1024) / 1024 = 113 -> 96
  o.params = {{"vec_width", 4}};
  EXPECT_THROW(plan::plan_spmm(p.features, {7, DType::F32, false, 7, 7}, h200(), o, p.split), InvalidInputError);
  o.params = {{"panel_width", 4096}};
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
  o.params = {{"threshold", 0}};
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
  o.params = {{"lanes_per_row", 12}};
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
  // Without a split source rs cannot be priced and is not offered.
  o.params = nlohmann::json::object();
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o), UnsupportedError);
}

TEST(PlanRs, SearchSpaceEntriesAreValidWhenForced) {
  const Planned p = planned(generate::clustered(2048, 3000, 24, 0.6, 16, 2));
  for (DType t : {DType::F32, DType::F64}) {
    for (int32_t k : {1, 33, 128, 512}) {
      for (bool transpose : {false, true}) {
        const plan::SpmmProblem problem{k, t, transpose, k, k};
        const auto space = plan::spmm_search_space(p.features, problem, h200());
        std::set<int> thresholds;
        std::set<std::string> variants;
        for (const auto& [variant, params] : space) {
          variants.insert(variant);
          Options o;
          o.variant = variant;
          o.params = params;
          const Decision d = plan::plan_spmm(p.features, problem, h200(), o, p.split);
          EXPECT_EQ(d.params, params) << variant << " " << params.dump();
          if (variant == "rs") {
            thresholds.insert(params["threshold"].get<int>());
            const int w = params["panel_width"].get<int>();
            EXPECT_TRUE(w % 32 == 0 || w == 3000) << w;
          }
        }
        EXPECT_EQ(thresholds, (std::set<int>{2, 4, 8, 16, 32}));
        EXPECT_EQ(variants.count("rs"), 1u);
        EXPECT_EQ(variants.count("csr_vector"), 1u);
        EXPECT_EQ(variants.count("cusparse"), 1u);
        EXPECT_EQ(variants.count("csr_rowwarp"), transpose ? 0u : 1u);
        EXPECT_EQ(variants.count("csr_rowsplit"), transpose ? 0u : 1u);
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// csr_pipelined: a lane group per row with up to 32 B rows in flight a lane.

TEST(PlanPipelined, FewRowWideLayersAtWideKTakeIt) {
  // Pruned layers of 448-1024 rows x 2048-4608 columns at 5-10%: there every other kernel
  // waits on its B loads (bench/results/2026-11-29-h200-spmm-pipelined: 1.2-1.35x the next).
  for (const auto& [rows, cols, per_row] : {std::tuple{448, 4032, 202}, std::tuple{512, 2048, 205}, std::tuple{1024, 4096, 410}}) {
    const Planned p = planned(generate::uniform(rows, cols, per_row, 3));
    const Decision d = plan::plan_spmm(p.features, {512, DType::F32, false, 512, 512}, h200(), {}, p.split);
    EXPECT_EQ(d.variant, "csr_pipelined") << rows << "x" << cols << ": " << describe(d);
  }
}

TEST(PlanPipelined, DefaultsCoverKWithAChunkOf32AndSixteenLoadsInFlight) {
  const Planned p = planned(generate::uniform(256, 2304, 230, 3));
  for (const auto& [k, dtype, lanes, vec] : {std::tuple{512, DType::F32, 32, 4}, std::tuple{32, DType::F32, 8, 4},
                                             std::tuple{64, DType::F64, 32, 2}, std::tuple{33, DType::F32, 32, 1}}) {
    const Decision d = plan::plan_spmm(p.features, {k, dtype, false, k, k}, h200(), {}, p.split);
    const nlohmann::json& params = candidate(d, "csr_pipelined").params;
    EXPECT_EQ(params.at("lanes_per_row"), lanes) << "k=" << k;
    EXPECT_EQ(params.at("vec_width"), vec) << "k=" << k;
    EXPECT_EQ(params.at("lanes_per_row").get<int>() * params.at("pairs_per_lane").get<int>(), 32) << "k=" << k;
    EXPECT_EQ(params.at("unroll"), 16) << "k=" << k;
  }
}

TEST(PlanPipelined, BlocksHalveWhenTheGridWouldLeaveMostSMsIdle) {
  // 256 and 512 rows at K = 128: 32 and 64 blocks of 8 rows on 132 SMs, so blocks of 4 rows.
  // At K = 512 256 rows make 128 blocks of 256 threads, and 2048 rows 256 blocks at K = 128.
  for (const auto& [rows, k, threads] : {std::tuple{256, 128, 128}, std::tuple{512, 128, 128}, std::tuple{256, 512, 256},
                                         std::tuple{2048, 128, 256}}) {
    const Planned p = planned(generate::uniform(rows, 2304, 230, 3));
    const Decision d = plan::plan_spmm(p.features, {k, DType::F32, false, k, k}, h200(), {}, p.split);
    EXPECT_EQ(candidate(d, "csr_pipelined").params.at("block_threads"), threads) << rows << " rows, k=" << k;
  }
}

TEST(PlanPipelined, CriticalLoadsFallWithTheLoadsInFlight) {
  const Planned p = planned(generate::uniform(256, 2304, 230, 3));
  Options o;
  o.variant = "csr_pipelined";
  double previous = 0;
  for (int unroll : {32, 16, 8}) {
    o.params = {{"lanes_per_row", 32}, {"pairs_per_lane", 2}, {"unroll", unroll}};
    const Decision d = plan::plan_spmm(p.features, {512, DType::F32, false, 512, 512}, h200(), o, p.split);
    const double loads = candidate(d, "csr_pipelined").terms.at("critical_loads").get<double>();
    EXPECT_DOUBLE_EQ(loads, std::ceil(230.0 / unroll) + 2.0) << "unroll=" << unroll;
    EXPECT_GT(loads, previous);
    previous = loads;
  }
}

// ---------------------------------------------------------------------------------------
// csr_merge: nonzero-balanced ranges, priced without a longest-row term.

TEST(PlanMerge, LongRowsMakeMergeCheaperThanRowPerGroupKernels) {
  // A power-law graph (hub rows hundreds of times the mean) and a pruned weight matrix of
  // 128 rows x ~576 nonzeros (every group of csr_vector walks a long row).
  for (const auto& [name, m] : {std::pair{"rmat", generate::rmat(65536, 600000, 3)},
                                std::pair{"128x576", generate::uniform(128, 1152, 576, 4)}}) {
    const Planned p = planned(m);
    for (int32_t k : {32, 128}) {
      const Decision d = plan::plan_spmm(p.features, {k, DType::F32, false, k, k}, h200(), {}, p.split);
      EXPECT_LT(predicted(d, "csr_merge"), predicted(d, "csr_vector")) << name << " k=" << k;
      EXPECT_LT(predicted(d, "csr_merge"), predicted(d, "csr_rowwarp")) << name << " k=" << k;
    }
  }
}

TEST(PlanMerge, UniformRowsKeepARowPerGroupKernelCheaper) {
  const Planned p = planned(generate::uniform(100000, 100000, 16, 5));
  for (int32_t k : {32, 128}) {
    const Decision d = plan::plan_spmm(p.features, {k, DType::F32, false, k, k}, h200(), {}, p.split);
    EXPECT_LT(std::min(predicted(d, "csr_vector"), predicted(d, "rs")), predicted(d, "csr_merge")) << "k=" << k;
    EXPECT_NE(d.variant, "csr_merge");
  }
}

TEST(PlanMerge, DefaultsFollowKAndTheRangeGrowsWithTheMatrix) {
  const Planned p = planned(generate::rmat(8192, 80000, 2));
  const Decision d = plan::plan_spmm(p.features, {32, DType::F32, false, 32, 32}, h200(), {}, p.split);
  const nlohmann::json& params = candidate(d, "csr_merge").params;
  EXPECT_EQ(params["vec_width"], 4);
  EXPECT_EQ(params["lanes"], 8);  // 8 float4 cover K = 32
  EXPECT_EQ(params["cf"], 1);
  EXPECT_EQ(params["unroll"], 4);  // 4 / cf: four vectors in flight keep 8 blocks per SM
  EXPECT_EQ(params["block_threads"], 128);
  // The range balances the boundary atomics (one pair per range) against the round trips of
  // one range: it grows with the matrix.
  Features big = p.features;
  big.basic.nnz = 10'000'000;
  big.basic.rows = 1'000'000;
  const Decision d_big = plan::plan_spmm(big, {32, DType::F32, false, 32, 32}, h200(), {});
  EXPECT_LE(params["nnz_per_group"].get<int>(), 32);
  // The range is the cheapest of the grid under the model's coefficients.
  const int range = candidate(d_big, "csr_merge").params["nnz_per_group"].get<int>();
  EXPECT_TRUE(range == 16 || range == 32 || range == 64 || range == 128 || range == 256) << range;
  Options o;
  o.variant = "csr_merge";
  const Decision scalar = plan::plan_spmm(p.features, {99, DType::F32, false, 99, 99}, h200(), o, p.split);
  EXPECT_EQ(scalar.params["vec_width"], 1);
  EXPECT_EQ(scalar.params["lanes"], 32);
  EXPECT_EQ(scalar.params["cf"], 4);
  EXPECT_EQ(scalar.params["unroll"], 2);
}

TEST(PlanMerge, ForcedParametersAreChecked) {
  const Planned p = planned(generate::uniform(300, 300, 5, 1));
  Options o;
  o.variant = "csr_merge";
  for (const nlohmann::json& bad : {nlohmann::json{{"nnz_per_group", 0}}, nlohmann::json{{"nnz_per_group", 5000}},
                                    nlohmann::json{{"lanes", 12}}, nlohmann::json{{"cf", 3}}, nlohmann::json{{"unroll", 16}},
                                    nlohmann::json{{"block_threads", 96}}, nlohmann::json{{"vec_width", 2}}}) {
    o.params = bad;
    EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError) << bad.dump();
  }
  o.params = {{"vec_width", 4}};
  EXPECT_THROW(plan::plan_spmm(p.features, {7, DType::F32, false, 7, 7}, h200(), o, p.split), InvalidInputError);
  o.params = {{"lanes_per_row", 8}};  // a csr_vector parameter
  EXPECT_THROW(plan::plan_spmm(p.features, {128, DType::F32, false, 128, 128}, h200(), o, p.split), InvalidInputError);
}

TEST(PlanMerge, SearchSpaceCoversRangesLanesAndUnroll) {
  const Planned p = planned(generate::rmat(4096, 40000, 2));
  for (int32_t k : {1, 32, 128}) {
    for (bool transpose : {false, true}) {
      const plan::SpmmProblem problem{k, DType::F32, transpose, k, k};
      std::set<int> ranges, unrolls, lanes;
      for (const auto& [variant, params] : plan::spmm_search_space(p.features, problem, h200())) {
        if (variant != "csr_merge") continue;
        ranges.insert(params["nnz_per_group"].get<int>());
        unrolls.insert(params["unroll"].get<int>());
        lanes.insert(params["lanes"].get<int>());
        Options o;
        o.variant = variant;
        o.params = params;
        EXPECT_EQ(plan::plan_spmm(p.features, problem, h200(), o, p.split).params, params) << params.dump();
      }
      EXPECT_EQ(ranges, (std::set<int>{32, 64, 128, 256}));
      EXPECT_EQ(unrolls, (std::set<int>{4, 8}));
      const std::set<int> expected_lanes = k == 128 ? std::set<int>{32} : std::set<int>{8, 32};
      EXPECT_EQ(lanes, expected_lanes) << "k=" << k;
    }
  }
}


// Every priced candidate carries the terms its predicted cost came from, in the JSON only;
// a forced candidate is priced at the forced params (the tuner fits coefficients on them).
TEST(PlanCost, CandidatesCarryTheirTermsAndForcedOnesArePricedAtTheirParams) {
  const Planned p = planned(generate::clustered(4096, 4096, 24, 0.6, 16, 2));
  const plan::SpmmProblem problem{128, DType::F32, false, 128, 128};
  const Decision d = plan::plan_spmm(p.features, problem, h200(), {}, p.split);
  ASSERT_EQ(d.model_id, models::shipped_model("spmm").at("id"));
  const nlohmann::json& model = models::shipped_model("spmm");
  const nlohmann::json& cost = model.at("cost");
  const nlohmann::json j = to_json(d);
  ASSERT_EQ(j["candidates"].size(), d.candidates.size());
  for (const auto& c : j["candidates"]) {
    ASSERT_TRUE(c.contains("terms")) << c.dump();
    EXPECT_GT(c["terms"]["launch"].get<double>(), 0) << c.dump();
    const std::string variant = c["variant"].get<std::string>();
    EXPECT_DOUBLE_EQ(c["correction"].get<double>(), models::neighbour_factor(model, variant, d.features)) << c.dump();
    EXPECT_DOUBLE_EQ(c["predicted_ms"].get<double>(), models::linear_cost(cost[variant], c["terms"]) * c["correction"].get<double>());
  }
  EXPECT_EQ(describe(d).find("gather_bytes"), std::string::npos);

  auto forced_entry = [&](const char* variant, const nlohmann::json& params) {
    Options o;
    o.variant = variant;
    o.params = params;
    const Decision f = plan::plan_spmm(p.features, problem, h200(), o, p.split);
    for (const auto& c : f.candidates)
      if (c.variant == variant) {
        EXPECT_EQ(c.params, f.params);
        EXPECT_DOUBLE_EQ(c.predicted_ms, models::linear_cost(cost[variant], c.terms) * models::neighbour_factor(model, variant, f.features));
        return c;
      }
    ADD_FAILURE() << variant;
    return Candidate{};
  };
  // csr_merge walks its range: ceil(256 / unroll 4) + 1 round trips (K = 128: 32 lanes of one
  // 4-wide vector, cf 1, unroll 4 / cf).
  const Candidate merge = forced_entry("csr_merge", {{"nnz_per_group", 256}});
  EXPECT_EQ(merge.params["unroll"], 4);
  EXPECT_DOUBLE_EQ(merge.terms["critical_loads"].get<double>(), 65.0);
  EXPECT_DOUBLE_EQ(forced_entry("csr_merge", {{"nnz_per_group", 256}, {"unroll", 2}}).terms["critical_loads"].get<double>(), 129.0);
  // rs at another threshold: the split statistics of that threshold price it.
  const Candidate rs2 = forced_entry("rs", {{"threshold", 2}});
  const Candidate rs32 = forced_entry("rs", {{"threshold", 32}});
  const SplitStats s32 = p.split(rs32.params["panel_width"].get<int>(), 32);
  EXPECT_DOUBLE_EQ(rs32.terms["shared_bytes"].get<double>(), double(s32.heavy_nnz) * 128 * 4);
  EXPECT_NE(rs2.terms["shared_bytes"], rs32.terms["shared_bytes"]);
}

// csr_rowsplit's round trips: a row of 64 nonzeros in 4 shares of 16 (32 lanes, unroll 4:
// 1 index load + 4 B batches + the shared sum = 6) in one wave of blocks; 20000 such rows in
// 128-thread blocks, 16 per SM on 132 SMs, run in ceil(20000 / 2112) = 10 waves of 6.
TEST(PlanCost, RowsplitPricesTheWavesOfItsSmallBlocks) {
  const plan::SpmmProblem problem{128, DType::F32, false, 128, 128};
  auto rowsplit_loads = [&](int32_t rows) {
    const Planned p = planned(generate::uniform(rows, 4096, 64, 5));
    Options o;
    o.variant = "csr_rowsplit";
    o.params = {{"parts", 4}, {"lanes", 32}, {"unroll", 4}};
    const Decision d = plan::plan_spmm(p.features, problem, h200(), o, p.split);
    EXPECT_EQ(d.variant, "csr_rowsplit");
    for (const auto& c : d.candidates)
      if (c.variant == "csr_rowsplit") return c.terms["critical_loads"].get<double>();
    ADD_FAILURE() << "no csr_rowsplit candidate";
    return 0.0;
  };
  EXPECT_DOUBLE_EQ(rowsplit_loads(1000), 6.0);
  EXPECT_DOUBLE_EQ(rowsplit_loads(20000), 60.0);
}

// csr_rowsplit's row tiles: the planner keeps a row a block (the tile is slower on many
// layers), prices a forced tile by its grid (a 250-row layer at K = 512 in 16 tiles of 16 rows
// over 8 slices of 64 columns: 16 x 16 x 8 x 16 x 4 thread slots), and the tuner's search space
// holds the tile for f32 in float4 vectors only.
TEST(PlanRowsplit, TilesAreForcedOrSearchedNotPlanned) {
  const Planned p = planned(generate::uniform(250, 2304, 230, 5));
  const plan::SpmmProblem f32{512, DType::F32, false, 512, 512};
  const Decision planned_choice = plan::plan_spmm(p.features, f32, h200(), {}, p.split);
  for (const auto& c : planned_choice.candidates) {
    if (c.variant == "csr_rowsplit") {
      EXPECT_EQ(c.params["rows"], 1);
    }
  }

  Options tile;
  tile.variant = "csr_rowsplit";
  tile.params = {{"rows", 16}, {"lanes", 16}, {"parts", 4}, {"cf", 1}, {"unroll", 8}};
  const Decision forced = plan::plan_spmm(p.features, f32, h200(), tile, p.split);
  ASSERT_EQ(forced.variant, "csr_rowsplit");
  EXPECT_EQ(forced.params["rows"], 16);
  EXPECT_DOUBLE_EQ(candidate(forced, "csr_rowsplit").terms["thread_slots"].get<double>(), 16.0 * 16 * 8 * 16 * 4);

  const auto has_tile = [&](DType dtype) {
    for (const auto& [variant, params] : plan::spmm_search_space(p.features, {512, dtype, false, 512, 512}, h200()))
      if (variant == "csr_rowsplit" && params.value("rows", 1) == 16) return true;
    return false;
  };
  EXPECT_TRUE(has_tile(DType::F32));
  EXPECT_FALSE(has_tile(DType::F64));
}

}  // namespace
}  // namespace sparsejit
