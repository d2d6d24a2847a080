#include "ops/spgemm_tile_sort.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <limits>
#include <string>

#include "cuda/runtime_check.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::ops {

namespace {

int items(int64_t count) {
  if (count < 0 || count > std::numeric_limits<int>::max())
    throw InvalidInputError("tile sort: " + std::to_string(count) + " items, expected [0, 2^31-1]");
  return int(count);
}

}  // namespace

std::size_t tile_sort_bytes(int64_t count, int end_bit) {
  std::size_t sort_bytes = 0, encode_bytes = 0;
  cuda::check_runtime(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr),
                                                      static_cast<uint64_t*>(nullptr), static_cast<const uint64_t*>(nullptr),
                                                      static_cast<uint64_t*>(nullptr), items(count), 0, end_bit),
                      "cub::DeviceRadixSort::SortPairs (size query)");
  cuda::check_runtime(cub::DeviceRunLengthEncode::Encode(nullptr, encode_bytes, static_cast<const uint64_t*>(nullptr),
                                                         static_cast<uint64_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                                         static_cast<int32_t*>(nullptr), items(count)),
                      "cub::DeviceRunLengthEncode::Encode (size query)");
  return std::max(sort_bytes, encode_bytes);
}

void sort_pairs(const uint64_t* keys_in, uint64_t* keys_out, const uint64_t* values_in, uint64_t* values_out, int64_t count,
                int end_bit, void* temp, std::size_t temp_bytes, CUstream stream) {
  if (count == 0) return;
  std::size_t bytes = temp_bytes;
  cuda::check_runtime(cub::DeviceRadixSort::SortPairs(temp, bytes, keys_in, keys_out, values_in, values_out, items(count), 0, end_bit,
                                                      static_cast<cudaStream_t>(stream)),
                      "cub::DeviceRadixSort::SortPairs of " + std::to_string(count) + " items");
}

void run_lengths(const uint64_t* keys, uint64_t* unique, int32_t* lengths, int32_t* runs, int64_t count, void* temp,
                 std::size_t temp_bytes, CUstream stream) {
  std::size_t bytes = temp_bytes;
  cuda::check_runtime(cub::DeviceRunLengthEncode::Encode(temp, bytes, keys, unique, lengths, runs, items(count),
                                                         static_cast<cudaStream_t>(stream)),
                      "cub::DeviceRunLengthEncode::Encode of " + std::to_string(count) + " items");
}

}  // namespace sparsejit::ops
