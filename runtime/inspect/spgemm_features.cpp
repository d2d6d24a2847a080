// SpGEMM features (features.hpp): one pass over A's entries for the products, one over each
// pattern for its row statistics and sortedness.
#include <algorithm>
#include <limits>
#include <vector>

#include "inspect/unchecked.hpp"

namespace sparsejit {
namespace {

// 1 + ceil(log2(p)) for p >= 1: the bucket of a row with p products.
int product_bucket(int64_t p) {
  int bits = 0;
  while ((int64_t(1) << bits) < p) ++bits;
  return 1 + bits;
}

// The smallest and largest column of a row; empty: first > last.
struct ColumnRange {
  int32_t first = std::numeric_limits<int32_t>::max();
  int32_t last = -1;
  void cover(ColumnRange other) {
    first = std::min(first, other.first);
    last = std::max(last, other.last);
  }
};

std::vector<ColumnRange> column_ranges(PatternView p) {
  std::vector<ColumnRange> ranges(std::size_t(p.rows));
  for (int32_t r = 0; r < p.rows; ++r)
    for (int32_t e = p.row_ptr[r]; e < p.row_ptr[r + 1]; ++e) ranges[std::size_t(r)].cover({p.col_idx[e], p.col_idx[e]});
  return ranges;
}

bool rows_sorted(PatternView p) {
  for (int32_t r = 0; r < p.rows; ++r)
    for (int32_t e = p.row_ptr[r] + 1; e < p.row_ptr[r + 1]; ++e)
      if (p.col_idx[e - 1] >= p.col_idx[e]) return false;
  return true;
}

// The 8 x 8 tile counts: B's tiles per tile row, then A's tiles, each adding the tiles of B's
// tile row it meets (its tile column).
void add_tile_features(SpgemmFeatures& f, PatternView a, PatternView b) {
  constexpr int32_t kTile = 8;
  std::vector<int64_t> b_row_tiles(std::size_t((int64_t(b.rows) + kTile - 1) / kTile), 0);
  inspect_detail::for_each_tile(b, kTile, [&](int32_t tile_row, int32_t, int32_t) {
    ++b_row_tiles[std::size_t(tile_row)];
    ++f.b_tiles;
  });
  inspect_detail::for_each_tile(a, kTile, [&](int32_t, int32_t tile_col, int32_t) {
    f.tile_products += b_row_tiles[std::size_t(tile_col)];
    ++f.a_tiles;
  });
  const auto density = [](int64_t nnz, int64_t tiles) { return tiles > 0 ? double(nnz) / (double(tiles) * kTile * kTile) : 0.0; };
  f.a_tile_density = density(f.a.nnz, f.a_tiles);
  f.b_tile_density = density(f.b.nnz, f.b_tiles);
}

}  // namespace

SpgemmFeatures spgemm_features(PatternView a, PatternView b) {
  if (a.cols != b.rows)
    throw InvalidInputError("spgemm: A is " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + " but B has " +
                            std::to_string(b.rows) + " rows (A·B needs " + std::to_string(a.cols) + "; B is " +
                            std::to_string(b.rows) + "x" + std::to_string(b.cols) + ")");
  validate(a, /*require_sorted=*/false);
  validate(b, /*require_sorted=*/false);
  SpgemmFeatures f;
  f.a = inspect_detail::basic_stats(a);
  f.b = inspect_detail::basic_stats(b);
  const std::vector<ColumnRange> b_ranges = column_ranges(b);
  for (int32_t r = 0; r < a.rows; ++r) {
    int64_t p = 0;
    ColumnRange span;
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
      const int32_t k = a.col_idx[e];
      p += int64_t(b.row_ptr[k + 1]) - b.row_ptr[k];
      span.cover(b_ranges[std::size_t(k)]);
    }
    f.products += p;
    f.max_row_products = std::max(f.max_row_products, p);
    if (p > 0) {
      ++f.product_rows;
      f.max_row_span = std::max(f.max_row_span, int64_t(span.last) - span.first + 1);
    }
    const std::size_t bucket = std::size_t(p == 0 ? 0 : product_bucket(p));
    ++f.rows_by_products[bucket];
    f.products_by_bucket[bucket] += p;
  }
  f.a_sorted = rows_sorted(a);
  f.b_sorted = rows_sorted(b);
  add_tile_features(f, a, b);
  return f;
}

namespace {
int64_t sum_up_to(const std::array<int64_t, kProductBuckets>& buckets, int64_t limit) {
  const int last = product_bucket(std::max<int64_t>(limit, 1));
  int64_t sum = 0;
  for (int bucket = 1; bucket <= last && bucket < kProductBuckets; ++bucket) sum += buckets[std::size_t(bucket)];
  return sum;
}
}  // namespace

int64_t rows_with_products_up_to(const SpgemmFeatures& f, int64_t limit) { return sum_up_to(f.rows_by_products, limit); }

int64_t products_of_rows_up_to(const SpgemmFeatures& f, int64_t limit) { return sum_up_to(f.products_by_bucket, limit); }

nlohmann::json to_json(const SpgemmFeatures& f) {
  nlohmann::json j;
  j["rows_a"] = f.a.rows;
  j["cols_a"] = f.a.cols;
  j["nnz_a"] = f.a.nnz;
  j["row_a"] = f.a.row_mean;
  j["row_a_max"] = f.a.row_max;
  j["rows_b"] = f.b.rows;
  j["cols_b"] = f.b.cols;
  j["nnz_b"] = f.b.nnz;
  j["row_b"] = f.b.row_mean;
  j["row_b_max"] = f.b.row_max;
  j["products"] = f.products;
  j["max_row_products"] = f.max_row_products;
  j["product_rows"] = f.product_rows;
  j["max_row_span"] = f.max_row_span;
  j["products_per_row"] = f.a.rows > 0 ? double(f.products) / double(f.a.rows) : 0.0;
  j["a_sorted"] = f.a_sorted;
  j["b_sorted"] = f.b_sorted;
  j["a_tiles"] = f.a_tiles;
  j["b_tiles"] = f.b_tiles;
  j["tile_products"] = f.tile_products;
  j["products_per_tile_product"] = f.tile_products > 0 ? double(f.products) / double(f.tile_products) : 0.0;
  j["a_tile_density"] = f.a_tile_density;
  j["b_tile_density"] = f.b_tile_density;
  int last = 0;
  for (int bucket = 0; bucket < kProductBuckets; ++bucket)
    if (f.rows_by_products[std::size_t(bucket)] > 0) last = bucket;
  j["rows_by_products"] = std::vector<int64_t>(f.rows_by_products.begin(), f.rows_by_products.begin() + last + 1);
  j["products_by_bucket"] = std::vector<int64_t>(f.products_by_bucket.begin(), f.products_by_bucket.begin() + last + 1);
  return j;
}

}  // namespace sparsejit
