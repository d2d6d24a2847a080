// A dense row-major copy of a sparse matrix on the device, for the `dense` SpMM variant
// (vendor/cublas_gemm.hpp): near-dense operands (pruned layers at 50-80% sparsity) multiply
// faster as one GEMM over all their entries than as a gather per nonzero.
//
// Layout: rows x cols values, ld = cols, zeros where A has no entry; duplicate entries of a
// row (DeviceCsr holds them; the SpMM planner rejects them today) would be added, as the
// sparse kernels add them.
//
// Lifecycle: the copy depends on the pattern and the values. The cache entry (key
// "dense_copy:dtype") lives as long as the handle; current() rebuilds the copy when the
// handle's values_version() moved since it was built (update_values). It is built on a stream
// of its own (a memset and one scatter kernel) that is synchronised before the copy is handed
// out, so calls on any stream may use it. Memory: rows * cols * sizeof(T) bytes for the
// handle's lifetime (the planner admits the variant only below a size limit).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>

#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"

namespace sparsejit {

struct DenseCopy {
  int32_t rows = 0;
  int32_t cols = 0;
  uint64_t values_version = 0;  // of the handle's values the copy was made from
  DeviceBuffer values;          // rows * cols, row-major
};

// Writes the dense copy of `a` into `out` (rows * cols * sizeof(T) bytes at least), ordered on
// `stream`. InvalidInputError naming the sizes when `out` is too small; CudaError when a
// launch fails. Instantiated for float and double.
template <class T>
void expand_to_dense(const DeviceCsr<T>& a, DeviceBuffer& out, CUstream stream);

// The dense copy of one handle, rebuilt when the handle's values change.
template <class T>
class CachedDenseCopy {
 public:
  // The copy of a's current values (a must be the handle this entry is cached on).
  std::shared_ptr<const DenseCopy> current(const DeviceCsr<T>& a);

 private:
  std::mutex mutex_;
  std::shared_ptr<const DenseCopy> copy_;
};

// The handle's cache entry, created (empty; built on first current()) when absent.
template <class T>
std::shared_ptr<CachedDenseCopy<T>> cached_dense_copy(const DeviceCsr<T>& a);

}  // namespace sparsejit
