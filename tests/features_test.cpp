// Matrix features on small hand-made matrices whose answers are worked out in the comments,
// plus a randomized comparison against brute-force counts.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <utility>

#include "inspect/unchecked.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

Csr<float> csr_from_rows(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& columns_per_row) {
  Csr<float> m;
  m.rows = rows;
  m.cols = cols;
  for (const auto& columns : columns_per_row) {
    m.col_idx.insert(m.col_idx.end(), columns.begin(), columns.end());
    m.row_ptr.push_back(int32_t(m.col_idx.size()));
  }
  m.values.assign(m.col_idx.size(), 1.0f);
  return m;
}

// 4 x 10, 12 nonzeros:
//   row 0: 0 1 2 5          gaps 1 1 3
//   row 1: (empty)
//   row 2: 4 9              gap 5
//   row 3: 0 2 3 7 8 9      gaps 2 1 4 1 1
Csr<float> four_by_ten() { return csr_from_rows(4, 10, {{0, 1, 2, 5}, {}, {4, 9}, {0, 2, 3, 7, 8, 9}}); }

// 16 x 16 with 8x8 tiles:
//   tile (0,0): (0,0) (1,1) (2,2) (7,7)       4 entries
//   tile (0,1): (0,8) (0,15)                  2 entries
//   tile (1,0): empty
//   tile (1,1): row 10 cols 8..15, (12,12)    9 entries
Csr<float> sixteen_square() {
  return csr_from_rows(16, 16,
                       {{0, 8, 15}, {1}, {2}, {}, {}, {}, {}, {7}, {}, {}, {8, 9, 10, 11, 12, 13, 14, 15}, {}, {12}, {}, {}, {}});
}

TEST(Features, BasicStatsOfFourByTen) {
  const BasicStats s = basic_stats(four_by_ten().pattern());
  EXPECT_EQ(s.rows, 4);
  EXPECT_EQ(s.cols, 10);
  EXPECT_EQ(s.nnz, 12);
  EXPECT_DOUBLE_EQ(s.density, 0.3);
  EXPECT_EQ(s.row_min, 0);
  EXPECT_EQ(s.row_max, 6);
  EXPECT_DOUBLE_EQ(s.row_mean, 3.0);
  // Lengths 4 0 2 6: squared deviations 1 9 1 9, variance 20 / 4 = 5.
  EXPECT_DOUBLE_EQ(s.row_std, std::sqrt(5.0));
  EXPECT_DOUBLE_EQ(s.row_cv, std::sqrt(5.0) / 3.0);
  EXPECT_EQ(s.empty_rows, 1);
}

TEST(Features, BasicStatsOfEmptyMatrices) {
  const BasicStats no_rows = basic_stats(csr_from_rows(0, 5, {}).pattern());
  EXPECT_EQ(no_rows.nnz, 0);
  EXPECT_EQ(no_rows.density, 0.0);
  EXPECT_EQ(no_rows.row_cv, 0.0);
  const BasicStats all_empty = basic_stats(csr_from_rows(3, 4, {{}, {}, {}}).pattern());
  EXPECT_EQ(all_empty.empty_rows, 3);
  EXPECT_EQ(all_empty.row_mean, 0.0);
  EXPECT_EQ(all_empty.row_cv, 0.0);
}

TEST(Features, ClusterBinBoundaries) {
  const std::vector<std::pair<int64_t, int>> expected = {
      {1, 0},       {2, 1},        {3, 1},        {4, 2},         {15, 2},         {16, 3},      {63, 3},
      {64, 4},      {255, 4},      {256, 5},      {262143, 9},    {262144, 10},    {1048575, 10}, {1048576, 11},
      {int64_t(1) << 30, 11}};
  for (const auto& [distance, bin] : expected) EXPECT_EQ(cluster_bin(distance), bin) << "distance " << distance;
  for (int bin = 0; bin < kClusterBins; ++bin) EXPECT_EQ(cluster_bin(cluster_bin_lower(bin)), bin);
  EXPECT_EQ(cluster_bin_lower(10), 262144);
  EXPECT_THROW(cluster_bin(0), InvalidInputError);
  EXPECT_THROW(cluster_bin_lower(kClusterBins), InvalidInputError);
}

