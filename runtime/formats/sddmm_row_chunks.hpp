// Row chunks of an SDDMM pattern S, read by templates/sddmm_row.cu (variant row_gather): the
// nonzeros of each non-empty row cut into consecutive chunks of at most `max_nnz`, so a lane
// group loads a row of A once per chunk and long rows still spread over many groups. Built on
// the host from the pattern alone, once per (pattern, max_nnz), cached on the matrix handle.
//
//   row[chunks]      the chunk's row
//   ptr[chunks + 1]  chunk c owns S's nonzeros [ptr[c], ptr[c + 1]) (CSR order). Chunks follow
//                    CSR order and empty rows have none, so chunk c + 1 starts where c ends and
//                    ptr[chunks] = nnz.
//
// Example: rows of lengths 5, 0, 2 with max_nnz = 2:
//   row {0, 0, 0, 2}   ptr {0, 2, 4, 5, 7}
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

struct RowChunks {
  int32_t max_nnz = 0;
  std::vector<int32_t> row;
  std::vector<int32_t> ptr{0};

  int64_t chunks() const { return int64_t(row.size()); }
};

// Number of chunks build_row_chunks makes, without building them (the planner's cost terms).
int64_t count_row_chunks(PatternView s, int32_t max_nnz);

// O(rows + chunks). Throws InvalidInputError naming max_nnz when it is < 1, and (via validate)
// naming the first bad offset of a malformed pattern. Rows need not be sorted.
RowChunks build_row_chunks(PatternView s, int32_t max_nnz);

}  // namespace sparsejit::formats
