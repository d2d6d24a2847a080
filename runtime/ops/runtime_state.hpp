// What a Runtime owns, shared by the op executors (ops/spmm.cpp, ops/sddmm.cpp).
#pragma once
#include <atomic>
#include <memory>
#include <mutex>

#include "ops/kernel_loader.hpp"
#include "plan/planner.hpp"
#include "sparsejit/device.hpp"
#include "vendor/cublas_gemm.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::detail {

struct RuntimeState {
  explicit RuntimeState(int device);

  Context context;
  plan::DeviceTarget target;
  ops::KernelLoader loader;
  vendor::CusparseHandle cusparse;
  std::mutex cusparse_mutex;  // a cuSPARSE handle is not thread-safe
  // cuBLAS for the dense SpMM variant, created on first use (a handle and its 32 MiB
  // workspace that runtimes never picking the variant should not pay for). Hold
  // cublas_mutex around cublas_handle() and every call on it.
  std::mutex cublas_mutex;
  vendor::CublasHandle& cublas_handle();
  // Distinguishes this runtime's plans on a matrix handle from another runtime's (a plan
  // holds this runtime's cuSPARSE handle and kernels).
  const uint64_t id;

 private:
  std::unique_ptr<vendor::CublasHandle> cublas_;
};

// The target the planners see for a real device.
plan::DeviceTarget target_of(const DeviceInfo& info);
// The target for explain: GPU `device` when the driver has it, else the nominal sm_90 part.
plan::DeviceTarget explain_target(int device);

}  // namespace sparsejit::detail
