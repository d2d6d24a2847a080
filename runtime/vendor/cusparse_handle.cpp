#include "vendor/cusparse_handle.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "cuda/runtime_check.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::vendor {

void check_cusparse(cusparseStatus_t status, const char* call) {
  if (status == CUSPARSE_STATUS_SUCCESS) return;
  const std::string message = std::string(call) + " failed: " + cusparseGetErrorName(status) + " (" +
                              cusparseGetErrorString(status) + ")";
  if (status == CUSPARSE_STATUS_NOT_SUPPORTED) throw UnsupportedError(message);
  throw CudaError(message);
}

CusparseHandle::CusparseHandle(const Context& context) : context_(context) {
  context_.make_current();
  // The runtime adopts the context current on this thread; cudaSetDevice selects the same
  // primary context for threads where none is current yet.
  cuda::check_runtime(cudaSetDevice(context_.ordinal()), "cudaSetDevice(" + std::to_string(context_.ordinal()) + ")");
  SPARSEJIT_CUSPARSE(cusparseCreate, &handle_);
}

CusparseHandle::~CusparseHandle() {
  try {
    context_.make_current();
    cusparseDestroy(handle_);
  } catch (const Error&) {  // the context is already gone at process exit: nothing to free
  }
}

void CusparseHandle::bind(CUstream stream) const {
  context_.make_current();
  SPARSEJIT_CUSPARSE(cusparseSetStream, handle_, stream);
}

}  // namespace sparsejit::vendor
