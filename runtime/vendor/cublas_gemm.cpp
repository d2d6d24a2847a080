#include "vendor/cublas_gemm.hpp"

#include <cuda_runtime_api.h>

#include <string>
#include <type_traits>

#include "cuda/runtime_check.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::vendor {

namespace {

// cuBLAS asks for at least 4 MiB on Hopper for its fastest kernels; 32 MiB covers split-K
// reductions of the largest layers.
constexpr int64_t kWorkspaceBytes = 32LL << 20;

std::string shape(int64_t r, int64_t c) { return std::to_string(r) + "x" + std::to_string(c); }

}  // namespace

void check_cublas(cublasStatus_t status, const char* call) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  throw CudaError(std::string(call) + " failed: " + cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

CublasHandle::CublasHandle(const Context& context) : context_(context), workspace_(context, kWorkspaceBytes) {
  context_.make_current();
  cuda::check_runtime(cudaSetDevice(context_.ordinal()), "cudaSetDevice(" + std::to_string(context_.ordinal()) + ")");
  SPARSEJIT_CUBLAS(cublasCreate, &handle_);
  SPARSEJIT_CUBLAS(cublasSetMathMode, handle_, CUBLAS_DEFAULT_MATH);
}

CublasHandle::~CublasHandle() {
  try {
    context_.make_current();
    cublasDestroy(handle_);
  } catch (const Error&) {  // the context is already gone at process exit: nothing to free
  }
}

void CublasHandle::bind(CUstream stream) {
  context_.make_current();
  if (bound_ && stream == bound_stream_) return;
  SPARSEJIT_CUBLAS(cublasSetStream, handle_, stream);
  // cublasSetStream resets the workspace to cuBLAS's own pool: set ours again after it.
  SPARSEJIT_CUBLAS(cublasSetWorkspace, handle_, reinterpret_cast<void*>(workspace_.ptr()), std::size_t(workspace_.bytes()));
  bound_ = true;
  bound_stream_ = stream;
}

template <class T>
void dense_gemm(CublasHandle& handle, const DeviceBuffer& a_dense, int32_t rows, int32_t cols, bool transpose_a,
                const DeviceDense<T>& b, DeviceDense<T>& c, CUstream stream) {
  const int32_t inner = transpose_a ? rows : cols;
  const int32_t outer = transpose_a ? cols : rows;
  if (b.rows() != inner || c.rows() != outer || c.cols() != b.cols())
    throw InvalidInputError("dense_gemm: op(A) is " + shape(outer, inner) + ", B is " + shape(b.rows(), b.cols()) + ", C is " +
                            shape(c.rows(), c.cols()));
  if (int64_t(a_dense.bytes()) < int64_t(rows) * cols * int64_t(sizeof(T)))
    throw InvalidInputError("dense_gemm: the dense copy of A holds " + std::to_string(a_dense.bytes()) + " bytes, " +
                            shape(rows, cols) + " needs " + std::to_string(int64_t(rows) * cols * int64_t(sizeof(T))));
  handle.bind(stream);
  const T one = 1, zero = 0;
  const int k = b.cols();
  const auto* a = reinterpret_cast<const T*>(a_dense.ptr());
  const cublasOperation_t op_a = transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  // Column-major view: Cᵀ (k x outer) = Bᵀ (k x inner) · op(A)ᵀ, A's row-major storage being
  // Aᵀ column-major with leading dimension cols.
  if constexpr (std::is_same_v<T, float>) {
    SPARSEJIT_CUBLAS(cublasSgemm, handle.get(), CUBLAS_OP_N, op_a, k, outer, inner, &one, b.data(), int(b.ld()), a, cols, &zero,
                     c.data(), int(c.ld()));
  } else {
    SPARSEJIT_CUBLAS(cublasDgemm, handle.get(), CUBLAS_OP_N, op_a, k, outer, inner, &one, b.data(), int(b.ld()), a, cols, &zero,
                     c.data(), int(c.ld()));
  }
}

template void dense_gemm<float>(CublasHandle&, const DeviceBuffer&, int32_t, int32_t, bool, const DeviceDense<float>&,
                                DeviceDense<float>&, CUstream);
template void dense_gemm<double>(CublasHandle&, const DeviceBuffer&, int32_t, int32_t, bool, const DeviceDense<double>&,
                                 DeviceDense<double>&, CUstream);

}  // namespace sparsejit::vendor