TEST(Features, ClusteringBinsOfFourByTen) {
  // Gaps 1 1 3 | 5 | 2 1 4 1 1: five of 1, two in [2,3] (3, 2), two in [4,15] (5, 4).
  const ClusterBins bins = clustering_bins(four_by_ten().pattern(), 4);
  EXPECT_EQ(bins.distances, 9);
  EXPECT_EQ(bins.counts[0], 5);
  EXPECT_EQ(bins.counts[1], 2);
  EXPECT_EQ(bins.counts[2], 2);
  for (int b = 3; b < kClusterBins; ++b) EXPECT_EQ(bins.counts[std::size_t(b)], 0);
  EXPECT_DOUBLE_EQ(bins.fractions[0], 5.0 / 9.0);
  EXPECT_DOUBLE_EQ(bins.fractions[1], 2.0 / 9.0);
  EXPECT_DOUBLE_EQ(bins.fractions[2], 2.0 / 9.0);
  // Panels [0,3] [4,7] [8,9]: row 0 {0 1 2}{5}, row 2 {4}{9}, row 3 {0 2 3}{7}{8 9}.
  EXPECT_EQ(bins.panel_width, 4);
  EXPECT_EQ(bins.accumulations, 7);
  // One panel covers everything: one accumulation per non-empty row.
  EXPECT_EQ(clustering_bins(four_by_ten().pattern()).accumulations, 3);
}

TEST(Features, ClusteringBinsOfLongGaps) {
  // Gaps 262144 (bin 10), 786431 (bin 10: up to 1048575), 1048576 (bin 11).
  const Csr<float> m = csr_from_rows(2, 3000000, {{0, 262144, 1048575}, {5, 1048581}});
  const ClusterBins bins = clustering_bins(m.pattern());
  EXPECT_EQ(bins.distances, 3);
  EXPECT_EQ(bins.counts[10], 2);
  EXPECT_EQ(bins.counts[11], 1);
  // 256-column panels: every entry lands in its own panel.
  EXPECT_EQ(bins.accumulations, 5);
}

TEST(Features, ClusteringNeedsSortedRows) {
  const Csr<float> unsorted = csr_from_rows(2, 10, {{3, 1}, {}});
  EXPECT_THROW(clustering_bins(unsorted.pattern()), InvalidInputError);
  EXPECT_THROW(inspect(unsorted.pattern()), InvalidInputError);
  EXPECT_NO_THROW(bitmap_tiles(unsorted.pattern()));
}

TEST(Features, RowSegmentSplitOfFourByTen) {
  // Segment sizes at W = 4: row 0: 3 1, row 2: 1 1, row 3: 3 1 2.
  const SplitStats t2 = row_segment_split(four_by_ten().pattern(), 4, 2);
  EXPECT_EQ(t2.panel_width, 4);
  EXPECT_EQ(t2.threshold, 2);
  EXPECT_EQ(t2.panels, 3);
  EXPECT_EQ(t2.segments, 7);
  EXPECT_EQ(t2.heavy_segments, 3);  // 3, 3, 2
  EXPECT_EQ(t2.heavy_nnz, 8);
  EXPECT_DOUBLE_EQ(t2.heavy_fraction, 8.0 / 12.0);
  EXPECT_EQ(t2.light_rows, 3);  // rows 0 ({5}), 2, 3 ({7})
  EXPECT_EQ(t2.light_nnz, 4);

  const SplitStats t3 = row_segment_split(four_by_ten().pattern(), 4, 3);
  EXPECT_EQ(t3.heavy_segments, 2);
  EXPECT_EQ(t3.heavy_nnz, 6);
  EXPECT_EQ(t3.light_rows, 3);
  EXPECT_EQ(t3.light_nnz, 6);

  // One panel: rows of 4, 2 and 6 nonzeros; rows 0 and 3 are wholly heavy at T = 4.
  const SplitStats whole = row_segment_split(four_by_ten().pattern(), 10, 4);
  EXPECT_EQ(whole.panels, 1);
  EXPECT_EQ(whole.segments, 3);
  EXPECT_EQ(whole.heavy_segments, 2);
  EXPECT_EQ(whole.heavy_nnz, 10);
  EXPECT_EQ(whole.light_rows, 1);
  EXPECT_EQ(whole.light_nnz, 2);

  // 10 columns in panels of 3: ceil(10 / 3) = 4.
  EXPECT_EQ(row_segment_split(four_by_ten().pattern(), 3, 1).panels, 4);
  EXPECT_EQ(row_segment_split(four_by_ten().pattern(), 3, 1).heavy_nnz, 12);
}

