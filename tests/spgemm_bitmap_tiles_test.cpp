// formats/spgemm_bitmap_tiles (bitmap_tc's operands): the header's example, and on generated
// patterns (unsorted rows and a duplicate column included) every entry found again through its
// tile's bitmap and its slot, tiles in tile-row order with ascending tile columns; and the
// SpGEMM features' tile counts against a count over the tiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <utility>

#include "formats/spgemm_bitmap_tiles.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit {
namespace {

using formats::BitmapTiles;
using formats::build_bitmap_tiles;

Csr<double> example() {
  Csr<double> m;
  m.rows = 3;
  m.cols = 10;
  m.row_ptr = {0, 2, 2, 4};
  m.col_idx = {1, 9, 0, 2};
  m.values.assign(4, 1.0);
  return m;
}

TEST(SpgemmBitmapTiles, TheHeadersExample) {
  const BitmapTiles t = build_bitmap_tiles(example().pattern());
  EXPECT_EQ(t.tile_rows, 1);
  EXPECT_EQ(t.tile_cols, 2);
  EXPECT_EQ(t.row_ptr, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(t.tile_row, (std::vector<int32_t>{0, 0}));
  EXPECT_EQ(t.tile_col, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(t.bits, (std::vector<uint64_t>{(1ull << 1) | (1ull << 16) | (1ull << 18), 1ull << 1}));
  EXPECT_EQ(t.offset, (std::vector<int32_t>{0, 3, 4}));
  EXPECT_EQ(t.slot, (std::vector<int32_t>{0, 3, 1, 2}));
  EXPECT_EQ(t.packed(), 4);
}

// Every entry's (row, column) from its tile and slot: the tile holding the slot, the bit of
// the slot's rank among the tile's set bits.
void expect_entries_found_again(const Csr<double>& m) {
  const BitmapTiles t = build_bitmap_tiles(m.pattern());
  ASSERT_EQ(t.row_ptr.size(), std::size_t(t.tile_rows) + 1);
  ASSERT_EQ(t.offset.size(), t.bits.size() + 1);
  for (int32_t i = 0; i < t.tile_rows; ++i)
    for (int32_t u = t.row_ptr[std::size_t(i)]; u < t.row_ptr[std::size_t(i) + 1]; ++u) {
      EXPECT_EQ(t.tile_row[std::size_t(u)], i);
      if (u > t.row_ptr[std::size_t(i)]) {
        EXPECT_LT(t.tile_col[std::size_t(u) - 1], t.tile_col[std::size_t(u)]);
      }
      EXPECT_EQ(t.offset[std::size_t(u) + 1] - t.offset[std::size_t(u)], __builtin_popcountll(t.bits[std::size_t(u)]));
    }
  std::map<std::pair<int32_t, int32_t>, int32_t> slot_of;  // (row, col) -> slot: duplicates share one
  for (int32_t r = 0; r < m.rows; ++r)
    for (int32_t e = m.row_ptr[r]; e < m.row_ptr[r + 1]; ++e) {
      const int32_t slot = t.slot[std::size_t(e)];
      const auto tile = std::size_t(std::upper_bound(t.offset.begin(), t.offset.end(), slot) - t.offset.begin() - 1);
      ASSERT_LT(tile, t.bits.size());
      uint64_t bits = t.bits[tile];
      for (int32_t rank = slot - t.offset[tile]; rank > 0; --rank) bits &= bits - 1;  // drop the lower set bits
      const int bit = __builtin_ctzll(bits);
      EXPECT_EQ(t.tile_row[tile] * 8 + bit / 8, r) << "entry " << e;
      EXPECT_EQ(t.tile_col[tile] * 8 + bit % 8, m.col_idx[e]) << "entry " << e;
      const auto [it, fresh] = slot_of.emplace(std::make_pair(r, m.col_idx[e]), slot);
      if (!fresh) {
        EXPECT_EQ(it->second, slot) << "a duplicate column gets its first entry's slot";
      }
    }
  EXPECT_EQ(t.packed(), int64_t(slot_of.size()));  // one packed value per distinct (row, column)
}

TEST(SpgemmBitmapTiles, EveryEntryIsFoundAgainThroughItsSlot) {
  expect_entries_found_again(generate::from_spec("rmat:3000:30000", 3));
  expect_entries_found_again(generate::from_spec("band:1001:7:20", 4));
  Csr<double> unsorted = generate::uniform(203, 517, 9, 5);
  for (int32_t r = 0; r < unsorted.rows; ++r)
    std::reverse(unsorted.col_idx.begin() + unsorted.row_ptr[r], unsorted.col_idx.begin() + unsorted.row_ptr[r + 1]);
  unsorted.col_idx[1] = unsorted.col_idx[0];  // row 0 names a column twice
  expect_entries_found_again(unsorted);
}

TEST(SpgemmBitmapTiles, AMalformedPatternIsRefused) {
  Csr<double> m = example();
  m.col_idx[1] = 10;  // past the 10 columns
  EXPECT_THROW(build_bitmap_tiles(m.pattern()), InvalidInputError);
}

// The features' tile counts: A's and B's tiles, and per tile of A the tiles of B's tile row.
TEST(SpgemmBitmapTiles, TheFeaturesCountTilesAndTileProducts) {
  const Csr<double> a = generate::uniform(300, 200, 6, 7), b = generate::uniform(200, 90, 4, 8);
  const BitmapTiles ta = build_bitmap_tiles(a.pattern()), tb = build_bitmap_tiles(b.pattern());
  int64_t tile_products = 0;
  for (std::size_t u = 0; u < ta.tile_col.size(); ++u)
    tile_products += tb.row_ptr[std::size_t(ta.tile_col[u]) + 1] - tb.row_ptr[std::size_t(ta.tile_col[u])];
  const SpgemmFeatures f = spgemm_features(a.pattern(), b.pattern());
  EXPECT_EQ(f.a_tiles, ta.tiles());
  EXPECT_EQ(f.b_tiles, tb.tiles());
  EXPECT_EQ(f.tile_products, tile_products);
  EXPECT_DOUBLE_EQ(f.a_tile_density, double(a.nnz()) / (64.0 * double(ta.tiles())));
  EXPECT_DOUBLE_EQ(f.b_tile_density, double(b.nnz()) / (64.0 * double(tb.tiles())));
  EXPECT_DOUBLE_EQ(to_json(f).at("products_per_tile_product").get<double>(), double(f.products) / double(tile_products));
}

}  // namespace
}  // namespace sparsejit
