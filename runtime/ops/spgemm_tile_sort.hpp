// The device-wide sort and run-length encoding bitmap_tc groups its tile products by the tile
// of C they add into with (CUB, compiled by nvcc in spgemm_tile_sort.cu; DESIGN.md allows CUB
// in nvcc translation units).
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace sparsejit::ops {

// Bytes of temporary storage sort_pairs and run_lengths need for `count` items (the larger of
// the two; no device work).
std::size_t tile_sort_bytes(int64_t count, int end_bit);

// keys_out, values_out = keys_in, values_in sorted by key bits [0, end_bit) (stable), enqueued
// on `stream` in the current context. The arrays hold `count` items and do not overlap.
void sort_pairs(const uint64_t* keys_in, uint64_t* keys_out, const uint64_t* values_in, uint64_t* values_out, int64_t count,
                int end_bit, void* temp, std::size_t temp_bytes, CUstream stream);

// The runs of equal keys of sorted `keys`: unique[r] and lengths[r] for r < *runs (a device
// int), enqueued on `stream`.
void run_lengths(const uint64_t* keys, uint64_t* unique, int32_t* lengths, int32_t* runs, int64_t count, void* temp,
                 std::size_t temp_bytes, CUstream stream);

}  // namespace sparsejit::ops
