// Dense tiles of an SDDMM pattern S (m x n), read by templates/sddmm_dense_tile.cu (variant
// dense_tile): S cut into Ti x Tj tiles from (0, 0) (edge tiles partial); only tiles holding
// at least one nonzero are kept, ordered by tile row, then tile column. A block computes every
// dot product of its tile like a small GEMM and writes the ones S holds: which they are and
// where they go in S's order comes from a bitmap and one CSR offset per tile row, so the
// format costs Ti * Tj / 8 + 4 * Ti bytes per tile and no per-nonzero index at all.
// Built on the host from the pattern alone, once per (pattern, Ti, Tj), cached on the handle.
//
//   tile_i[tiles]                      first row of the tile (a multiple of Ti)
//   tile_j[tiles]                      first column of the tile (a multiple of Tj)
//   bitmap[tiles * Ti * words]         words = ceil(Tj / 64) 64-bit words per tile row; bit b of
//                                      word w of row r is set when S holds (tile_i + r,
//                                      tile_j + 64 w + b). Rows and columns past m, n: 0.
//   first[tiles * Ti]                  the CSR index of the first nonzero of row tile_i + r at
//                                      column >= tile_j (0 when the row has none in the tile)
// Rows must be sorted without duplicates: then the nonzero at local (r, c) sits at
//   first[r] + (number of bits of row r below c),
// which is where its value is read and its result written.
//
// Example: 3 x 5, Ti = 2, Tj = 4 (one word per row), entries numbered in CSR order:
//   row 0: cols 1, 4      row 1: (empty)      row 2: cols 0, 2, 3
//   tiles (0, 0): row 0 bits {1}, first {0, 0};   (0, 4): row 0 bits {0}, first {1, 0};
//         (2, 0): row 0 bits {0, 2, 3}, first {2, 0}
//   tile_i {0, 0, 2}  tile_j {0, 4, 0}  bitmap {0b10, 0, 0b1, 0, 0b1101, 0}  first {0, 0, 1, 0, 2, 0}
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

// Ti and Tj are at most this (Tj spans whole 64-bit words up to 4 of them).
inline constexpr int32_t kMaxDenseTileEdge = 256;

struct DenseTiles {
  int32_t tile_rows = 0;  // Ti
  int32_t tile_cols = 0;  // Tj
  int32_t words = 0;      // 64-bit bitmap words per tile row: ceil(Tj / 64)
  std::vector<int32_t> tile_i;
  std::vector<int32_t> tile_j;
  std::vector<uint64_t> bitmap;
  std::vector<int32_t> first;

  int64_t tiles() const { return int64_t(tile_i.size()); }
};

// Number of non-empty Ti x Tj tiles of S, any shape (panel_gather's bands x panels too), in
// O(nnz) without building them. Rows need not be sorted. InvalidInputError for an edge under 1
// or a malformed pattern.
int64_t count_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols);
// count_tiles of S for each shape asked, each counted once: what SddmmProblem::tile_count takes
// where the pattern is at hand for a planning that asks a shape several times (explain, the
// tuner, precompile). `s` must outlive it; one thread at a time.
std::function<int64_t(int32_t tile_rows, int32_t tile_cols)> tile_counter(PatternView s);
// Number of tiles build_dense_tiles keeps: count_tiles with the dense format's edges (the
// planner's tile_fill). Same errors as below.
int64_t count_dense_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols);

// O(nnz + tiles * Ti * words). Throws InvalidInputError naming Ti or Tj when outside
// [1, kMaxDenseTileEdge], and (via validate) naming the first unsorted or duplicate index.
DenseTiles build_dense_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols);

}  // namespace sparsejit::formats
