// The RS-SpMM heavy/light split built on the GPU, for matrices where the host builder
// (row_segments.hpp, ~0.6 s for 30M nonzeros, about 200 SpMM calls on an H200) costs more
// than a few SpMM calls (the executor's split, device_row_segments.hpp, is built here). The
// heavy arrays and work items, their order and their contents are EXACTLY those of
// build_row_segments (layout, definitions and a worked example in row_segments.hpp). The
// light part differs in one way: it is a CSR over ALL rows of A (light_ptr has rows + 1
// entries, a row without light nonzeros is empty) instead of a CSR over the light rows with
// light_row naming them, which is what the light kernel reads; light_col and light_val are
// the host builder's arrays unchanged (CSR order either way). Every array is a DeviceBuffer
// of int32 indices or T values, sized to its count (an empty array is an empty buffer).
//
// Cost: O(nnz + rows + panels) work in a fixed sequence of CUB scans, one radix sort of
// nnz (segment, panel) pairs and a few elementwise kernels, plus ONE host synchronisation
// (the counts are copied to the host to size the outputs). Temporary memory, stream-ordered
// (cudaMallocAsync), is about 40 bytes per nonzero at its peak.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "formats/row_segments.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"

namespace sparsejit {

template <class T>
struct DeviceRowSegmentSplit {
  int32_t rows = 0;
  int32_t cols = 0;
  int32_t panel_width = 0;             // W
  int32_t threshold = 0;               // T
  int32_t panels = 0;                  // ceil(cols / W)
  int32_t max_segments_per_block = 0;

  // Counts; the buffers below hold exactly these many elements.
  int64_t heavy_segments = 0;
  int64_t heavy_nnz = 0;
  int64_t light_nnz = 0;
  int32_t blocks = 0;                  // heavy work items

  // Heavy part (DCSR per panel).
  DeviceBuffer panel_ptr;              // panels + 1
  DeviceBuffer seg_row;                // heavy_segments
  DeviceBuffer seg_ptr;                // heavy_segments + 1
  DeviceBuffer heavy_col;              // heavy_nnz, relative to the panel start
  DeviceBuffer heavy_val;              // heavy_nnz T

  // Heavy work items.
  DeviceBuffer block_panel;            // blocks
  DeviceBuffer block_seg_begin;        // blocks
  DeviceBuffer block_seg_end;          // blocks

  // Light part (CSR over all rows).
  DeviceBuffer light_ptr;              // rows + 1
  DeviceBuffer light_col;              // light_nnz, absolute columns
  DeviceBuffer light_val;              // light_nnz T
};

// Builds the split of `a` on the device. Work is enqueued on `stream` (a CUstream, the same
// type as cudaStream_t; nullptr is the legacy default stream); the function returns once the
// counts are known and the remaining kernels are enqueued, so the arrays are complete in
// stream order: work the caller puts on `stream` afterwards sees them, other streams must
// wait for it (or synchronise).
// Throws InvalidInputError naming the value when panel_width, threshold or
// max_segments_per_block is < 1, and naming the row, position and column of the first
// violation when a row of `a` is not sorted with unique columns (the host builder's
// precondition; DeviceCsr does not require it); CudaError when a CUDA call fails.
// Instantiated for float, double, half and bfloat16.
template <class T>
DeviceRowSegmentSplit<T> build_row_segments_gpu(const DeviceCsr<T>& a, int32_t panel_width, int32_t threshold,
                                                int32_t max_segments_per_block, CUstream stream);

// A host copy of every array in the device layout: light_row empty, light_ptr over all rows;
// light_rows counts the rows whose light range is not empty (blocking; waits for `split`'s
// construction stream only through the legacy default stream, so synchronise a non-blocking
// build stream first). For tests: compare with light_over_all_rows(build_row_segments(...)).
template <class T>
RowSegmentSplit<T> download(const DeviceRowSegmentSplit<T>& split);

// A host split (row_segments.hpp layout) with its light part turned into the device layout:
// light_ptr over all rows, light_row empty; everything else unchanged.
template <class T>
RowSegmentSplit<T> light_over_all_rows(RowSegmentSplit<T> split) {
  std::vector<int32_t> ptr(std::size_t(split.rows) + 1, 0);
  for (std::size_t i = 0; i < split.light_row.size(); ++i)
    ptr[std::size_t(split.light_row[i]) + 1] = split.light_ptr[i + 1] - split.light_ptr[i];
  for (std::size_t r = 0; r < std::size_t(split.rows); ++r) ptr[r + 1] += ptr[r];
  split.light_ptr = std::move(ptr);
  split.light_row.clear();
  return split;
}

}  // namespace sparsejit
