#include "formats/device_row_segments.hpp"

#include <string>
#include <utility>

#include "formats/row_segments_gpu.hpp"
#include "sparsejit/types.hpp"

namespace sparsejit {

template <class T>
std::shared_ptr<const DeviceRowSegments<T>> upload_row_segments(const DeviceCsr<T>& a, int32_t panel_width,
                                                               int32_t threshold, int32_t segments_per_block) {
  const uint64_t version = a.values_version();
  // A stream of its own, synchronised before the split is handed out: the split is shared by
  // every later call on any stream, so it must be complete, not just ordered on one stream.
  const Stream stream(a.context());
  DeviceRowSegmentSplit<T> split = build_row_segments_gpu(a, panel_width, threshold, segments_per_block, stream.handle());
  stream.synchronize();
  auto d = std::make_shared<DeviceRowSegments<T>>();
  d->rows = split.rows;
  d->cols = split.cols;
  d->panel_width = split.panel_width;
  d->threshold = split.threshold;
  d->items = split.blocks;
  d->heavy_segments = split.heavy_segments;
  d->heavy_nnz = split.heavy_nnz;
  d->light_nnz = split.light_nnz;
  d->values_version = version;
  d->block_panel = std::move(split.block_panel);
  d->block_seg_begin = std::move(split.block_seg_begin);
  d->block_seg_end = std::move(split.block_seg_end);
  d->seg_row = std::move(split.seg_row);
  d->seg_ptr = std::move(split.seg_ptr);
  d->heavy_col = std::move(split.heavy_col);
  d->heavy_val = std::move(split.heavy_val);
  d->light_ptr = std::move(split.light_ptr);
  d->light_col = std::move(split.light_col);
  d->light_val = std::move(split.light_val);
  return d;
}

template <class T>
std::shared_ptr<const DeviceRowSegments<T>> CachedRowSegments<T>::current(const DeviceCsr<T>& a) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!split_ || split_->values_version != a.values_version())
    split_ = upload_row_segments(a, panel_width_, threshold_, segments_per_block_);
  return split_;
}

template <class T>
std::shared_ptr<CachedRowSegments<T>> cached_row_segments(const DeviceCsr<T>& a, int32_t panel_width, int32_t threshold,
                                                          int32_t segments_per_block) {
  const std::string key = "rs_split:" + std::to_string(panel_width) + ":" + std::to_string(threshold) + ":" +
                          to_string(dtype_of<T>::value) + ":" + std::to_string(segments_per_block);
  return a.template get_or_create<CachedRowSegments<T>>(
      key, [&] { return std::make_shared<CachedRowSegments<T>>(panel_width, threshold, segments_per_block); });
}

#define SPARSEJIT_INSTANTIATE(T)                                                                                  \
  template std::shared_ptr<const DeviceRowSegments<T>> upload_row_segments(const DeviceCsr<T>&, int32_t, int32_t, \
                                                                          int32_t);                               \
  template class CachedRowSegments<T>;                                                                            \
  template std::shared_ptr<CachedRowSegments<T>> cached_row_segments(const DeviceCsr<T>&, int32_t, int32_t, int32_t);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