using test::invalid_input_message;

TEST(Features, InvalidParametersNameTheValue) {
  const Csr<float> m = four_by_ten();
  EXPECT_NE(invalid_input_message([&] { row_segment_split(m.pattern(), 0, 2); }).find("panel width 0"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] { row_segment_split(m.pattern(), 4, -3); }).find("threshold -3"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] { clustering_bins(m.pattern(), -1); }).find("panel width -1"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] { bitmap_tiles(m.pattern(), 0); }).find("tile size 0"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] { tile_products(m.pattern(), m.pattern(), 8); }).find("4x10"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] { element_products(m.pattern(), m.pattern()); }).find("A.cols 10 != B.rows 4"), std::string::npos);
  EXPECT_NE(invalid_input_message([&] { tile_norms(Dense<float>(4, 4), 0); }).find("tile size 0"), std::string::npos);
  // A column out of range is reported, not read past.
  Csr<float> bad = four_by_ten();
  bad.col_idx[3] = 10;
  EXPECT_NE(invalid_input_message([&] { inspect(bad.pattern()); }).find("column index 10"), std::string::npos);
  EXPECT_THROW(bitmap_tiles(bad.pattern()), InvalidInputError);
  EXPECT_THROW(fingerprint(bad.pattern()), InvalidInputError);
}

TEST(Features, BitmapTilesOfSixteenSquare) {
  const TileStats t8 = bitmap_tiles(sixteen_square().pattern());
  EXPECT_EQ(t8.tile, 8);
  EXPECT_EQ(t8.tiles, 3);  // 4, 2, 9 entries
  EXPECT_DOUBLE_EQ(t8.nnz_median, 4.0);
  EXPECT_DOUBLE_EQ(t8.nnz_mean, 5.0);
  EXPECT_DOUBLE_EQ(t8.nnz_std, std::sqrt(26.0 / 3.0));  // deviations -1 -3 4
  EXPECT_DOUBLE_EQ(t8.bitmap_density, 5.0 / 64.0);

  // 4x4 tiles: {0,0 1,1 2,2} {7,7} {0,8} {0,15} {row 10 cols 8-11} {cols 12-15} {12,12}
  // hold 3 1 1 1 4 4 1: sorted 1 1 1 1 3 4 4, median 1.
  const TileStats t4 = bitmap_tiles(sixteen_square().pattern(), 4);
  EXPECT_EQ(t4.tiles, 7);
  EXPECT_DOUBLE_EQ(t4.nnz_median, 1.0);
  EXPECT_DOUBLE_EQ(t4.nnz_mean, 15.0 / 7.0);
  EXPECT_DOUBLE_EQ(t4.bitmap_density, 15.0 / 7.0 / 16.0);
}

