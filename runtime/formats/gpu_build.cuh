// What the formats' GPU builders (row_segments_gpu.cu, spgemm_bitmap_tiles_gpu.cu,
// spgemm_entry_products_gpu.cu, spgemm_warp_tasks_gpu.cu; nvcc translation units) share:
// stream-ordered scratch, a CUB algorithm run with its temporary storage, grid-stride launches,
// and the marking of a greedy chain by pointer doubling.
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

// The last i in [0, n) with sorted[i] <= x, given sorted[0] <= x: an entry's row, a product's
// entry of A.
template <class U>
__device__ int32_t last_at_most(const U* sorted, int64_t n, int64_t x) {
  int64_t lo = 0, hi = n - 1;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (sorted[mid] <= x) lo = mid;
    else hi = mid - 1;
  }
  return int32_t(lo);
}

namespace {  // each translation unit its own kernel: no device linking between them

// One round of pointer doubling: the items on the chain from item 0 mark those 2^k steps on,
// and each jump doubles. Marks are set in place: a mark only ever goes from 0 to 1 and only on
// a chain item, so one seen early in the round marking further is still right.
__global__ void chain_round(int64_t count, const int32_t* jump, int32_t* on, int32_t* jump_next) {
  for (int64_t q = first_index(); q < count; q += grid_stride()) {
    if (on[q]) on[jump[q]] = 1;
    jump_next[q] = jump[jump[q]];
  }
}

}  // namespace

// marks[q] = 1 for the items of the chain 0, jump[0], jump[jump[0]], ... and 0 for the rest, in
// ceil(log2(count)) rounds. jump[q] > q for every q but the last, which jumps to itself; jump
// and spare (count ints each) are overwritten.
inline void mark_chain(int64_t count, int32_t* jump, int32_t* spare, int32_t* marks, cudaStream_t s) {
  cuda::check_runtime(cudaMemsetAsync(marks, 0, std::size_t(count) * 4, s), "cudaMemsetAsync (chain marks)");
  const int32_t one = 1;
  cuda::check_runtime(cudaMemcpyAsync(marks, &one, 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (chain marks)");
  int32_t *from = jump, *to = spare;
  for (int64_t reach = 1; reach < count; reach *= 2) {  // after a round, at least the first 2 x reach chain items are marked
    launch("chain_round", count, s, chain_round, count, from, marks, to);
    std::swap(from, to);
  }
}

}  // namespace sparsejit::gpu_build
