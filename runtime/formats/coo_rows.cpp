#include "formats/coo_rows.hpp"

#include <algorithm>

namespace sparsejit::formats {

std::vector<int32_t> coo_row_indices(PatternView pattern) {
  std::vector<int32_t> rows(std::size_t(pattern.nnz()));
  for (int32_t r = 0; r < pattern.rows; ++r)
    std::fill(rows.begin() + pattern.row_ptr[r], rows.begin() + pattern.row_ptr[r + 1], r);
  return rows;
}

}  // namespace sparsejit::formats
