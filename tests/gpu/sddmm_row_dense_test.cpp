// row_gather, panel_gather and dense_tile forced with several parameter sets, f32 and f64
// (dense_mma and, on sm_90, dense_wgmma: f32 only, likewise), K = 1, 3, 32, 33, 100, 128, 512, on generated patterns at 50%, 10%, 1% and 0.01% density, power-law rows much
// longer than a chunk, empty rows, rectangular and tile-unaligned shapes, and A / B with padded
// leading dimensions; fresh random values, P poisoned with NaN (and the bytes past nnz checked
// untouched) before every run, compared with reference::sddmm. The second call of each run
// reuses the plan and the cached format. Then the tree's own choice on a dense and a sparse
// pattern.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/plan_support.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using nlohmann::json;
using test::empty_every;
using test::is_poison;
using test::widest;

class SddmmRowDenseGpu : public test::GpuSuite {};

struct Pattern {
  std::string name;
  Csr<double> s;
};

std::vector<Pattern> patterns() {
  return {{"50% 256x200", generate::uniform(256, 200, 100, 1)},
          {"10% 400x300", generate::uniform(400, 300, 30, 2)},
          {"1% 3000x3000", generate::uniform(3000, 3000, 30, 3)},
          {"0.01% 40000x40000", generate::uniform(40000, 40000, 4, 4)},
          {"rmat 4096 (rows up to thousands)", generate::from_spec("rmat:4096:60000", 5)},
          {"empty rows 40% 700x190", empty_every(generate::uniform(700, 190, 76, 6), 3)},
          {"rectangular 5000x90", generate::uniform(5000, 90, 9, 7)},
          {"unaligned 131x77 40%", generate::uniform(131, 77, 31, 8)}};
}

std::vector<json> row_gather_sets(int32_t k) {
  std::vector<json> sets = {json::object(),  // the planner's defaults
                            {{"vector_width", 1}, {"group_size", 32}, {"unroll", 1}, {"max_nnz", 1}},
                            {{"group_size", 16}, {"unroll", 16}, {"max_nnz", 7}, {"threads_per_block", 64}}};
  if (k <= 128) sets.push_back({{"group_size", 4}, {"unroll", 2}, {"max_nnz", 1000000}});  // every row in one chunk
  return sets;
}

// panel_gather: the defaults, tiny odd tiles cut into one- and two-nonzero chunks, one band of
// the whole matrix in one panel (a block walks every chunk), and 16-lane groups on square tiles.
std::vector<json> panel_gather_sets(int32_t k) {
  std::vector<json> sets = {json::object(),
                            {{"vector_width", 1}, {"group_size", 32}, {"unroll", 1}, {"band_rows", 1 << 20},
                             {"panel_cols", 1 << 20}, {"max_nnz", 1000000}},
                            {{"group_size", 16}, {"unroll", 16}, {"band_rows", 64}, {"panel_cols", 64}, {"threads_per_block", 128}}};
  if (k <= 128)
    sets.push_back({{"group_size", 4}, {"unroll", 2}, {"band_rows", 3}, {"panel_cols", 7}, {"max_nnz", 2}, {"threads_per_block", 64}});
  return sets;
}

template <class T>
std::vector<json> dense_tile_sets(int32_t k) {
  const int w = widest<T>(k);
  const int64_t unit = std::lcm<int64_t>(w, 16 / sizeof(T));  // whole vectors and 16-byte runs
  auto slice = [&](int64_t max_slice) { return std::max<int64_t>(unit, std::min<int64_t>(max_slice, k) / unit * unit); };
  // One slice loaded at a time, two to four in flight, and scalar copies with a slice that is
  // not a power of two.
  std::vector<json> sets = {json::object(),
                            {{"tile_rows", 128}, {"tile_cols", 64}, {"micro_rows", 8}, {"micro_cols", 4}, {"slice", slice(16)},
                             {"stages", 2}},
                            {{"tile_rows", 32}, {"tile_cols", 128}, {"micro_rows", 4}, {"micro_cols", 8}, {"slice", slice(8)},
                             {"stages", 1}},
                            {{"vector_width", 1}, {"tile_rows", 32}, {"tile_cols", 32}, {"slice", 3 * (16 / sizeof(T))},
                             {"stages", 3}}};
  if (std::is_same_v<T, float>)
    sets.push_back({{"tile_rows", 128}, {"tile_cols", 256}, {"micro_rows", 8}, {"micro_cols", 8}, {"slice", slice(8)},
                    {"stages", 4}});
  return sets;
}

// dense_mma: the defaults, taller and wider warp parts, one warp per block, scalar copies, one
// to four slices in flight and slices of one to eight mma steps.
std::vector<json> dense_mma_sets() {
  return {json::object(),
          {{"tile_rows", 128}, {"tile_cols", 64}, {"warp_rows", 64}, {"warp_cols", 32}, {"slice", 16}, {"stages", 2}},
          {{"vector_width", 1}, {"tile_rows", 32}, {"tile_cols", 64}, {"warp_rows", 16}, {"warp_cols", 32}, {"slice", 8},
           {"stages", 3}},
          {{"tile_rows", 64}, {"tile_cols", 128}, {"warp_rows", 32}, {"warp_cols", 64}, {"slice", 64}, {"stages", 3}},
          {{"tile_rows", 16}, {"tile_cols", 8}, {"warp_rows", 16}, {"warp_cols", 8}, {"slice", 24}, {"stages", 1}}};
}

