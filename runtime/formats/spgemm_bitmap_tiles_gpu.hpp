// bitmap_tc's operand tiles built on the device: the arrays of formats/spgemm_bitmap_tiles.hpp
// (the host builder there is the specification: every array comes out identical), from a
// handle's device CSR. The host builder costs about 7 ns an entry (5 ms for cyl6's 0.7 M),
// more than the product it prepares on block-dense matrices; here it is a radix sort of the
// entries by tile and a few elementwise kernels.
//
// Steps (nnz entries, `tiles` non-empty tiles):
//   keys    each entry's tile key (tile row x tile columns + tile column) and its bit
//   sort    CUB's radix sort of the entries by key (stable: CSR order within a tile)
//   runs    CUB's run-length encoding: the tiles in key order (tile row, then tile column) and
//           their entries; a scan gives each tile's first entry
//   tiles   each tile's row, column and bitmap (the OR of its entries' bits); a scan of the
//           bitmaps' counts gives the packed offsets
//   slots   each entry's packed slot: its tile's offset plus the tile's set bits below its bit
//   rows    the tile rows' first tiles (a binary search of the keys)
// Scratch, stream-ordered (cudaMallocAsync), is about 30 bytes per entry at its peak.
#pragma once
#include <cuda.h>

#include <cstdint>

#include "formats/spgemm_bitmap_tiles.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"

namespace sparsejit::formats {

struct DeviceBitmapTiles {
  int32_t tile_rows = 0;  // ceil(rows / 8)
  int32_t tile_cols = 0;  // ceil(cols / 8)
  int64_t tiles = 0;
  DeviceBuffer row_ptr;   // tile_rows + 1 int32
  DeviceBuffer tile_row;  // tiles int32
  DeviceBuffer tile_col;  // tiles int32
  DeviceBuffer bits;      // tiles uint64
  DeviceBuffer offset;    // tiles + 1 int32
  DeviceBuffer slot;      // nnz int32
};

// Builds the tiles of the pattern (rows x cols, nnz entries at row_ptr and col_idx on the
// device; rows may be unsorted and name a column twice) on `stream` and waits for it: the
// arrays are complete on return. `tiles` is the number of non-empty 8 x 8 tiles, which the
// caller knows from the SpGEMM features (a_tiles, b_tiles); a device that finds another count
// is a CudaError naming both.
DeviceBitmapTiles build_bitmap_tiles_gpu(const Context& context, int32_t rows, int32_t cols, int64_t nnz, CUdeviceptr row_ptr,
                                         CUdeviceptr col_idx, int64_t tiles, CUstream stream);

// A host copy in the host builder's layout (blocking). For tests.
BitmapTiles download(const DeviceBitmapTiles& tiles);

}  // namespace sparsejit::formats
