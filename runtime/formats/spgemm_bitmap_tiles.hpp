// tSparse's bitmap tiles of one SpGEMM operand, read by templates/spgemm_bitmap_tc.cu (variant
// bitmap_tc): the matrix cut into 8 x 8 tiles from (0, 0) (edge tiles partial), only tiles
// holding at least one entry kept, in CSR order over tiles: tile row by tile row, tile columns
// ascending. A tile is its 64-bit bitmap (bit 8 r + c set when local row r, column c holds an
// entry) and its packed values: the set bits' values in bit order, at `offset` in one array.
// Built on the host from the pattern alone, once per pattern, cached on the handle; the values
// are packed on the device each call by scattering the CSR values to `slot`.
//
//   row_ptr[tile_rows + 1]   the tiles of tile row I are row_ptr[I] .. row_ptr[I + 1] - 1
//   tile_row[tiles]          each tile's tile row I (the expansion reads it per tile)
//   tile_col[tiles]          each tile's tile column J
//   bits[tiles]              the bitmap
//   offset[tiles + 1]        the tile's first packed value; offset[tiles] = packed values
//   slot[nnz]                where CSR entry e's value goes among the packed values
// Rows may be unsorted and may name a column twice: both entries get the same slot, and the
// packing kernel adds them (the reference's sum of duplicates).
//
// Example: 3 x 10, entries numbered in CSR order:
//   row 0: cols 1, 9      row 1: (empty)      row 2: cols 0, 2
//   tiles (0, 0): bits {1, 16, 18}, (0, 1): bits {1}   [bit 8 r + c; col 9 is local column 1]
//   row_ptr {0, 2}  tile_row {0, 0}  tile_col {0, 1}  offset {0, 3, 4}  slot {0, 3, 1, 2}
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

inline constexpr int32_t kBitmapTileEdge = 8;

struct BitmapTiles {
  int32_t tile_rows = 0;  // ceil(rows / 8)
  int32_t tile_cols = 0;  // ceil(cols / 8)
  std::vector<int32_t> row_ptr;
  std::vector<int32_t> tile_row;
  std::vector<int32_t> tile_col;
  std::vector<uint64_t> bits;
  std::vector<int32_t> offset;
  std::vector<int32_t> slot;

  int64_t tiles() const { return int64_t(tile_col.size()); }
  int64_t packed() const { return offset.empty() ? 0 : int64_t(offset.back()); }
};

// The tiles covering `extent` rows or columns: ceil(extent / 8).
int64_t tiles_across(int64_t extent);

// The bits of a tile key, tile row x tile_cols + tile column (< tile_rows x tile_cols), that a
// radix sort by tile must look at.
int tile_key_bits(int64_t tile_rows, int64_t tile_cols);

// The device tiles of an operand of `nnz` entries (spgemm_bitmap_tiles_gpu.hpp), at most: 20
// bytes a tile, a tile per entry at most, 4 bytes an entry for the slots; and their build's
// scratch, about 41 bytes an entry. What the SpGEMM planners count for them.
inline int64_t bitmap_tiles_bytes(int64_t nnz) { return (20 + 4 + 41) * nnz; }

// O(nnz + tiles log tiles of a tile row). Throws InvalidInputError (via validate) naming the
// first malformed index of the pattern.
BitmapTiles build_bitmap_tiles(PatternView pattern);

}  // namespace sparsejit::formats
