#include "cuda/runtime_check.hpp"

#include "cuda/driver_api.hpp"

namespace sparsejit::cuda {

void check_runtime(cudaError_t status, const std::string& call) {
  if (status == cudaSuccess) return;
  // A failure (CUB's included) stays the thread's last error: clear it, or the next call's
  // launch check reports it again after this one was thrown (seen after an out-of-memory). A
  // sticky error cannot be cleared; fail() says so.
  (void)cudaGetLastError();
  fail(status, call + " failed: " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")");
}

}  // namespace sparsejit::cuda
