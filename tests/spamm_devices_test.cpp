// The split of SpAMM's C among GPUs (plan/spamm_devices.hpp), on the CPU: kept products per
// tile row equal a brute-force count, and blocks for 2, 4 and 8 GPUs keep every block within
// 5% of the even share on norm maps shaped like the decay inputs' (and random ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "plan/spamm_devices.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::plan {
namespace {

// A tile-norm map of a decay matrix: norms fall with the tile distance |i - j| (algebraic or
// exponential), perturbed by ±25%, like the maps of the bench's inputs at N = tiles · 64.
NormMap decay_map(int32_t tiles, bool exponential, uint64_t seed) {
  NormMap m;
  m.tile = 64;
  m.tile_rows = m.tile_cols = tiles;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(0.75, 1.25);
  for (int32_t i = 0; i < tiles; ++i)
    for (int32_t j = 0; j < tiles; ++j) {
      const double d = std::abs(i - j);
      m.norms.push_back((exponential ? std::pow(0.9, d) : 6.4 / (std::pow(64 * d, 0.1) + 1)) * jitter(rng));
    }
  return m;
}

std::vector<int64_t> brute_force(const NormMap& a, const NormMap& b, double tau) {
  std::vector<int64_t> kept(std::size_t(a.tile_rows), 0);
  for (int32_t i = 0; i < a.tile_rows; ++i)
    for (int32_t k = 0; k < a.tile_cols; ++k)
      for (int32_t j = 0; j < b.tile_cols; ++j) kept[std::size_t(i)] += a.at(i, k) * b.at(k, j) >= tau;
  return kept;
}

// τ keeping about `share` of the products (the quantile of a million sampled triples).
double tau_for(const NormMap& a, const NormMap& b, double share) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int32_t> row(0, a.tile_rows - 1), inner(0, a.tile_cols - 1), col(0, b.tile_cols - 1);
  std::vector<double> products(1 << 20);
  for (double& p : products) {
    const int32_t k = inner(rng);
    p = a.at(row(rng), k) * b.at(k, col(rng));
  }
  std::sort(products.begin(), products.end());
  return products[std::size_t((1 - share) * double(products.size()))];
}

TEST(SpammDevices, KeptPerRowIsTheBruteForceCount) {
  for (bool exponential : {false, true}) {
    const NormMap a = decay_map(40, exponential, 1), b = decay_map(40, exponential, 2);
    for (double share : {0.01, 0.05, 0.3, 1.0}) {
      const double tau = share == 1.0 ? 0.0 : tau_for(a, b, share);
      EXPECT_EQ(kept_per_tile_row(a, b, tau), brute_force(a, b, tau)) << share;
    }
  }
}

TEST(SpammDevices, BlocksOfTwoFourAndEightGpusAreWithinFivePercent) {
  // N = 16384 and 32768 at tile 64: 256 and 512 tile rows; shares 5% and 10% as the bench's.
  for (int32_t tiles : {256, 512})
    for (bool exponential : {false, true}) {
      const NormMap a = decay_map(tiles, exponential, 3), b = decay_map(tiles, exponential, 4);
      for (double share : {0.05, 0.1}) {
        const std::vector<int64_t> kept = kept_per_tile_row(a, b, tau_for(a, b, share));
        for (int gpus : {2, 4, 8}) {
          const std::vector<RowBlock> blocks = split_rows(kept, gpus);
          ASSERT_EQ(int(blocks.size()), gpus);
          EXPECT_EQ(blocks.front().first, 0);
          EXPECT_EQ(blocks.back().end, tiles);
          int64_t total = 0;
          for (std::size_t p = 0; p < blocks.size(); ++p) {
            if (p > 0) EXPECT_EQ(blocks[p].first, blocks[p - 1].end);
            total += blocks[p].kept;
          }
          int64_t all = 0;
          for (int64_t x : kept) all += x;
          EXPECT_EQ(total, all);
          EXPECT_LE(imbalance(blocks), 1.05) << tiles << " tiles, " << gpus << " GPUs, share " << share << (exponential ? " exp" : " alg");
        }
      }
    }
}

TEST(SpammDevices, EvenRowsAreNotEvenWork) {
  // Work piled in the first rows: the blocks follow the work, not the row count.
  std::vector<int64_t> kept(100, 1);
  for (int r = 0; r < 10; ++r) kept[std::size_t(r)] = 100;
  const std::vector<RowBlock> blocks = split_rows(kept, 2);
  EXPECT_EQ(blocks[0].end, 5);  // 500 of 1090 kept, the cut nearest 545 (600 after a sixth row)
  EXPECT_EQ(blocks[1].kept, 590);
}

TEST(SpammDevices, EdgeCasesAndBadInput) {
  const std::vector<RowBlock> none = split_rows(std::vector<int64_t>(3, 0), 4);  // nothing kept, fewer rows than parts
  ASSERT_EQ(none.size(), 4u);
  EXPECT_EQ(none.back().end, 3);
  EXPECT_EQ(imbalance(none), 1.0);
  EXPECT_EQ(split_rows({5, 5}, 1).front().kept, 10);
  EXPECT_THROW(split_rows({1, 2}, 0), InvalidInputError);
  EXPECT_THROW(split_rows({1, -2}, 2), InvalidInputError);
  NormMap a = decay_map(4, false, 5), b = decay_map(3, false, 6);
  EXPECT_THROW(kept_per_tile_row(a, b, 1.0), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit::plan
