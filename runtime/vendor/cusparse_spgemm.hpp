// cuSPARSE's generic SpGEMM as a baseline and dispatch candidate: C = A·B with A m×k and B k×n
// device CSRs (int32 indices), alpha = 1, beta = 0, computed in the value type, by the
// documented sequence of one call: descriptors, work estimation (size query, buffer, call),
// compute (size query, buffer, call), C's arrays allocated at the size compute reports (the
// size query synchronizes), copy, descriptors and buffers released (after a synchronization of
// the stream, as the sequence's frees synchronize). Not thread-safe (see
// CusparseHandle): hold the handle's lock around the call.
#pragma once
#include <cusparse.h>

#include <cstddef>
#include <functional>

#include "sparsejit/device_matrix.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::vendor {

enum class SpgemmAlgorithm {
  Alg1,  // CUSPARSE_SPGEMM_ALG1 (also what CUSPARSE_SPGEMM_DEFAULT runs): work estimation, compute, copy
};
const char* to_string(SpgemmAlgorithm algorithm);  // "alg1"

// C's arrays: rows + 1 offsets, nnz columns and nnz values.
struct CusparseSpgemmResult {
  DeviceBuffer row_ptr;
  DeviceBuffer col_idx;
  DeviceBuffer values;
  int64_t nnz = 0;
  std::size_t buffer_bytes = 0;  // cuSPARSE's two work buffers together
};

// Makes a new device array of `bytes` for C (the caller's allocator: tests poison it).
using OutputArray = std::function<DeviceBuffer(std::size_t bytes)>;

// T is float or double. InvalidInputError when A's columns are not B's rows; UnsupportedError
// when cuSPARSE rejects the combination, CudaError for its other failures.
template <class T>
CusparseSpgemmResult cusparse_spgemm(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                     SpgemmAlgorithm algorithm, CUstream stream, const OutputArray& new_array);

}  // namespace sparsejit::vendor
