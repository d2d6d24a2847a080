#include "formats/sddmm_row_chunks.hpp"

#include <algorithm>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

namespace {

void check_max_nnz(int32_t max_nnz) {
  if (max_nnz < 1) throw InvalidInputError("sddmm row chunks: max_nnz = " + std::to_string(max_nnz) + " must be >= 1");
}

int64_t chunks_of(int64_t length, int32_t max_nnz) { return (length + max_nnz - 1) / max_nnz; }

}  // namespace

int64_t count_row_chunks(PatternView s, int32_t max_nnz) {
  check_max_nnz(max_nnz);
  int64_t total = 0;
  for (int32_t r = 0; r < s.rows; ++r) total += chunks_of(s.row_ptr[r + 1] - s.row_ptr[r], max_nnz);
  return total;
}

RowChunks build_row_chunks(PatternView s, int32_t max_nnz) {
  check_max_nnz(max_nnz);
  validate(s, false);
  RowChunks out;
  out.max_nnz = max_nnz;
  const std::size_t chunks = std::size_t(count_row_chunks(s, max_nnz));
  out.row.reserve(chunks);
  out.ptr.reserve(chunks + 1);
  for (int32_t r = 0; r < s.rows; ++r) {
    const int64_t end = s.row_ptr[r + 1];
    for (int64_t begin = s.row_ptr[r]; begin < end; begin += max_nnz) {
      out.row.push_back(r);
      out.ptr.push_back(int32_t(std::min(begin + max_nnz, end)));
    }
  }
  return out;
}

}  // namespace sparsejit::formats
