#include <algorithm>
#include <cmath>
#include <limits>

#include "inspect/unchecked.hpp"

namespace sparsejit {
namespace {

std::string tile_name(const char* matrix, int32_t i, int32_t j) {
  return std::string(matrix) + " tile (" + std::to_string(i) + ", " + std::to_string(j) + ")";
}

void check_norm_map(const NormMap& map, const char* matrix) {
  if (map.tile_rows < 0 || map.tile_cols < 0 || map.norms.size() != std::size_t(map.tile_rows) * std::size_t(map.tile_cols))
    throw InvalidInputError(std::string(matrix) + " norm map of " + std::to_string(map.tile_rows) + "x" + std::to_string(map.tile_cols) +
                            " tiles holds " + std::to_string(map.norms.size()) + " norms");
  for (std::size_t t = 0; t < map.norms.size(); ++t)
    if (std::isnan(map.norms[t]))
      throw InvalidInputError(tile_name(matrix, int32_t(t / std::size_t(map.tile_cols)), int32_t(t % std::size_t(map.tile_cols))) +
                              " has a NaN norm");
}

}  // namespace

template <class T>
NormMap tile_norms(const Dense<T>& m, int32_t tile) {
  inspect_detail::require_positive("tile size", tile);
  if (m.rows < 0 || m.cols < 0 || m.data.size() != std::size_t(std::max(m.rows, 0)) * std::size_t(std::max(m.cols, 0)))
    throw InvalidInputError("dense matrix " + std::to_string(m.rows) + "x" + std::to_string(m.cols) + " holds " +
                            std::to_string(m.data.size()) + " values");
  NormMap map;
  map.tile = tile;
  map.tile_rows = int32_t((int64_t(m.rows) + tile - 1) / tile);
  map.tile_cols = int32_t((int64_t(m.cols) + tile - 1) / tile);
  map.norms.assign(std::size_t(map.tile_rows) * std::size_t(map.tile_cols), 0.0);
  // Sums of squares row by row (the storage order), square roots at the end.
  for (int32_t r = 0; r < m.rows; ++r) {
    double* sums = &map.norms[std::size_t(r / tile) * std::size_t(map.tile_cols)];
    for (int32_t tile_col = 0; tile_col < map.tile_cols; ++tile_col) {
      // int64: the last tile's first + tile can pass INT32_MAX.
      const int64_t first = int64_t(tile_col) * tile, last = std::min<int64_t>(first + tile, m.cols);
      double sum = 0;
      for (int64_t c = first; c < last; ++c) {
        const double v = static_cast<double>(m.at(r, c));
        sum += v * v;
      }
      sums[tile_col] += sum;
    }
  }
  for (double& norm : map.norms) norm = std::sqrt(norm);
  return map;
}

double valid_ratio(const NormMap& a, const NormMap& b, double tau) {
  if (a.tile != b.tile)
    throw InvalidInputError("norm maps of tile " + std::to_string(a.tile) + " (A) and " + std::to_string(b.tile) + " (B) differ");
  if (a.tile_cols != b.tile_rows)
    throw InvalidInputError("A has " + std::to_string(a.tile_cols) + " tile columns but B has " + std::to_string(b.tile_rows) +
                            " tile rows");
  if (std::isnan(tau)) throw InvalidInputError("SpAMM threshold tau is NaN");
  check_norm_map(a, "A");
  check_norm_map(b, "B");
  const int64_t triples = int64_t(a.tile_rows) * a.tile_cols * b.tile_cols;
  if (triples == 0) return 0.0;
  // Each tile row k of B sorted, so the j with ||A_ik||·||B_kj|| >= tau are a suffix found
  // by binary search on the product itself (not tau / ||A_ik||, which rounds differently).
  std::vector<std::vector<double>> sorted_b_rows(std::size_t(b.tile_rows));
  for (int32_t k = 0; k < b.tile_rows; ++k) {
    const auto row = b.norms.begin() + std::ptrdiff_t(k) * b.tile_cols;
    sorted_b_rows[std::size_t(k)].assign(row, row + b.tile_cols);
    std::sort(sorted_b_rows[std::size_t(k)].begin(), sorted_b_rows[std::size_t(k)].end());
  }
  int64_t valid = 0;
  for (int32_t i = 0; i < a.tile_rows; ++i)
    for (int32_t k = 0; k < a.tile_cols; ++k) {
      const double a_norm = a.at(i, k);
      const std::vector<double>& b_row = sorted_b_rows[std::size_t(k)];
      const auto first_valid = std::partition_point(b_row.begin(), b_row.end(), [&](double b_norm) { return a_norm * b_norm < tau; });
      valid += b_row.end() - first_valid;
    }
  return double(valid) / double(triples);
}

SpammSelection spamm_selection(const NormMap& a, const NormMap& b, double tau) {
  valid_ratio(a, b, 0.0);  // the same argument checks
  if (std::isnan(tau)) throw InvalidInputError("SpAMM threshold tau is NaN");
  SpammSelection s;
  s.triples = int64_t(a.tile_rows) * a.tile_cols * b.tile_cols;
  double bound_squared = 0;
  double min_positive = std::numeric_limits<double>::infinity();
  for (int32_t i = 0; i < a.tile_rows; ++i)
    for (int32_t j = 0; j < b.tile_cols; ++j) {
      double skipped = 0;
      for (int32_t k = 0; k < a.tile_cols; ++k) {
        const double product = a.at(i, k) * b.at(k, j);
        if (product >= tau) ++s.valid;
        else skipped += product;
        s.max_product = std::max(s.max_product, product);
        if (product > 0) min_positive = std::min(min_positive, product);
      }
      bound_squared += skipped * skipped;
    }
  s.ratio = s.triples == 0 ? 0.0 : double(s.valid) / double(s.triples);
  s.error_bound = std::sqrt(bound_squared);
  s.min_positive_product = std::isinf(min_positive) ? 0.0 : min_positive;
  return s;
}

template NormMap tile_norms(const Dense<float>&, int32_t);
template NormMap tile_norms(const Dense<double>&, int32_t);
template NormMap tile_norms(const Dense<half>&, int32_t);
template NormMap tile_norms(const Dense<bfloat16>&, int32_t);

}  // namespace sparsejit
