// Feature passes without the validate() call of the public functions: inspect() validates a
// pattern once and then runs all of them. Callers guarantee a valid pattern (and sorted rows
// where the public function asks for them).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"

namespace sparsejit::inspect_detail {

BasicStats basic_stats(PatternView pattern);
ClusterBins clustering_bins(PatternView pattern, int32_t panel_width);
TileStats bitmap_tiles(PatternView pattern, int32_t tile);
uint64_t fingerprint(PatternView pattern);

// Throws InvalidInputError "<what> <value> must be >= 1" when value < 1.
void require_positive(const char* what, int64_t value);

// Visits every non-empty tile x tile block of a valid pattern, tile row by tile row, as
// visit(tile_row, tile_col, entries). Within a tile row the tile columns come in the order
// their first entry appears. One counter per tile column is reused across tile rows, so a
// pass is linear in rows + nnz + tile columns.
template <class Visit>
void for_each_tile(PatternView pattern, int32_t tile, Visit&& visit) {
  const int64_t tile_cols = (int64_t(pattern.cols) + tile - 1) / tile;
  std::vector<int32_t> entries(std::size_t(tile_cols), 0);
  std::vector<int32_t> touched;
  // int64 rows: the last tile row of a matrix with close to 2^31 rows would step past
  // INT32_MAX (a file declaring 2147483641 rows crashed inspect this way).
  for (int64_t first_row = 0; first_row < pattern.rows; first_row += tile) {
    const int64_t end_row = std::min<int64_t>(first_row + tile, pattern.rows);
    for (int32_t e = pattern.row_ptr[first_row]; e < pattern.row_ptr[end_row]; ++e) {
      const int32_t tile_col = pattern.col_idx[e] / tile;
      if (entries[std::size_t(tile_col)]++ == 0) touched.push_back(tile_col);
    }
    for (const int32_t tile_col : touched) {
      visit(int32_t(first_row / tile), tile_col, entries[std::size_t(tile_col)]);
      entries[std::size_t(tile_col)] = 0;
    }
    touched.clear();
  }
}

}  // namespace sparsejit::inspect_detail
