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
#include <memory>
#include <vector>

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

// cuSPARSE's SpGEMM reuse API (cusparseSpGEMMreuse_*, ALG1's documented sequence): C's pattern
// for A·B once at construction (work estimation, nnz, copy; C's arrays and the buffers the
// numeric phase keeps are allocated here, the others freed), then compute() enqueues the numeric
// phase alone for the current values of A and B: the baseline of Runtime::spgemm_numeric. A
// and B must outlive it. Not thread-safe (hold the handle's lock around each call).
struct SpgemmDescrDeleter {
  void operator()(cusparseSpGEMMDescr* descriptor) const;
};

template <class T>
class CusparseSpgemmReuse {
 public:
  CusparseSpgemmReuse(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b, CUstream stream);

  void compute(CUstream stream) const;
  int64_t nnz() const { return nnz_; }
  // C's values, in C's (sorted) order, after the work on `stream` so far.
  std::vector<T> values(CUstream stream) const;

 private:
  const CusparseHandle& handle_;
  SpMatDescriptor a_, b_, c_;
  std::unique_ptr<cusparseSpGEMMDescr, SpgemmDescrDeleter> spgemm_;
  int64_t nnz_ = 0;
  DeviceBuffer row_ptr_, col_idx_, values_, kept_nnz_buffer_, kept_copy_buffer_;
};

}  // namespace sparsejit::vendor
