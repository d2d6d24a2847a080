#include "formats/coo_rows.hpp"

#include <algorithm>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

std::vector<int32_t> coo_row_indices(PatternView pattern) {
  std::vector<int32_t> rows(std::size_t(pattern.nnz()));
  for (int32_t r = 0; r < pattern.rows; ++r)
    std::fill(rows.begin() + pattern.row_ptr[r], rows.begin() + pattern.row_ptr[r + 1], r);
  return rows;
}

std::vector<int32_t> rows_cleared_before_merge(PatternView pattern, int64_t range) {
  if (range < 1) throw InvalidInputError("rows_cleared_before_merge: range = " + std::to_string(range) + " must be at least 1");
  std::vector<int32_t> rows;
  for (int32_t r = 0; r < pattern.rows; ++r) {
    const int64_t begin = pattern.row_ptr[r], end = pattern.row_ptr[r + 1];
    if (begin == end || begin / range != (end - 1) / range) rows.push_back(r);
  }
  return rows;
}

}  // namespace sparsejit::formats
