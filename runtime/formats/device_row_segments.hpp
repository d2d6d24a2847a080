// The RS-SpMM heavy/light split (formats/row_segments.hpp) on the device, cached on the
// matrix handle.
//
// Layout on the device: the heavy arrays and work items exactly as the host split holds them;
// the light part as a CSR over ALL rows of A (light_ptr has rows + 1 entries, rows without
// light nonzeros are empty), so the light kernel can write every row of C with plain stores
// before the heavy kernel adds to it, and C needs no clearing for A·B.
//
// Lifecycle: the split depends on the pattern and on the values. The cache entry (key
// "rs_split:W:T:dtype:S", S = segments per work item) lives as long as the handle; current()
// rebuilds the split when the handle's values_version() moved since it was built
// (update_values), otherwise it returns the split it holds. The split is built on the device
// (row_segments_gpu.hpp: about 1.8 ms for 10M nonzeros on an H200, where the host builder
// plus the values' download and the arrays' upload took about 90 ms), on a stream of its own
// that is synchronised before the split is returned, so calls on any stream may use it.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>

#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"

namespace sparsejit {

template <class T>
struct DeviceRowSegments {
  int32_t rows = 0;
  int32_t cols = 0;
  int32_t panel_width = 0;
  int32_t threshold = 0;
  int32_t items = 0;  // heavy work items (blocks of the heavy kernel)
  int64_t heavy_segments = 0;
  int64_t heavy_nnz = 0;
  int64_t light_nnz = 0;
  uint64_t values_version = 0;  // of the handle's values the split was built from

  // Heavy part and its work items (int32 each, value T for heavy_val).
  DeviceBuffer block_panel, block_seg_begin, block_seg_end;
  DeviceBuffer seg_row, seg_ptr, heavy_col, heavy_val;
  // Light part: CSR over all rows.
  DeviceBuffer light_ptr, light_col, light_val;
};

// Builds the split of `a` on the device. InvalidInputError (from build_row_segments_gpu)
// naming the value when panel_width, threshold or segments_per_block < 1, or naming the row
// when a row of `a` is not sorted with unique columns. Instantiated for float and double.
template <class T>
std::shared_ptr<const DeviceRowSegments<T>> upload_row_segments(const DeviceCsr<T>& a, int32_t panel_width,
                                                               int32_t threshold, int32_t segments_per_block);

// The split of one handle for one (W, T, S), rebuilt when the handle's values change.
template <class T>
class CachedRowSegments {
 public:
  CachedRowSegments(int32_t panel_width, int32_t threshold, int32_t segments_per_block)
      : panel_width_(panel_width), threshold_(threshold), segments_per_block_(segments_per_block) {}
  // The split of a's current values (a must be the handle this entry is cached on).
  std::shared_ptr<const DeviceRowSegments<T>> current(const DeviceCsr<T>& a);

 private:
  const int32_t panel_width_, threshold_, segments_per_block_;
  std::mutex mutex_;
  std::shared_ptr<const DeviceRowSegments<T>> split_;
};

// The handle's cache entry for (W, T, S), created (empty; built on first current()) when absent.
template <class T>
std::shared_ptr<CachedRowSegments<T>> cached_row_segments(const DeviceCsr<T>& a, int32_t panel_width, int32_t threshold,
                                                          int32_t segments_per_block);

}  // namespace sparsejit
