// What the formats' GPU builders (row_segments_gpu.cu, spgemm_bitmap_tiles_gpu.cu; nvcc
// translation units) share: stream-ordered scratch, a CUB algorithm run with its temporary
// storage, and grid-stride launches.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "cuda/runtime_check.hpp"

namespace sparsejit::gpu_build {

constexpr int kThreads = 256;
// Grid-stride loops cover any count with at most this many blocks.
constexpr int64_t kMaxBlocks = int64_t(1) << 20;

// Device memory for one build step, freed in stream order when its owner goes away
// (cudaMallocAsync / cudaFreeAsync: a build never waits for the device to free it).
template <class U>
class Scratch {
 public:
  Scratch(int64_t count, cudaStream_t stream) : stream_(stream) {
    const std::size_t bytes = std::size_t(std::max<int64_t>(count, 1)) * sizeof(U);
    cuda::check_runtime(cudaMallocAsync(reinterpret_cast<void**>(&data_), bytes, stream),
                        "cudaMallocAsync(" + std::to_string(bytes) + " bytes)");
  }
  ~Scratch() {
    if (data_ != nullptr) cudaFreeAsync(data_, stream_);  // a destructor cannot report
  }
  Scratch(Scratch&& other) noexcept : data_(std::exchange(other.data_, nullptr)), stream_(other.stream_) {}
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  Scratch& operator=(Scratch&&) = delete;

  U* get() const { return data_; }

 private:
  U* data_ = nullptr;
  cudaStream_t stream_;
};

// Runs one CUB device algorithm: call(temp, bytes) first sizes, then does the work.
template <class Call>
void run_cub(const char* name, cudaStream_t stream, const Call& call) {
  std::size_t bytes = 0;
  cuda::check_runtime(call(nullptr, bytes), name);
  Scratch<unsigned char> temp(int64_t(bytes), stream);  // never null, so the second call works
  cuda::check_runtime(call(temp.get(), bytes), name);
}

// kernel<<<enough blocks of kThreads for count items, at most kMaxBlocks>>>(args...).
template <class Kernel, class... Args>
void launch(const char* name, int64_t count, cudaStream_t stream, Kernel kernel, Args... args) {
  if (count <= 0) return;
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, kMaxBlocks);
  kernel<<<unsigned(blocks), kThreads, 0, stream>>>(args...);
  cuda::check_runtime(cudaGetLastError(), std::string("launch of ") + name);
}

__device__ inline int64_t first_index() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

}  // namespace sparsejit::gpu_build
