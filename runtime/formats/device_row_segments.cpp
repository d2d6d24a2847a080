#include "formats/device_row_segments.hpp"

#include <string>
#include <vector>

#include "formats/row_segments.hpp"
#include "sparsejit/types.hpp"

namespace sparsejit {
namespace {

// The light CSR of the split (over the rows listed in light_row) as a CSR over all rows.
template <class T>
std::vector<int32_t> light_ptr_over_all_rows(const RowSegmentSplit<T>& split) {
  std::vector<int32_t> ptr(std::size_t(split.rows) + 1, 0);
  for (std::size_t i = 0; i < split.light_row.size(); ++i)
    ptr[std::size_t(split.light_row[i]) + 1] = split.light_ptr[i + 1] - split.light_ptr[i];
  for (std::size_t r = 0; r < std::size_t(split.rows); ++r) ptr[r + 1] += ptr[r];
  return ptr;
}

template <class T>
Csr<T> host_copy(const DeviceCsr<T>& a) {
  const PatternView p = a.host_pattern();
  Csr<T> host;
  host.rows = p.rows;
  host.cols = p.cols;
  host.row_ptr.assign(p.row_ptr, p.row_ptr + std::size_t(p.rows) + 1);
  host.col_idx.assign(p.col_idx, p.col_idx + std::size_t(a.nnz()));
  host.values = a.values().template download_as<T>(std::size_t(a.nnz()));
  return host;
}

}  // namespace

template <class T>
std::shared_ptr<const DeviceRowSegments<T>> upload_row_segments(const DeviceCsr<T>& a, int32_t panel_width,
                                                               int32_t threshold, int32_t segments_per_block) {
  const uint64_t version = a.values_version();
  const RowSegmentSplit<T> split = build_row_segments(host_copy(a), panel_width, threshold, segments_per_block);
  const Context& ctx = a.context();
  auto d = std::make_shared<DeviceRowSegments<T>>();
  d->rows = split.rows;
  d->cols = split.cols;
  d->panel_width = split.panel_width;
  d->threshold = split.threshold;
  d->items = split.blocks();
  d->heavy_segments = split.heavy_segments;
  d->heavy_nnz = split.heavy_nnz;
  d->light_nnz = split.light_nnz;
  d->values_version = version;
  d->block_panel = DeviceBuffer::from_host(ctx, split.block_panel);
  d->block_seg_begin = DeviceBuffer::from_host(ctx, split.block_seg_begin);
  d->block_seg_end = DeviceBuffer::from_host(ctx, split.block_seg_end);
  d->seg_row = DeviceBuffer::from_host(ctx, split.seg_row);
  d->seg_ptr = DeviceBuffer::from_host(ctx, split.seg_ptr);
  d->heavy_col = DeviceBuffer::from_host(ctx, split.heavy_col);
  d->heavy_val = DeviceBuffer::from_host(ctx, split.heavy_val);
  d->light_ptr = DeviceBuffer::from_host(ctx, light_ptr_over_all_rows(split));
  d->light_col = DeviceBuffer::from_host(ctx, split.light_col);
  d->light_val = DeviceBuffer::from_host(ctx, split.light_val);
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
