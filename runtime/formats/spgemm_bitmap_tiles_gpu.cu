#include "formats/spgemm_bitmap_tiles_gpu.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_run_length_encode.cuh>
#include <cub/device/device_scan.cuh>
#include <string>
#include <utility>

#include "cuda/runtime_check.hpp"
#include "formats/gpu_build.cuh"
#include "sparsejit/error.hpp"

namespace sparsejit::formats {
namespace {

using namespace gpu_build;

// The row of entry e: the last row whose first entry is at most e.
__device__ int32_t row_of(const int32_t* row_ptr, int32_t rows, int64_t e) {
  int32_t lo = 0, hi = rows - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) / 2;
    if (row_ptr[mid] <= e) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

__global__ void entry_keys(int32_t rows, int64_t nnz, const int32_t* row_ptr, const int32_t* col_idx, int64_t tile_cols,
                           uint64_t* keys, int32_t* ids, uint8_t* bit) {
  for (int64_t e = first_index(); e < nnz; e += grid_stride()) {
    const int32_t r = row_of(row_ptr, rows, e), c = col_idx[e];
    keys[e] = uint64_t(r / kBitmapTileEdge) * uint64_t(tile_cols) + uint64_t(c / kBitmapTileEdge);
    ids[e] = int32_t(e);
    bit[e] = uint8_t((r % kBitmapTileEdge) * kBitmapTileEdge + c % kBitmapTileEdge);
  }
}

// Each tile's row, column and bitmap, and its set bits (the packed values' counts).
__global__ void tile_bitmaps(int64_t tiles, const int32_t* run_start, const int32_t* run_length, const int32_t* sorted_ids,
                             const uint8_t* bit, const uint64_t* tile_keys, int64_t tile_cols, int32_t* tile_row,
                             int32_t* tile_col, uint64_t* bits, int32_t* counts) {
  for (int64_t u = first_index(); u < tiles; u += grid_stride()) {
    uint64_t set = 0;
    for (int32_t s = run_start[u]; s < run_start[u] + run_length[u]; ++s) set |= uint64_t(1) << bit[sorted_ids[s]];
    tile_row[u] = int32_t(tile_keys[u] / uint64_t(tile_cols));
    tile_col[u] = int32_t(tile_keys[u] % uint64_t(tile_cols));
    bits[u] = set;
    counts[u] = __popcll(set);
  }
}

__global__ void entry_slots(int64_t tiles, const int32_t* run_start, const int32_t* run_length, const int32_t* sorted_ids,
                            const uint8_t* bit, const uint64_t* bits, const int32_t* offset, int32_t* slot) {
  for (int64_t u = first_index(); u < tiles; u += grid_stride())
    for (int32_t s = run_start[u]; s < run_start[u] + run_length[u]; ++s) {
      const int32_t e = sorted_ids[s];
      slot[e] = offset[u] + __popcll(bits[u] & ((uint64_t(1) << bit[e]) - 1));
    }
}

// row_ptr[I] = the first tile of tile row I or later (keys ascending).
__global__ void tile_row_starts(int32_t tile_rows, int64_t tiles, const uint64_t* tile_keys, int64_t tile_cols, int32_t* row_ptr) {
  for (int64_t i = first_index(); i <= tile_rows; i += grid_stride()) {
    const uint64_t key = uint64_t(i) * uint64_t(tile_cols);
    int64_t lo = 0, hi = tiles;
    while (lo < hi) {
      const int64_t mid = (lo + hi) / 2;
      if (tile_keys[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    row_ptr[i] = int32_t(lo);
  }
}

}  // namespace

DeviceBitmapTiles build_bitmap_tiles_gpu(const Context& context, int32_t rows, int32_t cols, int64_t nnz, CUdeviceptr row_ptr,
                                         CUdeviceptr col_idx, int64_t tiles, CUstream stream) {
  context.make_current();
  const auto s = static_cast<cudaStream_t>(stream);
  DeviceBitmapTiles t;
  t.tile_rows = int32_t(tiles_across(rows));
  t.tile_cols = int32_t(tiles_across(cols));
  t.tiles = tiles;
  t.row_ptr = DeviceBuffer(context, (std::size_t(t.tile_rows) + 1) * 4);
  t.tile_row = DeviceBuffer(context, std::size_t(tiles) * 4);
  t.tile_col = DeviceBuffer(context, std::size_t(tiles) * 4);
  t.bits = DeviceBuffer(context, std::size_t(tiles) * 8);
  t.offset = DeviceBuffer(context, (std::size_t(tiles) + 1) * 4);
  t.slot = DeviceBuffer(context, std::size_t(nnz) * 4);
  if (nnz == 0) {
    t.row_ptr.fill_bytes_async(0, stream);
    t.offset.fill_bytes_async(0, stream);
    cuda::check_runtime(cudaStreamSynchronize(s), "cudaStreamSynchronize (bitmap tiles)");
    return t;
  }
  const int items = int(nnz);  // a CSR's entries are int32-indexed
  const auto* offsets = reinterpret_cast<const int32_t*>(row_ptr);
  const auto* columns = reinterpret_cast<const int32_t*>(col_idx);
  const Scratch<uint64_t> keys(nnz, s), sorted_keys(nnz, s), tile_keys(nnz, s);
  const Scratch<int32_t> ids(nnz, s), sorted_ids(nnz, s), run_length(nnz + 1, s), run_start(nnz + 1, s), runs(1, s),
      counts(tiles + 1, s);
  const Scratch<uint8_t> bit(nnz, s);
  launch("entry_keys", nnz, s, entry_keys, rows, nnz, offsets, columns, int64_t(t.tile_cols), keys.get(), ids.get(), bit.get());
  const int end_bit = tile_key_bits(t.tile_rows, t.tile_cols);
  run_cub("cub::DeviceRadixSort::SortPairs (bitmap tiles)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, keys.get(), sorted_keys.get(), ids.get(), sorted_ids.get(), items, 0, end_bit, s);
  });
  cuda::check_runtime(cudaMemsetAsync(run_length.get(), 0, (std::size_t(nnz) + 1) * 4, s), "cudaMemsetAsync (bitmap tiles)");
  run_cub("cub::DeviceRunLengthEncode::Encode (bitmap tiles)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRunLengthEncode::Encode(temp, bytes, sorted_keys.get(), tile_keys.get(), run_length.get(), runs.get(), items, s);
  });
  run_cub("cub::DeviceScan::ExclusiveSum (bitmap tile runs)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, run_length.get(), run_start.get(), int(tiles) + 1, s);
  });
  cuda::check_runtime(cudaMemsetAsync(counts.get(), 0, (std::size_t(tiles) + 1) * 4, s), "cudaMemsetAsync (bitmap tiles)");
  launch("tile_bitmaps", tiles, s, tile_bitmaps, tiles, run_start.get(), run_length.get(), sorted_ids.get(), bit.get(),
         tile_keys.get(), int64_t(t.tile_cols), t.tile_row.as<int32_t>(), t.tile_col.as<int32_t>(),
         t.bits.as<uint64_t>(), counts.get());
  run_cub("cub::DeviceScan::ExclusiveSum (bitmap tile offsets)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, counts.get(), t.offset.as<int32_t>(), int(tiles) + 1, s);
  });
  launch("entry_slots", tiles, s, entry_slots, tiles, run_start.get(), run_length.get(), sorted_ids.get(), bit.get(),
         t.bits.as<uint64_t>(), t.offset.as<int32_t>(), t.slot.as<int32_t>());
  launch("tile_row_starts", int64_t(t.tile_rows) + 1, s, tile_row_starts, t.tile_rows, tiles, tile_keys.get(), int64_t(t.tile_cols),
         t.row_ptr.as<int32_t>());
  int32_t found = 0;
  cuda::check_runtime(cudaMemcpyAsync(&found, runs.get(), 4, cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (bitmap tile count)");
  cuda::check_runtime(cudaStreamSynchronize(s), "cudaStreamSynchronize (bitmap tiles)");
  if (found != tiles)
    throw CudaError("bitmap tiles: the device found " + std::to_string(found) + " non-empty 8x8 tiles where the features count " +
                    std::to_string(tiles));
  return t;
}

BitmapTiles download(const DeviceBitmapTiles& d) {
  BitmapTiles t;
  t.tile_rows = d.tile_rows;
  t.tile_cols = d.tile_cols;
  t.row_ptr = d.row_ptr.download_as<int32_t>(std::size_t(d.tile_rows) + 1);
  t.tile_row = d.tile_row.download_as<int32_t>(std::size_t(d.tiles));
  t.tile_col = d.tile_col.download_as<int32_t>(std::size_t(d.tiles));
  t.bits = d.bits.download_as<uint64_t>(std::size_t(d.tiles));
  t.offset = d.offset.download_as<int32_t>(std::size_t(d.tiles) + 1);
  t.slot = d.slot.download_as<int32_t>(d.slot.bytes() / 4);
  return t;
}

}  // namespace sparsejit::formats
