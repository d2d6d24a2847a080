// What a Runtime owns, shared by the op executors (ops/spmm.cpp, ops/sddmm.cpp).
#pragma once
#include <atomic>
#include <mutex>

#include "ops/kernel_loader.hpp"
#include "plan/planner.hpp"
#include "sparsejit/device.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::detail {

struct RuntimeState {
  explicit RuntimeState(int device);

  Context context;
  plan::DeviceTarget target;
  ops::KernelLoader loader;
  vendor::CusparseHandle cusparse;
  std::mutex cusparse_mutex;  // a cuSPARSE handle is not thread-safe
  // Distinguishes this runtime's plans on a matrix handle from another runtime's (a plan
  // holds this runtime's cuSPARSE handle and kernels).
  const uint64_t id;
};

// The target the planners see for a real device.
plan::DeviceTarget target_of(const DeviceInfo& info);
// The target for explain: GPU `device` when the driver has it, else the nominal sm_90 part.
plan::DeviceTarget explain_target(int device);

}  // namespace sparsejit::detail
