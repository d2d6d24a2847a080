#include "cuda/context.hpp"

#include <cstdio>

#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

int attribute(CUdevice device, CUdevice_attribute which) {
  int value = 0;
  SPARSEJIT_CU(cuDeviceGetAttribute, &value, which, device);
  return value;
}

CUdevice device_handle(int ordinal) {
  const int count = device_count();
  if (ordinal < 0 || ordinal >= count)
    throw InvalidInputError("device ordinal " + std::to_string(ordinal) + " out of range [0, " +
                            std::to_string(count) + ")");
  CUdevice device = 0;
  SPARSEJIT_CU(cuDeviceGet, &device, ordinal);
  return device;
}

}  // namespace

bool driver_available() { return cuda::driver_available(); }

const std::string& driver_unavailable_reason() { return cuda::driver_unavailable_reason(); }

int device_count() {
  if (!cuda::driver_available()) return 0;
  int count = 0;
  SPARSEJIT_CU(cuDeviceGetCount, &count);
  return count;
}

DeviceInfo device_info(int ordinal) {
  cuda::driver();  // throws UnsupportedError with the reason when there is no driver
  const CUdevice device = device_handle(ordinal);
  DeviceInfo info;
  char name[256] = {};
  SPARSEJIT_CU(cuDeviceGetName, name, int(sizeof(name) - 1), device);
  info.name = name;
  info.ordinal = ordinal;
  info.sm = 10 * attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) +
            attribute(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info.multiprocessors = attribute(device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info.max_threads_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  info.max_threads_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  info.max_blocks_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  info.shared_mem_per_block = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  info.shared_mem_per_block_optin = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  info.shared_mem_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  info.registers_per_sm = attribute(device, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  info.l2_bytes = attribute(device, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  SPARSEJIT_CU(cuDeviceTotalMem_v2, &info.total_mem, device);
  SPARSEJIT_CU(cuDriverGetVersion, &info.driver_version);
  return info;
}

std::string to_string(const DeviceInfo& info) {
  char text[512];
  std::snprintf(text, sizeof(text), "%s (device %d, sm_%d, %d SMs, %.1f GiB, driver %d.%d)", info.name.c_str(),
                info.ordinal, info.sm, info.multiprocessors, double(info.total_mem) / (1024.0 * 1024.0 * 1024.0),
                info.driver_version / 1000, (info.driver_version % 1000) / 10);
  return text;
}

namespace detail {
PrimaryContext::~PrimaryContext() {
  // Failure here (the driver shutting down at process exit) leaves nothing to clean up.
  cuda::driver().cuDevicePrimaryCtxRelease_v2(device);
}
}  // namespace detail

namespace cuda {
void ensure_current(CUcontext context) {
  CUcontext current = nullptr;
  SPARSEJIT_CU(cuCtxGetCurrent, &current);
  if (current != context) SPARSEJIT_CU(cuCtxSetCurrent, context);
}
}  // namespace cuda

Context::Context(int ordinal) {
  DeviceInfo info = device_info(ordinal);
  const CUdevice device = device_handle(ordinal);
  CUcontext context = nullptr;
  SPARSEJIT_CU(cuDevicePrimaryCtxRetain, &context, device);
  state_ = std::make_shared<const detail::PrimaryContext>(ordinal, device, context, std::move(info));
  make_current();
}

int Context::ordinal() const { return state_->ordinal; }
CUdevice Context::device() const { return state_->device; }
CUcontext Context::handle() const { return state_->context; }
const DeviceInfo& Context::info() const { return state_->info; }
void Context::make_current() const { cuda::ensure_current(state_->context); }

void Context::synchronize() const {
  make_current();
  SPARSEJIT_CU(cuCtxSynchronize);
}

std::size_t Context::free_bytes() const {
  make_current();
  std::size_t free = 0, total = 0;
  SPARSEJIT_CU(cuMemGetInfo_v2, &free, &total);
  return free;
}

}  // namespace sparsejit
