#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "inspect/unchecked.hpp"

namespace sparsejit {

void inspect_detail::require_positive(const char* what, int64_t value) {
  if (value < 1) throw InvalidInputError(std::string(what) + " " + std::to_string(value) + " must be >= 1");
}

Features inspect(PatternView pattern) {
  validate(pattern, /*require_sorted=*/true);
  Features f;
  f.basic = inspect_detail::basic_stats(pattern);
  f.clustering = inspect_detail::clustering_bins(pattern, kDefaultPanelWidth);
  f.tiles = inspect_detail::bitmap_tiles(pattern, kDefaultTile);
  f.fingerprint = inspect_detail::fingerprint(pattern);
  return f;
}

nlohmann::json to_json(const Features& f) {
  nlohmann::json j;
  const BasicStats& b = f.basic;
  j["rows"] = b.rows;
  j["cols"] = b.cols;
  j["nnz"] = b.nnz;
  j["density"] = b.density;
  j["row_min"] = b.row_min;
  j["row_max"] = b.row_max;
  j["row_mean"] = b.row_mean;
  j["row_std"] = b.row_std;
  j["row_cv"] = b.row_cv;
  j["empty_rows"] = b.empty_rows;
  const ClusterBins& c = f.clustering;
  j["cluster_distances"] = c.distances;
  for (int bin = 0; bin < kClusterBins; ++bin) {
    j["cluster_count_" + std::to_string(bin)] = c.counts[std::size_t(bin)];
    j["cluster_frac_" + std::to_string(bin)] = c.fractions[std::size_t(bin)];
  }
  j["accumulations"] = c.accumulations;
  j["accumulation_panel_width"] = c.panel_width;
  const TileStats& t = f.tiles;
  j["tile_size"] = t.tile;
  j["tiles"] = t.tiles;
  j["tile_nnz_median"] = t.nnz_median;
  j["tile_nnz_mean"] = t.nnz_mean;
  j["tile_nnz_std"] = t.nnz_std;
  j["bitmap_density"] = t.bitmap_density;
  j["fingerprint"] = fingerprint_hex(f.fingerprint);
  return j;
}

nlohmann::json to_json(const SplitStats& s) {
  return {{"panel_width", s.panel_width},       {"threshold", s.threshold}, {"panels", s.panels},
          {"segments", s.segments},             {"heavy_segments", s.heavy_segments},
          {"heavy_nnz", s.heavy_nnz},           {"heavy_fraction", s.heavy_fraction},
          {"light_rows", s.light_rows},         {"light_nnz", s.light_nnz}};
}

nlohmann::json to_json(const NormMap& m) {
  double min = 0, max = 0, sum = 0, squares = 0;
  if (!m.norms.empty()) {
    const auto [lowest, highest] = std::minmax_element(m.norms.begin(), m.norms.end());
    min = *lowest;
    max = *highest;
  }
  for (const double norm : m.norms) {
    sum += norm;
    squares += norm * norm;
  }
  const double mean = m.norms.empty() ? 0.0 : sum / double(m.norms.size());
  return {{"tile", m.tile},   {"tile_rows", m.tile_rows}, {"tile_cols", m.tile_cols},           {"norm_min", min},
          {"norm_max", max}, {"norm_mean", mean},       {"norm_total", std::sqrt(squares)}};
}

namespace {

std::string format(const char* spec, double value) {
  char text[64];
  std::snprintf(text, sizeof text, spec, value);
  return text;
}

std::string distance_range(int bin) {
  const int64_t lower = cluster_bin_lower(bin);
  if (bin + 1 == kClusterBins) return ">= " + std::to_string(lower);
  const int64_t upper = cluster_bin_lower(bin + 1) - 1;
  return lower == upper ? std::to_string(lower) : std::to_string(lower) + "-" + std::to_string(upper);
}

}  // namespace

std::string describe(const Features& f) {
  const BasicStats& b = f.basic;
  const ClusterBins& c = f.clustering;
  const TileStats& t = f.tiles;
  std::ostringstream out;
  out << "shape        " << b.rows << " x " << b.cols << ", " << b.nnz << " nonzeros, density " << format("%.3g", b.density)
      << "\n";
  out << "row length   min " << b.row_min << ", max " << b.row_max << ", mean " << format("%.3f", b.row_mean) << ", std "
      << format("%.3f", b.row_std) << ", cv " << format("%.3f", b.row_cv) << ", " << b.empty_rows << " empty rows\n";
  out << "column gaps  " << c.distances << " between neighbours in a row:";
  for (int bin = 0; bin < kClusterBins; ++bin)
    if (c.counts[std::size_t(bin)] > 0)
      out << " [" << distance_range(bin) << "] " << format("%.1f%%", 100 * c.fractions[std::size_t(bin)]);
  out << "\n";
  out << "row segments " << c.accumulations << " non-empty in " << c.panel_width << "-column panels (accumulations)\n";
  out << "tiles " << t.tile << "x" << t.tile << "    " << t.tiles << " non-empty, nonzeros per tile median "
      << format("%.1f", t.nnz_median) << ", mean " << format("%.2f", t.nnz_mean) << ", std " << format("%.2f", t.nnz_std)
      << ", bitmap density " << format("%.3f", t.bitmap_density) << "\n";
  out << "fingerprint  " << fingerprint_hex(f.fingerprint) << "\n";
  return out.str();
}

}  // namespace sparsejit
