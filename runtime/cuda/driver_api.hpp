// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so that the library and
// the CLI start, inspect and explain on machines without a GPU. <cuda.h> is included for its
// types and declarations only; libcuda is never linked.
//
// Every entry of the table is named after the exact symbol libcuda exports (cuMemAlloc_v2, not
// the cuMemAlloc macro), so the name in an error message is the function that actually ran.
// Every call goes through SPARSEJIT_CU, which throws CudaError on failure:
//   "cuModuleLoadData failed: CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)"
#pragma once
#include <cuda.h>

#include <string>

namespace sparsejit::cuda {

// X(symbol): each driver function we call. Add a function here, nowhere else.
#define SPARSEJIT_DRIVER_FUNCTIONS(X)                                                    \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                  \
  X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) X(cuDeviceGetAttribute)          \
  X(cuDeviceTotalMem_v2)                                                                 \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease_v2)                            \
  X(cuCtxSetCurrent) X(cuCtxGetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo_v2)           \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)                           \
  X(cuFuncSetAttribute) X(cuFuncGetAttribute) X(cuLaunchKernel) X(cuLaunchKernelEx)      \
  X(cuOccupancyMaxActiveBlocksPerMultiprocessor)                                         \
  X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocHost_v2) X(cuMemFreeHost)                 \
  X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2) X(cuMemcpyDtoDAsync_v2)                \
  X(cuMemcpy2DAsync_v2)                                                                  \
  X(cuMemsetD8Async) X(cuMemsetD32Async) X(cuMemsetD2D8Async)                           \
  X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamIsCapturing)    \
  X(cuStreamWaitEvent)                                                                   \
  X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime_v2)       \
  X(cuEventDestroy_v2) X(cuEventQuery)                                                    \
  X(cuStreamBeginCapture_v2) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags)       \
  X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy)                                \
  X(cuGraphCreate) X(cuGraphAddKernelNode_v2) X(cuGraphAddDependencies_v2)               \
  X(cuGraphExecKernelNodeSetParams_v2)                                                   \
  X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolSetAttribute) X(cuMemPoolTrimTo)    \
  X(cuMemPoolGetAttribute) X(cuMemAllocFromPoolAsync) X(cuMemFreeAsync)

struct DriverApi {
#define SPARSEJIT_DRIVER_MEMBER(name) decltype(&::name) name = nullptr;
  SPARSEJIT_DRIVER_FUNCTIONS(SPARSEJIT_DRIVER_MEMBER)
#undef SPARSEJIT_DRIVER_MEMBER
};

// True when libcuda.so.1 loaded, every function resolved, cuInit succeeded and at least one
// device exists. Decided once per process (thread-safe); never throws.
bool driver_available();
// Why driver_available() is false (empty when it is true), e.g.
// "no CUDA driver (libcuda.so.1 not found): GPU work is unavailable; info, inspect and explain still work".
const std::string& driver_unavailable_reason();
// The loaded table; throws UnsupportedError with driver_unavailable_reason() when unavailable.
const DriverApi& driver();

// "CUDA_ERROR_INVALID_IMAGE (device kernel image is invalid)" for a driver result code.
std::string describe(CUresult result);
// Throws CudaError "<call> failed: <describe(result)>" unless result is CUDA_SUCCESS (as
// fail() does: a sticky result is a CudaContextLostError).
void check(CUresult result, const char* call);

// Whether a result is sticky: cuda.h says the error "leaves the process in an inconsistent
// state and any further CUDA work will return the same error" (an illegal address, a launch
// failure, a trap or assert, ...). The driver and runtime APIs number these codes alike, so a
// cudaError_t may be passed too.
bool is_sticky(int code);
// Throws for a failed driver or runtime call: CudaContextLostError, with `message` followed by
// what a lost context means, for a sticky code; CudaError(message) otherwise.
[[noreturn]] void fail(int code, const std::string& message);

}  // namespace sparsejit::cuda

// SPARSEJIT_CU(cuMemAlloc_v2, &ptr, bytes): calls the driver function and checks its result.
#define SPARSEJIT_CU(fn, ...) ::sparsejit::cuda::check(::sparsejit::cuda::driver().fn(__VA_ARGS__), #fn)
