// The numeric phase by tiles as the reuse plan sees it (plan/spgemm_reuse.hpp): where it is
// timed against the plan's kernel, where it is forced, and what it is said to keep.
#include <gtest/gtest.h>

#include <string>

#include "plan/spgemm_reuse.hpp"
#include "sparsejit/features.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

// A block-dense product: 10 M products over 50,000 tile products (200 a tile product).
SpgemmFeatures dense_tiles() {
  SpgemmFeatures f = test::spgemm_features_of(10'000'000, 700'000, 14'000);
  f.b = f.a;
  f.a_tiles = f.b_tiles = 20'000;
  f.tile_products = 50'000;
  return f;
}

TEST(SpgemmTilesPlan, DenseTileProductsAreTimedAgainstThePlansKernel) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = dense_tiles();
  const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, {});
  EXPECT_TRUE(p.by_positions) << p.why;
  EXPECT_EQ(p.kernel, PositionsKernel::Warps);  // the plan's kernel stays the one it describes
  EXPECT_TRUE(p.time_against_tiles);
  int64_t tiles_build = 0;
  const int64_t tiles = plan::tile_sums_bytes(f, DType::F32, tiles_build);
  // The tiles and their build are counted in the first call's peak, beside the warps' and the
  // blocks' (which the same features without tiles plan alone).
  SpgemmFeatures no_tiles = f;
  no_tiles.tile_products = 0;
  const plan::SpgemmReusePlan alone = plan::plan_spgemm_reuse(no_tiles, DType::F32, h100, {}, {});
  EXPECT_FALSE(alone.time_against_tiles);
  EXPECT_EQ(p.bytes, alone.bytes);
  EXPECT_EQ(p.build_bytes, alone.build_bytes + tiles + tiles_build);
  const plan::SpgemmReusePlan untimed = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, {}, PositionsKernel::Warps);
  // 88 bytes a tile product, the packed values, 8 a tile of A and 12 a row of C.
  EXPECT_EQ(tiles, 88 * 50'000 + 4 * 1'400'000 + 8 * 20'001 + 12 * 14'001);
  // Scattered tiles (a tile product of 4 products, or just under kTimedTileDensity): not timed.
  SpgemmFeatures scattered = f;
  scattered.tile_products = 2'500'000;
  EXPECT_FALSE(plan::plan_spgemm_reuse(scattered, DType::F32, h100, {}, {}).time_against_tiles);
  scattered.tile_products = int64_t(double(f.products) / plan::kTimedTileDensity) + 1;
  EXPECT_FALSE(plan::plan_spgemm_reuse(scattered, DType::F32, h100, {}, {}).time_against_tiles);
  // At exactly kTimedTileDensity products a tile product: timed.
  scattered.tile_products = int64_t(double(f.products) / plan::kTimedTileDensity);
  EXPECT_TRUE(plan::plan_spgemm_reuse(scattered, DType::F64, h100, {}, {}).time_against_tiles);
  // A forced kernel is never timed; no tensor cores, no tiles.
  EXPECT_FALSE(untimed.time_against_tiles);
  plan::DeviceTarget turing;
  turing.sm = 75;
  EXPECT_FALSE(plan::plan_spgemm_reuse(f, DType::F32, turing, {}, {}).time_against_tiles);
  // Where the warps fit but not the tiles beside them: the warps alone.
  const plan::SpgemmReusePlan tight = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, untimed.bytes + untimed.build_bytes + 1);
  EXPECT_TRUE(tight.by_positions) << tight.why;
  EXPECT_FALSE(tight.time_against_tiles);
}

TEST(SpgemmTilesPlan, ForcedTilesKeepTheirArraysOrNameWhyNot) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = dense_tiles();
  const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, {}, PositionsKernel::Tiles);
  EXPECT_TRUE(p.by_positions) << p.why;
  EXPECT_EQ(p.kernel, PositionsKernel::Tiles);
  int64_t build = 0;
  EXPECT_EQ(p.bytes, plan::tile_sums_bytes(f, DType::F64, build));
  EXPECT_EQ(p.build_bytes, build);
  EXPECT_EQ(p.why, "tiles: 50000 tile products, at most " + std::to_string(p.bytes) + " bytes kept on C");
  // The build: two operands' tiles (65 bytes an entry), C's columns and f64 values for at most
  // 64 entries a tile product (fewer than the products here), C's row offsets, CUB.
  EXPECT_EQ(build, 65 * 1'400'000 + 12 * 64 * 50'000 + 4 * 14'001 + (int64_t(32) << 20));
  const plan::SpgemmReusePlan limited = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, p.bytes, PositionsKernel::Tiles);
  EXPECT_FALSE(limited.by_positions);
  EXPECT_EQ(limited.why.rfind("recompute: positions take at most ", 0), 0u) << limited.why;
  plan::DeviceTarget turing;
  turing.sm = 75;
  const plan::SpgemmReusePlan old = plan::plan_spgemm_reuse(f, DType::F32, turing, {}, {}, PositionsKernel::Tiles);
  EXPECT_FALSE(old.by_positions);
  EXPECT_NE(old.why.find("the device is sm_75"), std::string::npos) << old.why;
  EXPECT_STREQ(to_string(PositionsKernel::Tiles), "tiles");
}

}  // namespace
}  // namespace sparsejit