// dense_wgmma: the defaults, two warpgroups on the widest tile with three slices in flight,
// scalar copies on a 96-wide tile with four, the narrowest tile, and 144 (three bitmap words,
// the last partial) on two warpgroups.
std::vector<json> dense_wgmma_sets() {
  return {json::object(),
          {{"tile_rows", 128}, {"tile_cols", 256}, {"stages", 3}},
          {{"vector_width", 1}, {"tile_cols", 96}, {"stages", 4}},
          {{"tile_cols", 64}, {"stages", 2}},
          {{"tile_rows", 128}, {"tile_cols", 144}, {"stages", 2}}};
}

// dense_wgmma needs sm_90a's wgmma: the device must be sm_90.
bool runs_wgmma(Runtime& rt) { return rt.context().info().sm == 90; }

template <class T>
void check(Runtime& rt, const Pattern& pattern, int32_t k, int64_t pad, const std::string& variant, const json& params,
           uint64_t seed) {
  SCOPED_TRACE(pattern.name + " k=" + std::to_string(k) + " pad=" + std::to_string(pad) + " " + variant + " " + params.dump() +
               " seed=" + std::to_string(seed));
  Csr<T> s = cast<T>(pattern.s);
  generate::fill_random(s.values, seed);
  Dense<T> a(s.rows, k), b(s.cols, k);
  generate::fill_random(a, seed + 1);
  generate::fill_random(b, seed + 2);
  Csr<T> expected;
  reference::sddmm(s, a, b, expected);

  DeviceCsr<T> ds(rt.context(), s);
  DeviceDense<T> da(rt.context(), s.rows, k, k + pad), db(rt.context(), s.cols, k, k + pad);
  da.upload(a);
  db.upload(b);
  constexpr std::size_t kGuard = 16;
  DeviceBuffer dp(rt.context(), (s.values.size() + kGuard) * sizeof(T));
  Options options;
  options.variant = variant;
  options.params = params;
  for (int round = 0; round < 2; ++round) {
    dp.fill_bytes(0xFF);
    const CallInfo call = rt.sddmm(ds, da, db, dp, options);
    rt.context().synchronize();
    ASSERT_TRUE(call.decision);
    ASSERT_EQ(call.decision->variant, variant);
    EXPECT_EQ(call.plan_reused, round == 1);
    const auto all = dp.download_as<T>(s.values.size() + kGuard);
    for (std::size_t i = s.values.size(); i < all.size(); ++i) ASSERT_TRUE(is_poison(all[i])) << "P written past nnz at " << i;
    const std::vector<double> got(all.begin(), all.begin() + std::ptrdiff_t(s.values.size()));
    for (std::size_t e = 0; e < got.size(); ++e) ASSERT_FALSE(std::isnan(got[e])) << "nonzero " << e << " was not written";
    ASSERT_LE(test::relative_error(got, std::vector<double>(expected.values.begin(), expected.values.end())), test::gpu_tolerance<T>());
  }
}

template <class T>
void check_all(Runtime& rt, uint64_t& seed) {
  for (const auto& pattern : patterns()) {
    for (int32_t k : {1, 3, 32, 33, 100, 128, 512}) {
      for (const auto& params : row_gather_sets(k)) check<T>(rt, pattern, k, 0, "row_gather", params, seed++);
      for (const auto& params : panel_gather_sets(k)) check<T>(rt, pattern, k, 0, "panel_gather", params, seed++);
      for (const auto& params : dense_tile_sets<T>(k)) check<T>(rt, pattern, k, 0, "dense_tile", params, seed++);
      if (std::is_same_v<T, float>)
        for (const auto& params : dense_mma_sets()) check<T>(rt, pattern, k, 0, "dense_mma", params, seed++);
      if (std::is_same_v<T, float> && runs_wgmma(rt))
        for (const auto& params : dense_wgmma_sets()) check<T>(rt, pattern, k, 0, "dense_wgmma", params, seed++);
    }
    // Padded leading dimensions: a multiple of the vector width keeps vector loads, an odd one
    // forces scalar loads.
    for (int64_t pad : {4, 3}) {
      check<T>(rt, pattern, 32, pad, "row_gather", json::object(), seed++);
      check<T>(rt, pattern, 32, pad, "panel_gather", json::object(), seed++);
      check<T>(rt, pattern, 32, pad, "dense_tile", json::object(), seed++);
      if (std::is_same_v<T, float>) check<T>(rt, pattern, 32, pad, "dense_mma", json::object(), seed++);
      if (std::is_same_v<T, float> && runs_wgmma(rt)) check<T>(rt, pattern, 32, pad, "dense_wgmma", json::object(), seed++);
    }
  }
}

