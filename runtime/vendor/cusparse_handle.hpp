// A cuSPARSE library handle bound to one device's primary context, and the status check every
// cuSPARSE call goes through. cuSPARSE runs on the CUDA runtime, which uses the primary context
// of the device selected by cudaSetDevice; Context retains that same primary context, so the
// driver-API objects (buffers, streams, modules) and cuSPARSE share memory and streams.
//
// Not thread-safe: use one handle (and the plans made with it) per thread.
#pragma once
#include <cusparse.h>

#include <memory>

#include "sparsejit/device.hpp"

namespace sparsejit::vendor {

// Throws UnsupportedError for CUSPARSE_STATUS_NOT_SUPPORTED (a combination cuSPARSE rejects)
// and CudaError otherwise: "cusparseSpMM failed: CUSPARSE_STATUS_INVALID_VALUE (invalid value)".
void check_cusparse(cusparseStatus_t status, const char* call);

// Owned cuSPARSE descriptors.
struct SpMatDeleter {
  void operator()(cusparseSpMatDescr* descriptor) const { cusparseDestroySpMat(descriptor); }
};
struct DnMatDeleter {
  void operator()(cusparseDnMatDescr* descriptor) const { cusparseDestroyDnMat(descriptor); }
};
using SpMatDescriptor = std::unique_ptr<cusparseSpMatDescr, SpMatDeleter>;
using DnMatDescriptor = std::unique_ptr<cusparseDnMatDescr, DnMatDeleter>;

class CusparseHandle {
 public:
  explicit CusparseHandle(const Context& context);
  ~CusparseHandle();
  CusparseHandle(const CusparseHandle&) = delete;
  CusparseHandle& operator=(const CusparseHandle&) = delete;

  const Context& context() const { return context_; }
  cusparseHandle_t get() const { return handle_; }
  // Makes the context current and directs the following cuSPARSE calls to `stream`.
  void bind(CUstream stream) const;

 private:
  Context context_;
  cusparseHandle_t handle_ = nullptr;
};

}  // namespace sparsejit::vendor

#define SPARSEJIT_CUSPARSE(call, ...) ::sparsejit::vendor::check_cusparse(call(__VA_ARGS__), #call)
