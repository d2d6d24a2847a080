// A sticky CUDA error (a kernel fault) is reported as CudaContextLostError, naming the lost
// context and what to do; every other CUDA failure stays a plain CudaError. Driver and runtime
// API results alike (cuda::check, cuda::fail, cuda::check_runtime). No GPU needed.
#include <gtest/gtest.h>

#include <string>

#include "cuda/driver_api.hpp"
#include "cuda/runtime_check.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

const std::string kLost = "the CUDA context is lost";

template <class F>
std::string lost_context_message(F&& call) {
  try {
    call();
  } catch (const CudaContextLostError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a CudaContextLostError: " << e.what();
  }
  return "";
}

TEST(StickyError, EveryStickyDriverResultIsALostContext) {
  for (CUresult code : {CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_LAUNCH_TIMEOUT, CUDA_ERROR_ASSERT, CUDA_ERROR_HARDWARE_STACK_ERROR,
                        CUDA_ERROR_ILLEGAL_INSTRUCTION, CUDA_ERROR_MISALIGNED_ADDRESS, CUDA_ERROR_INVALID_ADDRESS_SPACE,
                        CUDA_ERROR_INVALID_PC, CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_MPS_CLIENT_TERMINATED,
                        CUDA_ERROR_EXTERNAL_DEVICE, CUresult(226), CUresult(721)}) {
    EXPECT_TRUE(cuda::is_sticky(code)) << code;
    const std::string message = lost_context_message([&] { cuda::check(code, "cuStreamSynchronize"); });
    EXPECT_EQ(message.rfind("cuStreamSynchronize failed: ", 0), 0u) << message;
    EXPECT_NE(message.find(kLost), std::string::npos) << message;
    EXPECT_NE(message.find("restart the process"), std::string::npos) << message;
  }
}

TEST(StickyError, OtherFailuresLeaveTheContextUsable) {
  for (CUresult code : {CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_NOT_READY,
                        CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT}) {
    EXPECT_FALSE(cuda::is_sticky(code)) << code;
    try {
      cuda::fail(code, "a call failed");
      ADD_FAILURE() << "fail() returned";
    } catch (const CudaContextLostError& e) {
      ADD_FAILURE() << code << " reported as a lost context: " << e.what();
    } catch (const CudaError& e) {
      EXPECT_EQ(std::string(e.what()), "a call failed");
    }
  }
}

TEST(StickyError, RuntimeApiResultsAreMappedAlike) {
  const std::string message =
      lost_context_message([] { cuda::check_runtime(cudaErrorIllegalAddress, "cudaStreamSynchronize(counts)"); });
  EXPECT_EQ(message.rfind("cudaStreamSynchronize(counts) failed: cudaErrorIllegalAddress (", 0), 0u) << message;
  EXPECT_NE(message.find(kLost), std::string::npos) << message;
  EXPECT_TRUE(cuda::is_sticky(cudaErrorLaunchFailure));
  EXPECT_TRUE(cuda::is_sticky(cudaErrorMisalignedAddress));
  EXPECT_THROW(cuda::check_runtime(cudaErrorMemoryAllocation, "cudaMallocAsync"), CudaError);
  EXPECT_FALSE(cuda::is_sticky(cudaErrorMemoryAllocation));
  EXPECT_NO_THROW(cuda::check_runtime(cudaSuccess, "cudaMemsetAsync"));
}

}  // namespace
}  // namespace sparsejit
