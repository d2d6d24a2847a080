// NCCL is loaded only when a call spreads over GPUs (cuda/nccl.hpp). Without it the call fails
// with one sentence naming the path tried and how to point at the wheel's library; loading
// leaves multicast off unless the environment chose.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "cuda/nccl.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

TEST(NcclLoader, AMissingLibraryIsNamedWithTheWayToFixIt) {
  unsetenv("NCCL_NVLS_ENABLE");
  setenv("SPARSEJIT_NCCL_LIBRARY", "/nonexistent/libnccl.so.2", 1);
  try {
    cuda::NcclGroup group({0});
    FAIL() << "a group without NCCL";
  } catch (const UnsupportedError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("NCCL could not be loaded from '/nonexistent/libnccl.so.2'"), std::string::npos) << message;
    EXPECT_NE(message.find("nvidia-nccl-cu13"), std::string::npos) << message;
    EXPECT_NE(message.find("SPARSEJIT_NCCL_LIBRARY"), std::string::npos) << message;
  }
  const char* nvls = std::getenv("NCCL_NVLS_ENABLE");
  ASSERT_NE(nvls, nullptr);
  EXPECT_EQ(std::string(nvls), "0");
  EXPECT_THROW(cuda::NcclGroup::version(), UnsupportedError);  // the failure is remembered, not retried
}

}  // namespace
}  // namespace sparsejit
