// The split of SpAMM's C among GPUs (plan/spamm_devices.hpp), on the CPU: kept products per
// tile row equal a brute-force count (counted on several cores for large maps), blocks for 2,
// 4 and 8 GPUs keep every block within 5% of the even share on norm maps shaped like the decay
// inputs', blocks follow uneven shares, and the shares that let GPUs starting at different
// times finish together.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

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

TEST(SpammDevices, KeptPerRowOfALargeMapCountedInPartsIsTheBruteForceCount) {
  // 300 tile rows: enough work for several threads (reference/parallel.hpp).
  const NormMap a = decay_map(300, false, 11), b = decay_map(300, false, 12);
  const double tau = tau_for(a, b, 0.07);
  EXPECT_EQ(kept_per_tile_row(a, b, tau), brute_force(a, b, tau));
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
            if (p > 0) {
              EXPECT_EQ(blocks[p].first, blocks[p - 1].end);
            }
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

TEST(SpammDevices, BlocksFollowUnevenShares) {
  const std::vector<int64_t> kept(400, 3);  // even work per row: the cuts fall at the shares' rows
  const std::vector<RowBlock> blocks = split_rows(kept, std::vector<double>{0.5, 0.2, 0.3, 0.0});
  ASSERT_EQ(blocks.size(), 4u);
  EXPECT_EQ(blocks[0].end, 200);
  EXPECT_EQ(blocks[1].end, 280);
  EXPECT_EQ(blocks[2].end, 400);
  EXPECT_EQ(blocks[3].first, 400);
  EXPECT_EQ(blocks[3].kept, 0);
  // Nothing kept: rows by share.
  const std::vector<RowBlock> none = split_rows(std::vector<int64_t>(10, 0), std::vector<double>{0.7, 0.3});
  EXPECT_EQ(none[0].end, 7);
  EXPECT_EQ(none[1].end, 10);
}

// Each busy GPU's finish (start + share · total · ms_per_kept) is the same; idle ones start
// after it.
void expect_finish_together(const std::vector<RankPace>& paces, int64_t total, const std::vector<double>& shares) {
  ASSERT_EQ(shares.size(), paces.size());
  double sum = 0, finish = -1;
  for (std::size_t r = 0; r < shares.size(); ++r) {
    sum += shares[r];
    if (shares[r] == 0) continue;
    const double end = paces[r].start_ms + shares[r] * double(total) * paces[r].ms_per_kept;
    if (finish < 0) finish = end;
    EXPECT_NEAR(end, finish, 1e-9 * finish) << "GPU " << r;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
  for (std::size_t r = 0; r < shares.size(); ++r) {
    if (shares[r] == 0) {
      EXPECT_GE(paces[r].start_ms, finish) << "GPU " << r;
    }
  }
}

TEST(SpammDevices, SharesLetGpusThatStartLateFinishTogether) {
  // Unmeasured: even shares.
  EXPECT_EQ(shares_to_finish_together(std::vector<RankPace>(4), 1000), std::vector<double>(4, 0.25));
  EXPECT_EQ(shares_to_finish_together({{0, 1e-3}, {5, 1e-3}}, 0), std::vector<double>(2, 0.5));
  // Equal starts and paces: even.
  const std::vector<double> even = shares_to_finish_together(std::vector<RankPace>(4, RankPace{0, 2e-4}), 1000000);
  for (double s : even) EXPECT_NEAR(s, 0.25, 1e-12);
  // Rank 0 holds the operands, the others wait 18 ms for theirs (a 132 ms product on one GPU).
  const std::vector<RankPace> held = {{0, 1.3e-6}, {18, 1.3e-6}, {18, 1.3e-6}, {18, 1.3e-6}};
  const std::vector<double> shares = shares_to_finish_together(held, 100000000);
  expect_finish_together(held, 100000000, shares);
  EXPECT_NEAR(shares[0] - shares[1], 18 / (1.3e-6 * 1e8), 1e-9);
  // A slower GPU takes less; one that could only start after the others are done takes none.
  const std::vector<RankPace> mixed = {{0, 1e-6}, {2, 2e-6}, {1000, 1e-6}};
  const std::vector<double> uneven = shares_to_finish_together(mixed, 10000000);
  expect_finish_together(mixed, 10000000, uneven);
  EXPECT_GT(uneven[1], 0.0);
  EXPECT_GT(uneven[0], uneven[1]);
  EXPECT_EQ(uneven[2], 0.0);
  // An unmeasured pace is the mean of the measured ones.
  const std::vector<double> filled = shares_to_finish_together({{0, 1e-6}, {0, 0}, {0, 3e-6}}, 3000);
  expect_finish_together({{0, 1e-6}, {0, 2e-6}, {0, 3e-6}}, 3000, filled);
}

// One call's timings of blocks over `kept` at a cost of row_ms per tile row and kept_ms per
// kept product, each GPU starting at starts[r] and its products' time scaled by noise[r].
std::vector<BlockTiming> timed(const std::vector<RowBlock>& blocks, const std::vector<double>& starts, double row_ms, double kept_ms,
                               const std::vector<double>& noise) {
  std::vector<BlockTiming> call;
  for (std::size_t r = 0; r < blocks.size(); ++r) {
    const int32_t rows = blocks[r].end - blocks[r].first;
    call.push_back({rows, blocks[r].kept, starts[r], (row_ms * rows + kept_ms * double(blocks[r].kept)) * noise[r]});
  }
  return call;
}

TEST(SpammDevices, PacesFitACostPerRowAndPerKeptProduct) {
  const std::vector<RowBlock> blocks = {{0, 40, 1000}, {40, 60, 3000}, {60, 80, 2500}, {80, 100, 500}};
  Paces paces;
  EXPECT_FALSE(paces.measured());
  paces.add(timed(blocks, {0, 1, 1, 1}, 0.05, 2e-3, {1, 1, 1, 1}));
  EXPECT_EQ(paces.calls(), 1);
  EXPECT_NEAR(paces.ms_per_row(), 0.05, 1e-12);
  EXPECT_NEAR(paces.ms_per_kept(), 2e-3, 1e-12);
  EXPECT_DOUBLE_EQ(paces.start_ms(1), 1.0);
  // Block 1: 1 + 20 · 0.05 + 3000 · 2e-3 = 8 ms, the last to finish.
  EXPECT_NEAR(finish_ms(paces, blocks), 8.0, 1e-9);
  // A second call weighs 1/2: the starts are the mean; the cost, the same in both, stays.
  paces.add(timed(blocks, {0, 3, 3, 3}, 0.05, 2e-3, {1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(paces.start_ms(2), 2.0);
  EXPECT_NEAR(paces.ms_per_kept(), 2e-3, 1e-12);
  // Times in proportion to the kept products alone: no cost per row.
  Paces kept_only;
  kept_only.add(timed(blocks, {0, 0, 0, 0}, 0.0, 1e-3, {1, 1, 1, 1}));
  EXPECT_NEAR(kept_only.ms_per_row(), 0.0, 1e-12);
  EXPECT_NEAR(kept_only.ms_per_kept(), 1e-3, 1e-12);
  // Even rows of even work cannot tell the terms apart: the kept products carry the cost.
  Paces proportional;
  proportional.add(timed({{0, 10, 100}, {10, 20, 100}}, {0, 0}, 0.1, 1e-2, {1, 1}));
  EXPECT_EQ(proportional.ms_per_row(), 0.0);
  EXPECT_NEAR(proportional.ms_per_kept(), 2e-2, 1e-12);
  EXPECT_THROW(paces.add(timed({blocks[0]}, {0}, 0.05, 2e-3, {1})), InvalidInputError);  // another GPU count
  EXPECT_THROW(paces.add(timed(blocks, {0, -1, 0, 0}, 0.05, 2e-3, {1, 1, 1, 1})), InvalidInputError);
  EXPECT_THROW(finish_ms(paces, {blocks[0]}), InvalidInputError);
}

TEST(SpammDevices, BlocksAreCutEvenThenByTheCostAndKeptWhileANewCutGainsLittle) {
  // The first 100 rows keep 2 products each, the other 300 keep 10 (a decay matrix's corner
  // keeps fewer); every row costs 0.1 ms besides 1e-2 ms per kept product.
  std::vector<int64_t> kept(400, 10);
  std::fill(kept.begin(), kept.begin() + 100, 2);
  const BlockCut even = cut_blocks(kept, 4, nullptr, {});
  EXPECT_EQ(even.source, CutSource::Even);
  EXPECT_EQ(even.shares, std::vector<double>(4, 0.25));
  Paces paces;
  paces.add(timed(even.blocks, {0, 0, 0, 0}, 0.1, 1e-2, {1, 1, 1, 1}));
  const BlockCut first = cut_blocks(kept, 4, &paces, even.blocks);
  EXPECT_EQ(first.source, CutSource::FinishTogether);
  // Each row costs 0.12 or 0.2 ms: 72 ms in all, 18 per GPU; block 0 (the even cut's 160 rows,
  // 24 ms) ends at row 130.
  EXPECT_EQ(first.blocks[0].end, 130);
  EXPECT_NEAR(first.predicted_ms, 18.0, 1e-6);
  EXPECT_LT(first.predicted_ms, 0.98 * finish_ms(paces, even.blocks));
  EXPECT_EQ(first.blocks[0].kept, 100 * 2 + 30 * 10);
  EXPECT_NEAR(first.shares[0], 500.0 / 3200.0, 1e-12);
  // Its blocks with one row moved end at most 0.2 ms later, within 2%: kept, counts recounted.
  std::vector<RowBlock> moved = first.blocks;
  moved[0].end += 1;
  moved[1].first += 1;
  moved[0].kept = moved[1].kept = -1;
  const BlockCut again = cut_blocks(kept, 4, &paces, moved);
  EXPECT_EQ(again.source, CutSource::Previous);
  EXPECT_EQ(again.blocks[0].end, 131);
  EXPECT_EQ(again.blocks[0].kept, 510);
  // A GPU whose operands arrive 4 ms late takes less.
  Paces late;
  late.add(timed(even.blocks, {0, 4, 4, 4}, 0.1, 1e-2, {1, 1, 1, 1}));
  const BlockCut sent = cut_blocks(kept, 4, &late, {});
  EXPECT_EQ(sent.blocks[0].end, 145);  // 21 ms: 100 rows of 0.12 and 45 of 0.2
  EXPECT_NEAR(sent.predicted_ms, 21.0, 0.2);  // (72 + 12) / 4, within a row's cost
  // Blocks over other rows (a problem of another size) are not comparable; paces of other GPUs are refused.
  EXPECT_EQ(cut_blocks(std::vector<int64_t>(300, 10), 4, &paces, moved).source, CutSource::FinishTogether);
  EXPECT_THROW(cut_blocks(kept, 2, &paces, {}), InvalidInputError);
}

TEST(SpammDevices, NoisyTimesOfEqualGpusSettleOnOneCut) {
  // Four equal GPUs whose products' times swing ±13% call to call: cut by each call's times
  // alone the blocks move most calls; by the cost fitted over the calls they settle.
  std::vector<int64_t> kept(512, 1000);
  for (std::size_t i = 0; i < 64; ++i) kept[i] = 200;  // the corner
  std::mt19937 random(7);
  std::uniform_real_distribution<double> swing(0.87, 1.13);
  Paces fitted;
  std::vector<RowBlock> last_only_blocks = cut_blocks(kept, 4, nullptr, {}).blocks, fitted_blocks = last_only_blocks;
  int last_only_recuts = 0, fitted_recuts = 0;
  for (int call = 1; call <= 40; ++call) {
    std::vector<double> noise(4);
    for (double& x : noise) x = swing(random);
    Paces last_only;
    last_only.add(timed(last_only_blocks, {0, 0, 0, 0}, 2e-2, 1e-5, noise));
    fitted.add(timed(fitted_blocks, {0, 0, 0, 0}, 2e-2, 1e-5, noise));
    const BlockCut by_last = cut_blocks(kept, 4, &last_only, last_only_blocks), by_fit = cut_blocks(kept, 4, &fitted, fitted_blocks);
    if (call > 5) {
      last_only_recuts += by_last.source == CutSource::FinishTogether;
      fitted_recuts += by_fit.source == CutSource::FinishTogether;
    }
    last_only_blocks = by_last.blocks;
    fitted_blocks = by_fit.blocks;
  }
  EXPECT_GE(last_only_recuts, 10);
  EXPECT_LE(fitted_recuts, 5);  // 1-4 of 35 over seeds 1-13; cut by the last call alone 17-24
  // And the settled blocks are within 3% of the noiseless finish-together cut.
  Paces exact;
  exact.add(timed(fitted_blocks, {0, 0, 0, 0}, 2e-2, 1e-5, {1, 1, 1, 1}));
  const double best = cut_blocks(kept, 4, &exact, {}).predicted_ms;
  EXPECT_LE(finish_ms(exact, fitted_blocks), 1.03 * best);
}

TEST(SpammDevices, EdgeCasesAndBadInput) {
  const std::vector<RowBlock> none = split_rows(std::vector<int64_t>(3, 0), 4);  // nothing kept, fewer rows than parts
  ASSERT_EQ(none.size(), 4u);
  EXPECT_EQ(none.back().end, 3);
  EXPECT_EQ(imbalance(none), 1.0);
  EXPECT_EQ(split_rows({5, 5}, 1).front().kept, 10);
  EXPECT_THROW(split_rows({1, 2}, 0), InvalidInputError);
  EXPECT_THROW(split_rows({1, -2}, 2), InvalidInputError);
  const auto refused = [](const std::vector<double>& shares, const std::string& words) {
    try {
      split_rows({1, 2, 3}, shares);
      ADD_FAILURE() << "no error for " << words;
    } catch (const InvalidInputError& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  refused({}, "no shares");
  refused({0.5, -0.1, 0.6}, "share -0.1");
  refused({0.5, std::nan(""), 0.5}, "share nan");
  refused({0.5, 0.4}, "sum to 0.9");
  EXPECT_THROW(shares_to_finish_together({}, 10), InvalidInputError);
  try {
    shares_to_finish_together({{0, 1}, {-3, 1}}, 10);
    ADD_FAILURE() << "no error for a negative start";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("start -3"), std::string::npos) << e.what();
  }
  NormMap a = decay_map(4, false, 5), b = decay_map(3, false, 6);
  EXPECT_THROW(kept_per_tile_row(a, b, 1.0), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit::plan
