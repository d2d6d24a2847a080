#include "formats/device_gather.hpp"

#include <cuda_runtime_api.h>

#include "cuda/runtime_check.hpp"
#include "formats/gpu_build.cuh"

namespace sparsejit::formats {
namespace {

using namespace gpu_build;

__global__ void gather(int64_t count, const int32_t* values, const int32_t* at, int32_t* out) {
  for (int64_t i = first_index(); i < count; i += grid_stride()) out[i] = values[at[i]];
}

}  // namespace

std::vector<int32_t> gather_int32(const Context& context, CUdeviceptr values, const std::vector<int32_t>& at, CUstream stream) {
  std::vector<int32_t> out(at.size());
  if (at.empty()) return out;
  context.make_current();
  const auto s = static_cast<cudaStream_t>(stream);
  const int64_t count = int64_t(at.size());
  const Scratch<int32_t> places(count, s), gathered(count, s);
  cuda::check_runtime(cudaMemcpyAsync(places.get(), at.data(), at.size() * 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (gather)");
  launch("gather", count, s, gather, count, reinterpret_cast<const int32_t*>(values), places.get(), gathered.get());
  cuda::check_runtime(cudaMemcpyAsync(out.data(), gathered.get(), at.size() * 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (gather)");
  cuda::check_runtime(cudaStreamSynchronize(s), "cudaStreamSynchronize (gather)");
  return out;
}

}  // namespace sparsejit::formats
