#include "inspect/unchecked.hpp"

namespace sparsejit {

int cluster_bin(int64_t distance) {
  if (distance < 1) throw InvalidInputError("clustering distance " + std::to_string(distance) + " must be >= 1");
  if (distance == 1) return 0;
  // 1 + floor(log4(distance)) = 1 + floor(floor(log2(distance)) / 2).
  const int log2_floor = 63 - __builtin_clzll(static_cast<unsigned long long>(distance));
  return std::min(1 + log2_floor / 2, kClusterBins - 1);
}

int64_t cluster_bin_lower(int bin) {
  if (bin < 0 || bin >= kClusterBins)
    throw InvalidInputError("clustering bin " + std::to_string(bin) + " out of range [0, " + std::to_string(kClusterBins) + ")");
  if (bin <= 1) return bin + 1;
  return int64_t(1) << (2 * (bin - 1));
}

namespace inspect_detail {

ClusterBins clustering_bins(PatternView p, int32_t panel_width) {
  ClusterBins bins;
  bins.panel_width = panel_width;
  for (int32_t r = 0; r < p.rows; ++r) {
    const int32_t begin = p.row_ptr[r], end = p.row_ptr[r + 1];
    if (begin == end) continue;
    ++bins.accumulations;  // the row's first segment
    for (int32_t e = begin + 1; e < end; ++e) {
      ++bins.counts[std::size_t(cluster_bin(int64_t(p.col_idx[e]) - p.col_idx[e - 1]))];
      if (p.col_idx[e] / panel_width != p.col_idx[e - 1] / panel_width) ++bins.accumulations;
    }
  }
  for (const int64_t count : bins.counts) bins.distances += count;
  if (bins.distances > 0)
    for (int b = 0; b < kClusterBins; ++b)
      bins.fractions[std::size_t(b)] = double(bins.counts[std::size_t(b)]) / double(bins.distances);
  return bins;
}

}  // namespace inspect_detail

ClusterBins clustering_bins(PatternView pattern, int32_t panel_width) {
  inspect_detail::require_positive("panel width", panel_width);
  validate(pattern, /*require_sorted=*/true);
  return inspect_detail::clustering_bins(pattern, panel_width);
}

}  // namespace sparsejit
