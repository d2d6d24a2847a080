// The row index of every nonzero (CSR row_ptr expanded), the COO view that flat kernels
// (SDDMM coo_flat) read. Built once per pattern and cached on the matrix handle.
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

std::vector<int32_t> coo_row_indices(PatternView pattern);

}  // namespace sparsejit::formats