// Issue 27: a matrix of 2147483641-2147483647 rows made the tile walk step its int32 first
// row past INT32_MAX and crash. The row offsets of an empty INT32_MAX-row matrix are 8 GiB of
// zeros, mapped read-only from the zero page; a 2^20-row tile visits 2048 of them, the
// fingerprint all of them (a few seconds).
TEST(Features, TileWalkAndFingerprintOverInt32MaxRowsEnd) {
  const int32_t rows = std::numeric_limits<int32_t>::max();
  const std::size_t bytes = (std::size_t(rows) + 1) * sizeof(int32_t);
  void* zeros = mmap(nullptr, bytes, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (zeros == MAP_FAILED) GTEST_SKIP() << "cannot map 8 GiB of address space";
  const int32_t no_columns = 0;
  const PatternView empty{rows, 3, static_cast<const int32_t*>(zeros), &no_columns};
  const TileStats tiles = inspect_detail::bitmap_tiles(empty, 1 << 20);
  int64_t visited = 0;
  inspect_detail::for_each_tile(empty, (1 << 30) + 1, [&](int32_t, int32_t, int32_t) { ++visited; });
  // The fingerprint reads every offset: its int32 `r <= rows` loop never ended at INT32_MAX.
  const uint64_t fingerprint = inspect_detail::fingerprint(empty);
  const uint64_t no_rows = inspect_detail::fingerprint(PatternView{0, 3, static_cast<const int32_t*>(zeros), &no_columns});
  munmap(zeros, bytes);
  EXPECT_EQ(tiles.tiles, 0);
  EXPECT_EQ(visited, 0);
  EXPECT_NE(fingerprint, no_rows);
}

TEST(Features, BitmapTilesWithPartialEdgeTiles) {
  // 4 x 10 in 8x8 tiles: columns 0-7 hold 9 entries, columns 8-9 hold 3 (row 2: 9, row 3: 8 9).
  const TileStats t = bitmap_tiles(four_by_ten().pattern());
  EXPECT_EQ(t.tiles, 2);
  EXPECT_DOUBLE_EQ(t.nnz_median, 6.0);  // even count: (3 + 9) / 2
  EXPECT_DOUBLE_EQ(t.nnz_mean, 6.0);
  EXPECT_DOUBLE_EQ(t.nnz_std, 3.0);
  const TileStats empty = bitmap_tiles(csr_from_rows(3, 3, {{}, {}, {}}).pattern());
  EXPECT_EQ(empty.tiles, 0);
  EXPECT_EQ(empty.bitmap_density, 0.0);
}

TEST(Features, ProductCountsOfSixteenSquared) {
  const Csr<float> a = sixteen_square();
  // Row lengths: 0:3 1:1 2:1 7:1 10:8 12:1. Entries a_ik add len(row k):
  // row 0: k=0,8,15 -> 3+0+0; rows 1,2,7: 1 each; row 10: k=8..15 -> len(10) + len(12) = 9; row 12: 1.
  EXPECT_EQ(element_products(a.pattern(), a.pattern()), 16);
  // A tiles (0,0) (0,1) (1,1); tile row 0 of B has 2 tiles, tile row 1 has 1: 2 + 1 + 1.
  EXPECT_EQ(tile_products(a.pattern(), a.pattern()), 4);
}

TEST(Features, ProductCountsOfRectangularPair) {
  // B is 10 x 5: row 0 {0 4}, row 5 {1}, row 9 {0 1 2 3 4}.
  const Csr<float> b = csr_from_rows(10, 5, {{0, 4}, {}, {}, {}, {}, {1}, {}, {}, {}, {0, 1, 2, 3, 4}});
  // Row 0 of A: 2+0+0+1, row 2: 0+5, row 3: 2+0+0+0+0+5.
  EXPECT_EQ(element_products(four_by_ten().pattern(), b.pattern()), 15);
  // A tiles (0,0) (0,1); B tile rows 0 and 1 hold one tile each.
  EXPECT_EQ(tile_products(four_by_ten().pattern(), b.pattern()), 2);
}

// A (4x4) and B (4x3) in 2x2 tiles, the tile norms chosen whole:
//   A: |1 2|1 0|     norms 5 1        B: |1 0|3|    norms 1 5
//      |2 4|0 0|           2 3           |0 0|4|          2 1
//      |2 0|1 2|                         |0 2|1|
//      |0 0|2 0|                         |0 0|0|
// Products ||A_ik||·||B_kj|| over (i,k,j): 5 25 2 1 | 2 10 6 3.
Dense<float> dense_from(int32_t rows, int32_t cols, const std::vector<float>& values) {
  Dense<float> d(rows, cols);
  d.data = values;
  return d;
}
Dense<float> spamm_a() { return dense_from(4, 4, {1, 2, 1, 0, 2, 4, 0, 0, 2, 0, 1, 2, 0, 0, 2, 0}); }
Dense<float> spamm_b() { return dense_from(4, 3, {1, 0, 3, 0, 0, 4, 0, 2, 1, 0, 0, 0}); }

TEST(Features, TileNormsOfTwoByTwoTiles) {
  const NormMap a = tile_norms(spamm_a(), 2);
  EXPECT_EQ(a.tile, 2);
  EXPECT_EQ(a.tile_rows, 2);
  EXPECT_EQ(a.tile_cols, 2);
  EXPECT_EQ(a.norms, (std::vector<double>{5, 1, 2, 3}));
  const NormMap b = tile_norms(spamm_b(), 2);  // the last tile column is one column wide
  EXPECT_EQ(b.tile_cols, 2);
  EXPECT_EQ(b.norms, (std::vector<double>{1, 5, 2, 1}));
  EXPECT_EQ(b.at(0, 1), 5.0);
  // The values are exact in 16 bits, so the norms are the same.
  EXPECT_EQ(tile_norms(cast<half>(spamm_a()), 2).norms, a.norms);
  EXPECT_EQ(tile_norms(cast<bfloat16>(spamm_b()), 2).norms, b.norms);
  EXPECT_EQ(tile_norms(cast<double>(spamm_a()), 4).norms, (std::vector<double>{std::sqrt(39.0)}));
}

TEST(Features, ValidRatioCountsTriplesAtOrAboveTau) {
  const NormMap a = tile_norms(spamm_a(), 2), b = tile_norms(spamm_b(), 2);
  EXPECT_DOUBLE_EQ(valid_ratio(a, b, 1.5), 7.0 / 8.0);  // only 1·1 = 1 is below
  EXPECT_DOUBLE_EQ(valid_ratio(a, b, 2.0), 7.0 / 8.0);  // the two products equal to 2 count
  EXPECT_DOUBLE_EQ(valid_ratio(a, b, 2.5), 5.0 / 8.0);
  EXPECT_DOUBLE_EQ(valid_ratio(a, b, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(valid_ratio(a, b, 25.0), 1.0 / 8.0);
  EXPECT_DOUBLE_EQ(valid_ratio(a, b, 26.0), 0.0);
}

TEST(Features, ValidRatioRejectsMismatchedMaps) {
  const NormMap a = tile_norms(spamm_a(), 2);
  const NormMap three_tile_rows = tile_norms(Dense<float>(6, 6, 1.0f), 2);
  EXPECT_NE(invalid_input_message([&] { valid_ratio(a, three_tile_rows, 1.0); }).find("2 tile columns but B has 3 tile rows"),
            std::string::npos);
  EXPECT_THROW(valid_ratio(a, tile_norms(spamm_b(), 1), 1.0), InvalidInputError);
  EXPECT_THROW(valid_ratio(a, a, std::nan("")), InvalidInputError);
  NormMap short_map = a;
  short_map.norms.pop_back();
  EXPECT_THROW(valid_ratio(short_map, a, 1.0), InvalidInputError);
}

TEST(Features, NormMapSummaryJson) {
  const nlohmann::json j = to_json(tile_norms(spamm_a(), 2));
  EXPECT_EQ(j.at("tile"), 2);
  EXPECT_EQ(j.at("tile_rows"), 2);
  EXPECT_EQ(j.at("tile_cols"), 2);
  EXPECT_DOUBLE_EQ(j.at("norm_min").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(j.at("norm_max").get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j.at("norm_mean").get<double>(), 11.0 / 4.0);
  EXPECT_DOUBLE_EQ(j.at("norm_total").get<double>(), std::sqrt(39.0));
}

TEST(Features, FingerprintIsEqualForEqualPatternsAndChangesWithAnyIndex) {
  const Csr<float> m = sixteen_square();
  const uint64_t original = fingerprint(m.pattern());
  Csr<float> copy = sixteen_square();
  copy.values.assign(copy.values.size(), 7.0f);  // values are not part of the pattern
  EXPECT_EQ(fingerprint(copy.pattern()), original);

  std::set<uint64_t> seen = {original};
  for (std::size_t e = 0; e < m.col_idx.size(); ++e) {
    Csr<float> changed = m;
    changed.col_idx[e] = (changed.col_idx[e] + 1) % changed.cols;
    EXPECT_TRUE(seen.insert(fingerprint(changed.pattern())).second) << "column index " << e;
  }
  // Moving the boundary between rows r-1 and r changes only row_ptr[r].
  for (int32_t r = 1; r < m.rows; ++r) {
    Csr<float> changed = m;
    if (changed.row_ptr[r] > changed.row_ptr[r - 1]) --changed.row_ptr[r];
    else if (changed.row_ptr[r] < changed.row_ptr[r + 1]) ++changed.row_ptr[r];
    else continue;
    EXPECT_TRUE(seen.insert(fingerprint(changed.pattern())).second) << "row offset " << r;
  }
  Csr<float> wider = m;
  wider.cols += 1;
  EXPECT_TRUE(seen.insert(fingerprint(wider.pattern())).second);
  EXPECT_EQ(fingerprint_hex(0x1234abcdull), "0x000000001234abcd");
}

TEST(Features, InspectJsonAndDescription) {
  const Csr<float> m = four_by_ten();
  const Features f = inspect(m.pattern());
  EXPECT_EQ(f.basic.nnz, 12);
  EXPECT_EQ(f.clustering.panel_width, kDefaultPanelWidth);
  EXPECT_EQ(f.clustering.accumulations, 3);
  EXPECT_EQ(f.tiles.tiles, 2);
  EXPECT_EQ(f.fingerprint, fingerprint(m.pattern()));

  const nlohmann::json j = to_json(f);
  EXPECT_EQ(j.at("rows"), 4);
  EXPECT_EQ(j.at("cols"), 10);
  EXPECT_EQ(j.at("nnz"), 12);
  EXPECT_DOUBLE_EQ(j.at("density").get<double>(), 0.3);
  EXPECT_EQ(j.at("empty_rows"), 1);
  EXPECT_DOUBLE_EQ(j.at("row_std").get<double>(), std::sqrt(5.0));
  EXPECT_EQ(j.at("cluster_distances"), 9);
  EXPECT_EQ(j.at("cluster_count_0"), 5);
  EXPECT_EQ(j.at("cluster_count_11"), 0);
  EXPECT_DOUBLE_EQ(j.at("cluster_frac_2").get<double>(), 2.0 / 9.0);
  EXPECT_EQ(j.at("accumulations"), 3);
  EXPECT_EQ(j.at("accumulation_panel_width"), 256);
  EXPECT_EQ(j.at("tile_size"), 8);
  EXPECT_EQ(j.at("tiles"), 2);
  EXPECT_DOUBLE_EQ(j.at("bitmap_density").get<double>(), 6.0 / 64.0);
  EXPECT_EQ(j.at("fingerprint"), fingerprint_hex(f.fingerprint));
  EXPECT_EQ(j.size(), 10u + 1u + 2u * kClusterBins + 2u + 6u + 1u);

  const nlohmann::json split = to_json(row_segment_split(m.pattern(), 4, 2));
  EXPECT_EQ(split.at("heavy_segments"), 3);
  EXPECT_EQ(split.at("light_rows"), 3);
  EXPECT_EQ(split.size(), 9u);

  const std::string text = describe(f);
  EXPECT_NE(text.find("4 x 10, 12 nonzeros"), std::string::npos) << text;
  EXPECT_NE(text.find("[1] 55.6%"), std::string::npos) << text;
  EXPECT_NE(text.find("[4-15] 22.2%"), std::string::npos) << text;
  EXPECT_NE(text.find(fingerprint_hex(f.fingerprint)), std::string::npos) << text;
}

// Random patterns: tile, split and product counts against sets and maps built entry by entry.
TEST(Features, RandomPatternsAgreeWithBruteForce) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto random_pattern = [&](int32_t rows, int32_t cols) {
    std::vector<std::vector<int32_t>> columns(static_cast<std::size_t>(rows));
    std::bernoulli_distribution keep(0.15);
    for (auto& row : columns)
      for (int32_t c = 0; c < cols; ++c)
        if (keep(rng)) row.push_back(c);
    return csr_from_rows(rows, cols, columns);
  };
  const Csr<float> a = random_pattern(37, 53), b = random_pattern(53, 29);
  const int32_t tile = 8, width = 7, threshold = 2;

  std::map<std::pair<int32_t, int32_t>, int64_t> a_tiles, segments;
  std::map<int32_t, int64_t> b_tiles_per_tile_row;
  std::set<std::pair<int32_t, int32_t>> b_tiles;
  for (int32_t r = 0; r < a.rows; ++r)
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
      ++a_tiles[{r / tile, a.col_idx[e] / tile}];
      ++segments[{r, a.col_idx[e] / width}];
    }
  for (int32_t r = 0; r < b.rows; ++r)
    for (int32_t e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e)
      if (b_tiles.insert({r / tile, b.col_idx[e] / tile}).second) ++b_tiles_per_tile_row[r / tile];

  double mean = double(a.nnz()) / double(a_tiles.size());
  double squared_deviations = 0;
  int64_t tile_product_count = 0;
  for (const auto& [coordinates, entries] : a_tiles) {
    squared_deviations += (double(entries) - mean) * (double(entries) - mean);
    tile_product_count += b_tiles_per_tile_row[coordinates.second];
  }
  const TileStats t = bitmap_tiles(a.pattern(), tile);
  EXPECT_EQ(t.tiles, int64_t(a_tiles.size()));
  EXPECT_NEAR(t.nnz_std, std::sqrt(squared_deviations / double(a_tiles.size())), 1e-12);
  EXPECT_EQ(tile_products(a.pattern(), b.pattern(), tile), tile_product_count);

  int64_t heavy_segments = 0, heavy_nnz = 0;
  std::set<int32_t> light_rows;
  for (const auto& [row_panel, entries] : segments) {
    if (entries >= threshold) {
      ++heavy_segments;
      heavy_nnz += entries;
    } else {
      light_rows.insert(row_panel.first);
    }
  }
  const SplitStats s = row_segment_split(a.pattern(), width, threshold);
  EXPECT_EQ(s.segments, int64_t(segments.size()));
  EXPECT_EQ(clustering_bins(a.pattern(), width).accumulations, int64_t(segments.size()));
  EXPECT_EQ(s.heavy_segments, heavy_segments);
  EXPECT_EQ(s.heavy_nnz, heavy_nnz);
  EXPECT_EQ(s.light_rows, int64_t(light_rows.size()));

  int64_t products = 0;
  for (const int32_t k : a.col_idx) products += b.row_ptr[k + 1] - b.row_ptr[k];
  EXPECT_EQ(element_products(a.pattern(), b.pattern()), products);
}

// Inspecting every shared matrix needs the Matrix Market reader (runtime/io); the integrator
// adds that test once both are merged.

}  // namespace
}  // namespace sparsejit
