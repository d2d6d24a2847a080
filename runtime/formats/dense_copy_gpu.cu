// The dense copy's expansion (formats/dense_copy.hpp): a memset of the whole copy, then one
// warp per row adding its entries at their columns.
#include <cuda_runtime_api.h>

#include <string>

#include "cuda/runtime_check.hpp"
#include "formats/dense_copy.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {

namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerBlock = kThreads / 32;

// Atomic adds, so duplicate columns of a row sum as in the sparse kernels.
template <class T>
__global__ void scatter_rows(int32_t rows, int32_t cols, const int32_t* row_ptr, const int32_t* col_idx, const T* values,
                             T* dense) {
  const int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  if (row >= rows) return;
  T* out = dense + row * cols;
  for (int32_t e = row_ptr[row] + int32_t(threadIdx.x % 32); e < row_ptr[row + 1]; e += 32) atomicAdd(out + col_idx[e], values[e]);
}

}  // namespace

template <class T>
void expand_to_dense(const DeviceCsr<T>& a, DeviceBuffer& out, CUstream stream) {
  const std::size_t bytes = std::size_t(a.rows()) * std::size_t(a.cols()) * sizeof(T);
  if (out.bytes() < bytes)
    throw InvalidInputError("expand_to_dense: A is " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) + ", " +
                            std::to_string(bytes) + " bytes, but the output holds " + std::to_string(out.bytes()));
  if (bytes == 0) return;
  a.context().make_current();
  cuda::check_runtime(cudaMemsetAsync(out.as<void>(), 0, bytes, stream), "cudaMemsetAsync(dense copy)");
  if (a.nnz() == 0) return;
  const unsigned blocks = unsigned((int64_t(a.rows()) + kRowsPerBlock - 1) / kRowsPerBlock);
  scatter_rows<T><<<blocks, kThreads, 0, stream>>>(a.rows(), a.cols(), a.row_ptr().template as<int32_t>(),
                                                   a.col_idx().template as<int32_t>(), a.values().template as<T>(), out.as<T>());
  cuda::check_runtime(cudaGetLastError(), "launch of scatter_rows");
}

template void expand_to_dense<float>(const DeviceCsr<float>&, DeviceBuffer&, CUstream);
template void expand_to_dense<double>(const DeviceCsr<double>&, DeviceBuffer&, CUstream);

}  // namespace sparsejit
