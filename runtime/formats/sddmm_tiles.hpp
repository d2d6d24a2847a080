// The tile structure of an SDDMM pattern S (m x n), read by templates/sddmm_tiled.cu: the
// nonzeros of S grouped into tiles, each tile with the rows of B it needs staged in shared
// memory. Built on the host from the pattern alone (values may change freely), once per
// pattern, and cached on the matrix handle; every array is a flat int32 vector, so the
// device copy is one upload each.
//
// Rows are cut into panels of Ti rows (panel p: rows [p * Ti, min((p + 1) * Ti, m))).
// Two ways to cut a panel's columns into tiles:
//   plain (GPU-Shared):        column tiles of Tj consecutive columns; tile (p, q) stages
//                              B rows [q * Tj, min((q + 1) * Tj, n)), empty columns included.
//   reindexed (GPU-Preprocessing): the panel's sorted unique columns U (columns with at
//                              least one nonzero in the panel) are cut into chunks of Tj;
//                              tile (p, q) stages B rows U[q * Tj .. min((q + 1) * Tj, |U|)),
//                              so no staged row is unused.
// Only tiles with at least one nonzero are stored, ordered by panel, then column tile.
//
//   tile_row[tiles]      first row of the tile's panel (p * Ti)
//   tile_col[tiles]      plain: first column (q * Tj); reindexed: offset into staged_cols of
//                        the tile's first staged column
//   tile_width[tiles]    number of staged B rows (<= Tj)
//   tile_ptr[tiles + 1]  tile t owns tiled nonzeros [tile_ptr[t], tile_ptr[t + 1])
//   local[nnz]           (local_row << 16) | local_col: local_row = row - tile_row[t] in
//                        [0, Ti), local_col in [0, tile_width[t]) indexes the staged rows
//   position[nnz]        the nonzero's index in S's CSR order (where its value is read and
//                        its result written)
//   staged_cols[...]     reindexed only: the concatenated U of every panel; empty when plain
// Within a tile the nonzeros keep S's order (by row, then as stored in the row), so the
// nonzeros of one row are consecutive and a thread walking them reuses its row of A.
//
// Example: 4 x 8, Ti = 2, Tj = 4, entries numbered in CSR order:
//   row 0: cols 1, 6      row 1: col 2      row 2: (empty)      row 3: cols 0, 7
// plain:     tiles (panel 0, cols 0-3): {e0 (0,1), e2 (1,2)}; (panel 0, cols 4-7): {e1 (0,2)};
//            (panel 1, cols 0-3): {e3 (1,0)}; (panel 1, cols 4-7): {e4 (1,3)}
//            tile_row {0,0,2,2} tile_col {0,4,0,4} tile_width {4,4,4,4} tile_ptr {0,2,3,4,5}
//            position {0,2,1,3,4}
// reindexed: panel 0 U = {1,2,6}, panel 1 U = {0,7}; staged_cols {1,2,6,0,7};
//            one tile per panel: tile_row {0,2} tile_col {0,3} tile_width {3,2}
//            tile_ptr {0,3,5}; local (row,col): e0 (0,0) e1 (0,2) e2 (1,1) e3 (1,0) e4 (1,1)
//            position {0,1,2,3,4}
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

// Local row and column indices are packed into 16 bits each.
inline constexpr int32_t kMaxTileEdge = 1 << 16;

struct SddmmTiles {
  int32_t tile_rows = 0;  // Ti
  int32_t tile_cols = 0;  // Tj
  bool reindexed = false;
  std::vector<int32_t> tile_row;
  std::vector<int32_t> tile_col;
  std::vector<int32_t> tile_width;
  std::vector<int32_t> tile_ptr{0};
  std::vector<int32_t> local;
  std::vector<int32_t> position;
  std::vector<int32_t> staged_cols;

  int64_t tiles() const { return int64_t(tile_row.size()); }
  // B rows staged over all tiles (the B traffic of one K slice, in rows).
  int64_t staged_rows() const;
};

// Builds the tiles as documented above in one pass over the panels (O(nnz log(panel nnz))).
// Throws InvalidInputError naming the value when Ti or Tj is outside [1, 65536], and (via
// validate) naming the first bad index of a malformed pattern. Rows need not be sorted.
SddmmTiles build_sddmm_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols, bool reindexed);

}  // namespace sparsejit::formats
