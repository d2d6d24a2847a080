// Internal side of sparsejit::Context: the retained primary context every device object keeps
// alive, and the helper that makes a context current before a driver call.
#pragma once
#include "cuda/driver_api.hpp"
#include "sparsejit/device.hpp"

namespace sparsejit {
namespace detail {

// One retain of a device's primary context; released when the last holder goes away.
struct PrimaryContext {
  PrimaryContext(int ordinal, CUdevice device, CUcontext context, DeviceInfo info)
      : ordinal(ordinal), device(device), context(context), info(std::move(info)) {}
  ~PrimaryContext();
  PrimaryContext(const PrimaryContext&) = delete;
  PrimaryContext& operator=(const PrimaryContext&) = delete;

  int ordinal;
  CUdevice device;
  CUcontext context;
  DeviceInfo info;
};

}  // namespace detail

namespace cuda {
// Makes `context` current on the calling thread unless it already is (one thread-local read).
void ensure_current(CUcontext context);
}  // namespace cuda

}  // namespace sparsejit
