#include <algorithm>
#include <cmath>

#include "inspect/unchecked.hpp"

namespace sparsejit {
namespace {

// The median of the values, reordering them; the mean of the two middle ones for an even count.
double median(std::vector<int32_t>& values) {
  const std::size_t middle = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + std::ptrdiff_t(middle), values.end());
  const double upper = values[middle];
  if (values.size() % 2 == 1) return upper;
  const double lower = *std::max_element(values.begin(), values.begin() + std::ptrdiff_t(middle));
  return (lower + upper) / 2;
}

void require_product_shapes(PatternView a, PatternView b) {
  if (a.cols != b.rows)
    throw InvalidInputError("product A·B of a " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " A and a " +
                            std::to_string(b.rows) + "x" + std::to_string(b.cols) + " B: A.cols " + std::to_string(a.cols) +
                            " != B.rows " + std::to_string(b.rows));
}

}  // namespace

namespace inspect_detail {

TileStats bitmap_tiles(PatternView p, int32_t tile) {
  TileStats s;
  s.tile = tile;
  std::vector<int32_t> entries_per_tile;
  for_each_tile(p, tile, [&](int32_t, int32_t, int32_t entries) { entries_per_tile.push_back(entries); });
  s.tiles = int64_t(entries_per_tile.size());
  if (s.tiles == 0) return s;
  s.nnz_mean = double(p.nnz()) / double(s.tiles);
  double squared_deviations = 0;
  for (const int32_t entries : entries_per_tile) {
    const double deviation = double(entries) - s.nnz_mean;
    squared_deviations += deviation * deviation;
  }
  s.nnz_std = std::sqrt(squared_deviations / double(s.tiles));
  s.nnz_median = median(entries_per_tile);
  s.bitmap_density = s.nnz_mean / (double(tile) * double(tile));
  return s;
}

}  // namespace inspect_detail

TileStats bitmap_tiles(PatternView pattern, int32_t tile) {
  inspect_detail::require_positive("tile size", tile);
  validate(pattern, /*require_sorted=*/false);
  return inspect_detail::bitmap_tiles(pattern, tile);
}

int64_t element_products(PatternView a, PatternView b) {
  require_product_shapes(a, b);
  validate(a, /*require_sorted=*/false);
  validate(b, /*require_sorted=*/false);
  int64_t products = 0;
  for (int64_t e = 0; e < a.nnz(); ++e) {
    const int32_t k = a.col_idx[e];
    products += int64_t(b.row_ptr[k + 1]) - b.row_ptr[k];
  }
  return products;
}

int64_t tile_products(PatternView a, PatternView b, int32_t tile) {
  inspect_detail::require_positive("tile size", tile);
  require_product_shapes(a, b);
  validate(a, /*require_sorted=*/false);
  validate(b, /*require_sorted=*/false);
  std::vector<int64_t> tiles_in_b_tile_row(std::size_t((int64_t(b.rows) + tile - 1) / tile), 0);
  inspect_detail::for_each_tile(b, tile, [&](int32_t tile_row, int32_t, int32_t) { ++tiles_in_b_tile_row[std::size_t(tile_row)]; });
  int64_t products = 0;
  inspect_detail::for_each_tile(a, tile, [&](int32_t, int32_t tile_col, int32_t) {
    products += tiles_in_b_tile_row[std::size_t(tile_col)];
  });
  return products;
}

}  // namespace sparsejit
