// What the formats' GPU builders (row_segments_gpu.cu, spgemm_bitmap_tiles_gpu.cu,
// spgemm_entry_products_gpu.cu, spgemm_warp_tasks_gpu.cu; nvcc translation units) share:
// stream-ordered scratch, a CUB algorithm run with its temporary storage, grid-stride launches,
// and the marking of a greedy chain by pointer doubling.
#pragma once
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cub/device/device_scan.cuh>
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

// The end of the greedy group of rows that begins at row r: the last r1 in [r + 1, rows] with
// the C entries (c_row_ptr) and products (first_product at A's row offsets) of rows r .. r1 - 1
// within max_entries and max_products, and r + 1 at least (row r is in its group whatever it
// holds). A row that passes a limit by itself ends any group before it.
__device__ inline int32_t greedy_group_end(const int32_t* c_row_ptr, const int32_t* a_row_ptr, const int32_t* first_product,
                                           int32_t rows, int32_t r, int64_t max_entries, int64_t max_products) {
  const int64_t c0 = c_row_ptr[r], p0 = first_product[a_row_ptr[r]];
  int32_t lo = r + 1, hi = rows;
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (c_row_ptr[mid] - c0 <= max_entries && first_product[a_row_ptr[mid]] - p0 <= max_products) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

namespace {  // each translation unit its own kernel: no device linking between them

// lengths[e] = the length of B's row a_col[e], for each of A's nnz entries.
__global__ void b_row_lengths(int64_t a_nnz, const int32_t* a_col, const int32_t* b_row_ptr, int32_t* lengths) {
  for (int64_t e = first_index(); e < a_nnz; e += grid_stride()) lengths[e] = b_row_ptr[a_col[e] + 1] - b_row_ptr[a_col[e]];
}

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

// first_product[e] = the products of A·B before A's entry e (A's entries in order, an entry
// of A times its B row), nnz + 1 of them: the last is the product count. lengths (nnz + 1)
// is overwritten. The count must be below 2^31 (the caller checks the features' count).
inline void first_products(int64_t a_nnz, const int32_t* a_col, const int32_t* b_row_ptr, int32_t* lengths, int32_t* first_product,
                           cudaStream_t s) {
  cuda::check_runtime(cudaMemsetAsync(lengths, 0, std::size_t(a_nnz + 1) * 4, s), "cudaMemsetAsync (first products)");
  launch("b_row_lengths", a_nnz, s, b_row_lengths, a_nnz, a_col, b_row_ptr, lengths);
  run_cub("cub::DeviceScan::ExclusiveSum (first products)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, lengths, first_product, int(a_nnz + 1), s);
  });
}

// Marks every item on the chains from the items already marked (the heads): marks[jump[q]]
// for each marked q, and so on, in ceil(log2(count)) rounds. jump[q] >= q (a jump to itself
// ends a chain); jump and spare (count ints each) are overwritten.
inline void mark_chains(int64_t count, int32_t* jump, int32_t* spare, int32_t* marks, cudaStream_t s) {
  int32_t *from = jump, *to = spare;
  for (int64_t reach = 1; reach < count; reach *= 2) {  // after a round, at least the first 2 x reach chain items are marked
    launch("chain_round", count, s, chain_round, count, from, marks, to);
    std::swap(from, to);
  }
}

// marks[q] = 1 for the items of the chain 0, jump[0], jump[jump[0]], ... and 0 for the rest.
inline void mark_chain(int64_t count, int32_t* jump, int32_t* spare, int32_t* marks, cudaStream_t s) {
  cuda::check_runtime(cudaMemsetAsync(marks, 0, std::size_t(count) * 4, s), "cudaMemsetAsync (chain marks)");
  const int32_t one = 1;
  cuda::check_runtime(cudaMemcpyAsync(marks, &one, 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (chain marks)");
  mark_chains(count, jump, spare, marks, s);
}

}  // namespace sparsejit::gpu_build
