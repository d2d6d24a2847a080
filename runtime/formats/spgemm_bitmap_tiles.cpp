#include "formats/spgemm_bitmap_tiles.hpp"

#include <algorithm>

namespace sparsejit::formats {

namespace {

constexpr int32_t kEdge = kBitmapTileEdge;

uint64_t bit_of(int64_t row, int32_t col) { return uint64_t{1} << ((row % kEdge) * kEdge + col % kEdge); }

// The set bits of `bits` below `bit` (a single set bit).
int32_t rank_below(uint64_t bits, uint64_t bit) { return __builtin_popcountll(bits & (bit - 1)); }

}  // namespace

int64_t tiles_across(int64_t extent) { return (extent + kEdge - 1) / kEdge; }

int tile_key_bits(int64_t tile_rows, int64_t tile_cols) {
  const uint64_t keys = uint64_t(std::max<int64_t>(tile_rows, 1)) * uint64_t(std::max<int64_t>(tile_cols, 1));
  int bits = 1;
  while (bits < 64 && (uint64_t{1} << bits) < keys) ++bits;
  return bits;
}

BitmapTiles build_bitmap_tiles(PatternView p) {
  validate(p, /*require_sorted=*/false);
  BitmapTiles t;
  t.tile_rows = int32_t(tiles_across(p.rows));
  t.tile_cols = int32_t(tiles_across(p.cols));
  t.row_ptr.reserve(std::size_t(t.tile_rows) + 1);
  t.row_ptr.push_back(0);
  t.offset.push_back(0);
  t.slot.resize(std::size_t(p.nnz()));
  // Per tile column, the index of its tile in the current tile row (-1: none yet); reset
  // through `touched`, so a pass is linear in rows + nnz + tile columns.
  std::vector<int32_t> index_of(std::size_t(t.tile_cols), -1);
  std::vector<int32_t> touched;
  for (int32_t tile_row = 0; tile_row < t.tile_rows; ++tile_row) {
    const int64_t first = int64_t(tile_row) * kEdge, end = std::min<int64_t>(first + kEdge, p.rows);
    for (int32_t e = p.row_ptr[first]; e < p.row_ptr[end]; ++e) {
      const int32_t tile_col = p.col_idx[e] / kEdge;
      if (index_of[std::size_t(tile_col)] < 0) {
        index_of[std::size_t(tile_col)] = 0;
        touched.push_back(tile_col);
      }
    }
    std::sort(touched.begin(), touched.end());
    const int32_t base = int32_t(t.tile_col.size());
    for (std::size_t i = 0; i < touched.size(); ++i) {
      index_of[std::size_t(touched[i])] = base + int32_t(i);
      t.tile_row.push_back(tile_row);
      t.tile_col.push_back(touched[i]);
      t.bits.push_back(0);
    }
    for (int64_t r = first; r < end; ++r)
      for (int32_t e = p.row_ptr[r]; e < p.row_ptr[r + 1]; ++e)
        t.bits[std::size_t(index_of[std::size_t(p.col_idx[e] / kEdge)])] |= bit_of(r, p.col_idx[e]);
    for (std::size_t i = 0; i < touched.size(); ++i)
      t.offset.push_back(t.offset.back() + __builtin_popcountll(t.bits[std::size_t(base) + i]));
    for (int64_t r = first; r < end; ++r) {
      for (int32_t e = p.row_ptr[r]; e < p.row_ptr[r + 1]; ++e) {
        const std::size_t tile = std::size_t(index_of[std::size_t(p.col_idx[e] / kEdge)]);
        t.slot[std::size_t(e)] = t.offset[tile] + rank_below(t.bits[tile], bit_of(r, p.col_idx[e]));
      }
    }
    for (const int32_t tile_col : touched) index_of[std::size_t(tile_col)] = -1;
    touched.clear();
    t.row_ptr.push_back(int32_t(t.tile_col.size()));
  }
  return t;
}

}  // namespace sparsejit::formats
