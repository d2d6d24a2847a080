// CUDA runtime API results, checked as the driver's are (cuda/driver_api.hpp): for the few
// nvcc-compiled files that use the runtime API (CUB's device-wide algorithms, our kernels there).
#pragma once
#include <cuda_runtime_api.h>

#include <string>

namespace sparsejit::cuda {

// Throws unless status is cudaSuccess: "<call> failed: cudaErrorX (text)", a
// CudaContextLostError when the error is sticky (cuda::fail), else a CudaError.
void check_runtime(cudaError_t status, const std::string& call);

}  // namespace sparsejit::cuda
