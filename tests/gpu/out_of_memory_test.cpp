// Out of GPU memory (issue 27, on the device): a clear error that names the bytes, thrown
// before anything is written, and a runtime that stays usable: the next call on the same
// runtime and the same handles runs and is right.
#include <gtest/gtest.h>

#include <vector>

#include "sparsejit/error.hpp"
#include "support/gpu_suite.hpp"

namespace sparsejit {
namespace {

class OutOfMemory : public test::GpuSuite {};

bool c_untouched(const DeviceDense<float>& c) {
  for (const float v : c.download().data)
    if (!test::is_poison(v)) return false;
  return true;
}

TEST_F(OutOfMemory, AnOperandLargerThanTheGpuNamesTheBytesAndTheRuntimeGoesOn) {
  const std::size_t too_big = rt().device().total_mem + (std::size_t(1) << 30);
  try {
    DeviceBuffer buffer(rt().context(), too_big);
    ADD_FAILURE() << "allocated " << too_big << " bytes";
  } catch (const CudaError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("out of GPU memory"), std::string::npos) << message;
    EXPECT_NE(message.find(std::to_string(too_big)), std::string::npos) << message;
  }
  test::SpmmCase<float> c(rt(), generate::uniform(3000, 2000, 9, next_seed()), 40, false, next_seed());
  c.dc.buffer().fill_bytes(0xFF);
  rt().spmm(c.da, c.db, c.dc);
  EXPECT_LT(test::relative_error(test::as_double(c.dc.download().data), test::as_double(c.expected.data)),
            test::gpu_tolerance<float>());
}

// The operands fit, the format the plan needs does not: the call fails with a sparsejit error
// before its kernel writes C, and once memory is free again the same call on the same handle
// runs and is right (no half-built format or plan is left on the handle).
TEST_F(OutOfMemory, AFormatThatDoesNotFitLeavesCUnwrittenAndTheHandleUsable) {
  test::SpmmCase<float> c(rt(), generate::clustered(20000, 20000, 32, 0.7, 16, next_seed()), 64, false, next_seed());
  c.dc.buffer().fill_bytes(0xFF);
  Options rs;
  rs.variant = "rs";  // builds its heavy/light split on the GPU first
  {
    // Take the device's memory, coarsely then to the last megabyte.
    std::vector<DeviceBuffer> hog;
    for (std::size_t chunk : {std::size_t(1) << 30, std::size_t(1) << 24, std::size_t(1) << 20}) {
      try {
        while (true) hog.emplace_back(rt().context(), chunk);
      } catch (const CudaError&) {
      }
    }
    ASSERT_LT(rt().context().free_bytes(), std::size_t(4) << 20);
    try {
      rt().spmm(c.da, c.db, c.dc, rs);
      ADD_FAILURE() << "rs ran with " << rt().context().free_bytes() << " bytes free";
    } catch (const Error& e) {
      SUCCEED() << e.what();
    }
    EXPECT_TRUE(c_untouched(c.dc));
  }
  const CallInfo call = rt().spmm(c.da, c.db, c.dc, rs);
  EXPECT_EQ(call.decision->variant, "rs");
  EXPECT_LT(test::relative_error(test::as_double(c.dc.download().data), test::as_double(c.expected.data)),
            test::gpu_tolerance<float>());
}

}  // namespace
}  // namespace sparsejit
