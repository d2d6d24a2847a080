// The SDDMM tile format (formats/sddmm_tiles.hpp): the documented example by hand, and on
// generated matrices a CPU walk of the tiles the way sddmm_tiled.cu walks them must give
// reference::sddmm exactly (same double products, summed in the same order per nonzero).
#include <gtest/gtest.h>

#include <cmath>

#include "formats/sddmm_tiles.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

Csr<double> example() {
  Coo<double> coo;
  coo.rows = 4;
  coo.cols = 8;
  coo.row_idx = {0, 0, 1, 3, 3};
  coo.col_idx = {1, 6, 2, 0, 7};
  coo.values.assign(5, 1.0);
  return to_csr(coo);
}

int32_t pack(int32_t row, int32_t col) { return (row << 16) | col; }

TEST(SddmmTiles, PlainExampleByHand) {
  const Csr<double> s = example();
  const auto t = formats::build_sddmm_tiles(s.pattern(), 2, 4, false);
  EXPECT_EQ(t.tile_row, (std::vector<int32_t>{0, 0, 2, 2}));
  EXPECT_EQ(t.tile_col, (std::vector<int32_t>{0, 4, 0, 4}));
  EXPECT_EQ(t.tile_width, (std::vector<int32_t>{4, 4, 4, 4}));
  EXPECT_EQ(t.tile_ptr, (std::vector<int32_t>{0, 2, 3, 4, 5}));
  EXPECT_EQ(t.position, (std::vector<int32_t>{0, 2, 1, 3, 4}));
  EXPECT_EQ(t.local, (std::vector<int32_t>{pack(0, 1), pack(1, 2), pack(0, 2), pack(1, 0), pack(1, 3)}));
  EXPECT_TRUE(t.staged_cols.empty());
  EXPECT_EQ(t.staged_rows(), 16);
}

TEST(SddmmTiles, ReindexedExampleByHand) {
  const Csr<double> s = example();
  const auto t = formats::build_sddmm_tiles(s.pattern(), 2, 4, true);
  EXPECT_EQ(t.staged_cols, (std::vector<int32_t>{1, 2, 6, 0, 7}));
  EXPECT_EQ(t.tile_row, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(t.tile_col, (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(t.tile_width, (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(t.tile_ptr, (std::vector<int32_t>{0, 3, 5}));
  EXPECT_EQ(t.position, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(t.local, (std::vector<int32_t>{pack(0, 0), pack(0, 2), pack(1, 1), pack(1, 0), pack(1, 1)}));
  EXPECT_EQ(t.staged_rows(), 5);
}

TEST(SddmmTiles, BadEdgesNameTheValue) {
  const Csr<double> s = example();
  try {
    formats::build_sddmm_tiles(s.pattern(), 0, 4, false);
    FAIL();
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("tile_rows = 0"), std::string::npos) << e.what();
  }
  EXPECT_THROW(formats::build_sddmm_tiles(s.pattern(), 2, 65537, true), InvalidInputError);
}

// P computed by walking the tiles: the B row of a staged column is the reindexed column or
// the tile's first column plus the local column.
std::vector<double> walk_tiles(const formats::SddmmTiles& t, const Csr<double>& s, const Dense<double>& a,
                               const Dense<double>& b) {
  std::vector<double> p(s.values.size(), std::nan(""));
  for (int64_t tile = 0; tile < t.tiles(); ++tile) {
    for (int32_t i = t.tile_ptr[tile]; i < t.tile_ptr[tile + 1]; ++i) {
      const int32_t local_row = t.local[i] >> 16, local_col = t.local[i] & 0xffff;
      EXPECT_LT(local_row, t.tile_rows);
      EXPECT_LT(local_col, t.tile_width[tile]);
      if (local_col >= t.tile_width[tile]) return p;
      const int32_t row = t.tile_row[tile] + local_row;
      const int32_t col = t.reindexed ? t.staged_cols[t.tile_col[tile] + local_col] : t.tile_col[tile] + local_col;
      EXPECT_EQ(col, s.col_idx[t.position[i]]);
      double dot = 0;
      for (int32_t k = 0; k < a.cols; ++k) dot += a.at(row, k) * b.at(col, k);
      EXPECT_TRUE(std::isnan(p[t.position[i]])) << "position " << t.position[i] << " appears twice";
      p[t.position[i]] = s.values[t.position[i]] * dot;
    }
  }
  return p;
}

TEST(SddmmTiles, WalkingTheTilesReproducesTheReference) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed=" + std::to_string(seed));
  std::vector<Csr<double>> matrices = {generate::from_spec("rmat:2048:30000", seed), generate::uniform(300, 1700, 40, seed),
                                       generate::from_spec("band:1000:16:40", seed)};
  Csr<double> holes = generate::uniform(257, 129, 3, seed);  // rows 1 and 200 emptied
  for (int32_t r : {1, 200}) {
    const int32_t len = holes.row_ptr[r + 1] - holes.row_ptr[r];
    holes.col_idx.erase(holes.col_idx.begin() + holes.row_ptr[r], holes.col_idx.begin() + holes.row_ptr[r + 1]);
    holes.values.erase(holes.values.begin() + holes.row_ptr[r], holes.values.begin() + holes.row_ptr[r + 1]);
    for (int32_t q = r + 1; q <= holes.rows; ++q) holes.row_ptr[q] -= len;
  }
  matrices.push_back(holes);
  for (const auto& s : matrices) {
    Dense<double> a(s.rows, 5), b(s.cols, 5);
    generate::fill_random(a, seed + 1);
    generate::fill_random(b, seed + 2);
    Csr<double> expected;
    reference::sddmm(s, a, b, expected);
    for (const auto& [ti, tj] : std::vector<std::pair<int32_t, int32_t>>{{1, 1}, {7, 13}, {64, 64}, {4096, 32}}) {
      for (bool reindexed : {false, true}) {
        SCOPED_TRACE(std::to_string(s.rows) + "x" + std::to_string(s.cols) + " Ti=" + std::to_string(ti) +
                     " Tj=" + std::to_string(tj) + (reindexed ? " reindexed" : " plain"));
        const auto t = formats::build_sddmm_tiles(s.pattern(), ti, tj, reindexed);
        EXPECT_EQ(int64_t(t.local.size()), int64_t(s.col_idx.size()));
        const auto got = walk_tiles(t, s, a, b);
        for (std::size_t e = 0; e < got.size(); ++e) ASSERT_NEAR(got[e], expected.values[e], 1e-12) << "nonzero " << e;
        if (reindexed) {
          EXPECT_LE(t.staged_rows(), int64_t(s.col_idx.size()));  // no staged row unused
        }
      }
    }
  }
}

}  // namespace
}  // namespace sparsejit
