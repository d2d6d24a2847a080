// The numeric phase by rows as the reuse plan sees it (plan/spgemm_reuse.hpp): its bins, forced,
// and taken where no positions fit.
#include <gtest/gtest.h>

#include <string>

#include "ops/spgemm_reuse_rows.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/features.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

TEST(SpgemmRowsPlan, BinsAreTheOnesWhoseBlocksFitSharedMemory) {
  const plan::DeviceTarget h100;  // 227 KiB a block
  // A bin of 16 entries: 32 groups of 8 threads, 32 slots each (f32 sums, A values, keys,
  // scan and B row starts, and 32 warp totals).
  EXPECT_EQ(plan::row_sums_shared_bytes({16, 8, 256}, DType::F32), 4 * 32 * (32 + 8) + 4 * (32 * (32 + 16) + 32));
  EXPECT_EQ(plan::row_sums_shared_bytes({8192, 1024, 1024}, DType::F64), 8 * (16384 + 1024) + 4 * (16384 + 2048 + 32));
  for (DType dtype : {DType::F32, DType::F64}) {
    const plan::RowSumsPlan p = plan::plan_row_sums(dtype, h100);
    ASSERT_EQ(p.bins.size(), 6u) << to_string(dtype);
    for (std::size_t b = 0; b < p.bins.size(); ++b) {
      EXPECT_LE(plan::row_sums_shared_bytes(p.bins[b], dtype), h100.shared_per_block_optin);
      EXPECT_EQ(p.bins[b].block_threads % p.bins[b].group_threads, 0);
      if (b > 0) {
        EXPECT_GT(p.bins[b].limit, p.bins[b - 1].limit);
      }
    }
    EXPECT_EQ(p.bins.back().limit, 8192);
  }
  // 100 KiB a block: f64's tables of 4096 entries (8192 slots, 115 KB) and 8192 do not fit.
  plan::DeviceTarget small = h100;
  small.shared_per_block_optin = 100 * 1024;
  EXPECT_EQ(plan::plan_row_sums(DType::F64, small).bins.back().limit, 1024);
  EXPECT_EQ(plan::plan_row_sums(DType::F32, small).bins.back().limit, 4096);
}

// Rows are slower than every kernel by positions (bench/results/2026-12-03-h200-spgemm-numeric-rows):
// auto takes them only where no positions fit (SpgemmRowsPlan.WhereNoPositionsFitRowsDo).
TEST(SpgemmRowsPlan, AutoKeepsPositionsWhereTheyFit) {
  const plan::DeviceTarget h100;
  for (int64_t products : {int64_t(1'000'000), int64_t(20'000'000)}) {
    const SpgemmFeatures f = test::spgemm_features_of(products, 400'000, 30'000);
    const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, {});
    EXPECT_TRUE(p.by_positions) << p.why;
    EXPECT_EQ(p.kernel, products < plan::kWarpTaskProducts ? PositionsKernel::Entries : PositionsKernel::Warps);
    EXPECT_EQ(p.why.rfind("positions: ", 0), 0u) << p.why;
    EXPECT_EQ(p.note, "");
  }
}

TEST(SpgemmRowsPlan, ForcedRowsKeepARowListOrNameWhyNot) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = test::spgemm_features_of(5'000'000, 400'000, 30'000);
  const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, {}, PositionsKernel::Rows);
  EXPECT_TRUE(p.by_positions) << p.why;
  EXPECT_EQ(p.kernel, PositionsKernel::Rows);
  EXPECT_EQ(p.bytes, 4 * 30'001);
  EXPECT_EQ(p.build_bytes, 0);
  EXPECT_EQ(p.why, "rows: C's rows binned in tables of up to 8192 entries, 120004 bytes kept on C");
  const plan::SpgemmReusePlan limited = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, p.bytes - 1, PositionsKernel::Rows);
  EXPECT_FALSE(limited.by_positions);
  EXPECT_EQ(limited.why, "recompute: positions take at most 120004 bytes, more than the memory limit of 120003");
  EXPECT_STREQ(to_string(PositionsKernel::Rows), "rows");
}

TEST(SpgemmRowsPlan, WhereNoPositionsFitRowsDo) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = test::spgemm_features_of(100'000'000, 1'000'000, 100'000);
  const plan::SpgemmReusePlan limited = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, int64_t(100) << 20);
  EXPECT_TRUE(limited.by_positions) << limited.why;
  EXPECT_EQ(limited.kernel, PositionsKernel::Rows);
  EXPECT_EQ(limited.bytes, plan::row_sums_bytes(100'000));
  EXPECT_EQ(limited.why.rfind("rows: ", 0), 0u) << limited.why;
  EXPECT_NE(limited.why.find("(positions take at least "), std::string::npos) << limited.why;
  EXPECT_EQ(limited.note.rfind(" (positions take at least ", 0), 0u) << limited.note;  // the built rows' description keeps it
  // Nor rows: the variant again, for the positions' reason.
  const plan::SpgemmReusePlan none = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, 1000);
  EXPECT_FALSE(none.by_positions);
  EXPECT_EQ(none.why.rfind("recompute: positions take at least ", 0), 0u) << none.why;
  // Forced positions that do not fit are declined, never swapped for rows.
  const plan::SpgemmReusePlan forced = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, int64_t(100) << 20, PositionsKernel::Warps);
  EXPECT_FALSE(forced.by_positions);
}

TEST(SpgemmRowsPlan, EachBinHasItsOwnKernel) {
  const plan::RowSumsPlan p = plan::plan_row_sums(DType::F32, plan::DeviceTarget{});
  const jit::KernelSpec narrow = ops::row_sums_spec(DType::F32, p.bins.front());
  const jit::KernelSpec wide = ops::row_sums_spec(DType::F32, p.bins.back());
  EXPECT_EQ(narrow.kernel_name, "sj_spgemm_row_sums_16");
  EXPECT_EQ(wide.kernel_name, "sj_spgemm_row_sums_8192");
  EXPECT_EQ(narrow.params.at("table_slots"), 32);
  EXPECT_EQ(narrow.params.at("warp_groups"), true);
  EXPECT_EQ(wide.params.at("warp_groups"), false);
  EXPECT_EQ(ops::row_sums_spec(DType::F64, p.bins.front()).params.at("value_t"), "double");
}

}  // namespace
}  // namespace sparsejit