TEST_F(SddmmRowDenseGpu, RowAndPanelGatherDenseTileAndDenseMmaF32) {
  uint64_t seed = next_seed();
  check_all<float>(rt(), seed);
}

TEST_F(SddmmRowDenseGpu, RowAndPanelGatherAndDenseTileF64) {
  uint64_t seed = next_seed();
  check_all<double>(rt(), seed);
}

// The sanitizer subset (tools/device_check.sh): dense_tile with one, two and four slices in
// flight on one small unaligned pattern, K over one, two and four slices (and a last partial
// one), a padded leading dimension, both types.
TEST_F(SddmmRowDenseGpu, DenseTileEveryStageCountOnASmallShape) {
  uint64_t seed = next_seed();
  const Pattern pattern{"unaligned 131x77 40%", generate::uniform(131, 77, 31, 8)};
  for (int stages : {1, 2, 4})
    for (int32_t k : {16, 33, 64}) {
      const json params = {{"tile_rows", 64}, {"tile_cols", 32}, {"slice", 16}, {"stages", stages}};
      check<float>(rt(), pattern, k, k % 4 == 0 ? 4 : 0, "dense_tile", params, seed++);
      check<double>(rt(), pattern, k, 0, "dense_tile", params, seed++);
    }
}

// The sanitizer subset for dense_mma: one, two and four slices in flight on the small unaligned
// pattern, K over one, two and four slices (and a last partial one), a padded leading dimension.
TEST_F(SddmmRowDenseGpu, DenseMmaEveryStageCountOnASmallShape) {
  uint64_t seed = next_seed();
  const Pattern pattern{"unaligned 131x77 40%", generate::uniform(131, 77, 31, 8)};
  for (int stages : {1, 2, 4})
    for (int32_t k : {16, 33, 64}) {
      const json params = {{"tile_rows", 64}, {"tile_cols", 32}, {"warp_rows", 32}, {"warp_cols", 16}, {"slice", 16},
                           {"stages", stages}};
      check<float>(rt(), pattern, k, k % 4 == 0 ? 4 : 0, "dense_mma", params, seed++);
    }
}

// The sanitizer subset for dense_wgmma: two to four slices in flight, one and two warpgroups,
// on the small unaligned pattern, K over one to four slices (and a last partial one), a padded
// leading dimension where K allows 16-byte copies.
TEST_F(SddmmRowDenseGpu, DenseWgmmaEveryStageCountOnASmallShape) {
  if (!runs_wgmma(rt())) GTEST_SKIP() << "dense_wgmma needs an sm_90 device";
  uint64_t seed = next_seed();
  const Pattern pattern{"unaligned 131x77 40%", generate::uniform(131, 77, 31, 8)};
  for (int stages : {2, 3, 4})
    for (int tile_rows : {64, 128})
      for (int32_t k : {16, 33, 64, 100}) {
        const json params = {{"tile_rows", tile_rows}, {"tile_cols", 64}, {"stages", stages}};
        check<float>(rt(), pattern, k, k % 4 == 0 ? 4 : 0, "dense_wgmma", params, seed++);
      }
}

// The sanitizer subset for panel_gather: tiles of a few rows and columns (many tiles, chunks cut
// at two nonzeros) and the defaults on the small unaligned pattern, both types, K = 3 and 33.
TEST_F(SddmmRowDenseGpu, PanelGatherOnASmallShape) {
  uint64_t seed = next_seed();
  const Pattern pattern{"unaligned 131x77 40%", generate::uniform(131, 77, 31, 8)};
  for (const json& params : {json::object(), json{{"band_rows", 5}, {"panel_cols", 9}, {"max_nnz", 2}}})
    for (int32_t k : {3, 33}) {
      check<float>(rt(), pattern, k, 0, "panel_gather", params, seed++);
      check<double>(rt(), pattern, k, 0, "panel_gather", params, seed++);
    }
}

// The automatic call runs the shipped model's cheapest candidate for the pattern (50% dense
// and 0.0075% with 3 per row), and its result is right.
TEST_F(SddmmRowDenseGpu, TheShippedModelDecidesAndTheResultIsRight) {
  for (const std::string spec : {"uniform:2048:1024", "uniform:40000:3"}) {
    test::SddmmCase c(rt(), spec, 32, next_seed());
    c.dp.fill_bytes(0xFF);
    const CallInfo call = rt().sddmm(c.ds, c.da, c.db, c.dp);
    rt().context().synchronize();
    EXPECT_EQ(call.decision->source, DecisionSource::Model) << spec;
    for (const Candidate& other : call.decision->candidates) {
      if (other.rejected_because.empty()) {
        EXPECT_LE(test::candidate(*call.decision, call.decision->variant).predicted_ms, other.predicted_ms) << spec << " " << other.variant;
      }
    }
    ASSERT_LE(c.error(), 1e-5) << spec;
  }
}

}  // namespace
}  // namespace sparsejit
