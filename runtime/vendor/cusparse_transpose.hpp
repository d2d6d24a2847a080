// Aᵀ of a device CSR, on the device, by cuSPARSE's CSR-to-CSC conversion (the CSC arrays of A
// are the CSR arrays of Aᵀ): what SpGEMM's transposed operands (Options::transpose_a/_b) run on.
// Every row of the result has its columns sorted; duplicate entries of A stay duplicates.
// Not thread-safe (hold the handle's lock around the call).
#pragma once
#include <cuda.h>

#include "sparsejit/device_matrix.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::vendor {

// Aᵀ's arrays: cols(A) + 1 offsets, nnz columns and values.
struct TransposedArrays {
  DeviceBuffer row_ptr;
  DeviceBuffer col_idx;
  DeviceBuffer values;
};

// T is float or double. The arrays are complete in stream order on `stream` (the conversion's
// work buffer is freed after a synchronization of it).
template <class T>
TransposedArrays transpose_csr(const CusparseHandle& handle, const DeviceCsr<T>& a, CUstream stream);

}  // namespace sparsejit::vendor
