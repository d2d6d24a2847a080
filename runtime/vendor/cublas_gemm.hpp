// cuBLAS as a dispatch candidate for near-dense operands: C = op(A_dense)·B with A_dense a
// row-major dense copy of a sparse matrix (formats/dense_copy.hpp), op = identity or transpose,
// B and C row-major, alpha = 1, beta = 0, in full precision (CUBLAS_DEFAULT_MATH: SGEMM and
// DGEMM, never TF32 tensor cores, so results agree with the sparse kernels to rounding).
//
// A pruned weight layer at 50–80% sparsity holds so many nonzeros that a dense GEMM over all
// of it, zeros included, beats any gather of B's rows (H200, K = 128: a 512x2048 layer at 50%
// takes 12.8 µs in SGEMM, 37 µs in cuSPARSE, 32 µs in our best sparse kernel).
//
// Row-major operands are column-major transposes, so C = A·B is computed as Cᵀ = Bᵀ·Aᵀ:
// cublas{S,D}gemm(N, N, k, m, n, B, ldb, A, n, C, ldc) (and op(A) = Aᵀ: (N, T, ...)).
//
// Not thread-safe: one handle per thread, or a lock around run (the runtime holds one).
#pragma once
#include <cublas_v2.h>

#include <cstdint>

#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"

namespace sparsejit::vendor {

// Throws CudaError: "cublasSgemm_v2 failed: CUBLAS_STATUS_INVALID_VALUE (the parameters ...)".
void check_cublas(cublasStatus_t status, const char* call);

// A cuBLAS handle bound to one device's primary context, with a workspace of its own (set
// explicitly, so GEMMs captured into CUDA graphs allocate nothing).
class CublasHandle {
 public:
  explicit CublasHandle(const Context& context);
  ~CublasHandle();
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;

  cublasHandle_t get() const { return handle_; }
  // Makes the context current and directs the following cuBLAS calls to `stream` (the
  // stream and workspace are set only when the stream differs from the last call's).
  void bind(CUstream stream);

 private:
  Context context_;
  DeviceBuffer workspace_;
  cublasHandle_t handle_ = nullptr;
  bool bound_ = false;
  CUstream bound_stream_ = nullptr;
};

// C = op(A)·B with `a_dense` the row-major rows x cols matrix A (ld = cols); op(A) is
// rows x cols (transpose_a false) or cols x rows. InvalidInputError on a shape mismatch.
// T is float or double.
template <class T>
void dense_gemm(CublasHandle& handle, const DeviceBuffer& a_dense, int32_t rows, int32_t cols, bool transpose_a,
                const DeviceDense<T>& b, DeviceDense<T>& c, CUstream stream);

}  // namespace sparsejit::vendor

#define SPARSEJIT_CUBLAS(call, ...) ::sparsejit::vendor::check_cublas(call(__VA_ARGS__), #call)
