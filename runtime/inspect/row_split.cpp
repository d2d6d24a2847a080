#include "inspect/unchecked.hpp"

namespace sparsejit {

SplitStats row_segment_split(PatternView p, int32_t panel_width, int32_t threshold) {
  inspect_detail::require_positive("panel width", panel_width);
  inspect_detail::require_positive("heavy threshold", threshold);
  validate(p, /*require_sorted=*/true);
  SplitStats s;
  s.panel_width = panel_width;
  s.threshold = threshold;
  s.panels = int32_t((int64_t(p.cols) + panel_width - 1) / panel_width);
  for (int32_t r = 0; r < p.rows; ++r) {
    bool keeps_light = false;
    // Sorted columns put each segment's entries next to each other: [begin, end).
    for (int32_t begin = p.row_ptr[r], end; begin < p.row_ptr[r + 1]; begin = end) {
      const int32_t panel = p.col_idx[begin] / panel_width;
      end = begin + 1;
      while (end < p.row_ptr[r + 1] && p.col_idx[end] / panel_width == panel) ++end;
      ++s.segments;
      if (end - begin >= threshold) {
        ++s.heavy_segments;
        s.heavy_nnz += end - begin;
      } else {
        keeps_light = true;
      }
    }
    if (keeps_light) ++s.light_rows;
  }
  const int64_t nnz = p.nnz();
  s.light_nnz = nnz - s.heavy_nnz;
  s.heavy_fraction = nnz > 0 ? double(s.heavy_nnz) / double(nnz) : 0.0;
  return s;
}

}  // namespace sparsejit
