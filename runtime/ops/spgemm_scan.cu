#include "ops/spgemm_scan.hpp"

#include <cuda_runtime_api.h>

#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>

#include "cuda/runtime_check.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::ops {

namespace {

int items(int64_t count) {
  if (count < 0 || count > std::numeric_limits<int>::max())
    throw InvalidInputError("exclusive_scan: " + std::to_string(count) + " values, expected [0, 2^31-1]");
  return int(count);
}

}  // namespace

std::size_t exclusive_scan_bytes(int64_t count) {
  std::size_t bytes = 0;
  cuda::check_runtime(cub::DeviceScan::ExclusiveSum(nullptr, bytes, static_cast<const int32_t*>(nullptr),
                                                    static_cast<int32_t*>(nullptr), items(count)),
                      "cub::DeviceScan::ExclusiveSum (size query)");
  return bytes;
}

void exclusive_scan(const int32_t* in, int32_t* out, int64_t count, void* temp, std::size_t temp_bytes, CUstream stream) {
  if (count == 0) return;
  std::size_t bytes = temp_bytes;
  cuda::check_runtime(cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, items(count), static_cast<cudaStream_t>(stream)),
                      "cub::DeviceScan::ExclusiveSum of " + std::to_string(count) + " values");
}

}  // namespace sparsejit::ops
