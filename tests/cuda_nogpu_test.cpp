// Without a CUDA driver the library must still load, say clearly why GPU work is unavailable,
// and refuse GPU work with UnsupportedError. On a machine with a GPU these tests skip.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "cuda/driver_api.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

const std::string kConsequence = "GPU work is unavailable; info, inspect and explain still work";

class NoGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (driver_available()) GTEST_SKIP() << "a CUDA driver and device are present; the no-GPU paths cannot be exercised";
  }
};

bool libcuda_loadable() {
  void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library != nullptr) dlclose(library);
  return library != nullptr;
}

TEST_F(NoGpu, ReasonSaysWhatIsMissingAndWhatStillWorks) {
  const std::string& reason = driver_unavailable_reason();
  if (!libcuda_loadable()) {
    EXPECT_EQ(reason, "no CUDA driver (libcuda.so.1 not found): " + kConsequence);
  } else {
    EXPECT_NE(reason.find(kConsequence), std::string::npos) << reason;
  }
  EXPECT_EQ(cuda::driver_unavailable_reason(), reason);
}

TEST_F(NoGpu, DeviceCountIsZero) { EXPECT_EQ(device_count(), 0); }

TEST_F(NoGpu, ContextThrowsUnsupportedWithTheReason) {
  try {
    Context context(0);
    FAIL() << "Context(0) succeeded without a driver";
  } catch (const UnsupportedError& e) {
    EXPECT_EQ(std::string(e.what()), driver_unavailable_reason());
    EXPECT_EQ(e.category(), ErrorCategory::Unsupported);
  }
}

TEST_F(NoGpu, DeviceInfoAndDriverTableThrowUnsupported) {
  EXPECT_THROW(device_info(0), UnsupportedError);
  EXPECT_THROW(cuda::driver(), UnsupportedError);
}

TEST_F(NoGpu, CheckedCallFailureNamesTheCallAndTheCode) {
  // Without libcuda there is no cuGetErrorName, so the code is printed as a number.
  try {
    cuda::check(CUDA_ERROR_INVALID_IMAGE, "cuModuleLoadData");
    FAIL() << "check() accepted an error code";
  } catch (const CudaError& e) {
    EXPECT_EQ(std::string(e.what()), "cuModuleLoadData failed: CUDA error 200");
  }
  EXPECT_NO_THROW(cuda::check(CUDA_SUCCESS, "cuInit"));
}

}  // namespace
}  // namespace sparsejit
