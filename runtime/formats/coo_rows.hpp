// The row index of every nonzero (CSR row_ptr expanded), the COO view that flat kernels
// (SDDMM coo_flat) read. Built once per pattern and cached on the matrix handle.
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

std::vector<int32_t> coo_row_indices(PatternView pattern);

// The rows of C that csr_merge does not store whole when its ranges hold `range` consecutive
// nonzeros each: the empty rows (no range reaches them) and the rows whose nonzeros cross a
// range boundary (their ranges add partial sums with atomics, onto zeros). In row order.
// `range` must be at least 1.
std::vector<int32_t> rows_cleared_before_merge(PatternView pattern, int64_t range);

}  // namespace sparsejit::formats
