// Panel chunks of an SDDMM pattern S, read by templates/sddmm_row_panels.cu (variant
// panel_gather): S cut into tiles of band_rows rows x panel_cols columns, and each non-empty
// tile's nonzeros cut into row chunks (runs of one row's nonzeros inside the tile, at most
// max_nnz long). One thread block walks one tile's chunks, so the B rows of the tile's column
// panel are gathered by all the band's rows while they are still in the SM's L1 cache, where
// row_gather's blocks each gather from all of B. Built on the host from the pattern alone,
// once per (pattern, band_rows, panel_cols, max_nnz), cached on the matrix handle.
//
//   tile_ptr[tiles + 1]   tile t owns chunks [tile_ptr[t], tile_ptr[t + 1]); tiles follow row
//                         bands, then column panels, empty tiles have none
//   row[chunks]           the chunk's row
//   begin[chunks]         chunk c owns S's nonzeros [begin[c], end[c]) (CSR order: a run of
//   end[chunks]           consecutive entries of one row, all in the tile's column panel)
//
// Rows need not be sorted: a row whose columns leave and re-enter a panel gives that tile one
// chunk per run.
//
// Example: rows {0, 1, 5, 6} and {7, 2} (2 x 8) in 2 x 4 tiles, max_nnz = 2:
//   tile_ptr {0, 2, 4}   row {0, 1, 0, 1}   begin {0, 5, 2, 4}   end {2, 6, 4, 5}
// (tile 0: columns 0-3: row 0's {0, 1} and row 1's {2}; tile 1: columns 4-7: {5, 6} and {7}).
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

struct PanelChunks {
  int32_t band_rows = 0, panel_cols = 0, max_nnz = 0;
  std::vector<int32_t> tile_ptr{0};
  std::vector<int32_t> row, begin, end;

  int64_t tiles() const { return int64_t(tile_ptr.size()) - 1; }
  int64_t chunks() const { return int64_t(row.size()); }
};

// O(nnz log nnz) at worst (each band's runs ordered by panel). Throws InvalidInputError naming
// band_rows, panel_cols or max_nnz when one is < 1, and (via validate) naming the first bad
// offset of a malformed pattern.
PanelChunks build_panel_chunks(PatternView s, int32_t band_rows, int32_t panel_cols, int32_t max_nnz);

}  // namespace sparsejit::formats
