#include "support/gpu_suite.hpp"

#include <memory>

#include "support/test_support.hpp"

namespace sparsejit::test {

namespace {
std::unique_ptr<Runtime>& shared_runtime() {
  static std::unique_ptr<Runtime> runtime;
  return runtime;
}
}  // namespace

void GpuSuite::SetUp() {
  if (!driver_available()) GTEST_SKIP() << driver_unavailable_reason();
  if (!shared_runtime()) shared_runtime() = std::make_unique<Runtime>(0);
  seed_ = fresh_seed();
}

Runtime& GpuSuite::rt() { return *shared_runtime(); }

}  // namespace sparsejit::test
