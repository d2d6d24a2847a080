#include <algorithm>
#include <cmath>

#include "inspect/unchecked.hpp"

namespace sparsejit {
namespace inspect_detail {

BasicStats basic_stats(PatternView p) {
  BasicStats s;
  s.rows = p.rows;
  s.cols = p.cols;
  s.nnz = p.nnz();
  if (p.rows == 0) return s;
  if (p.cols > 0) s.density = double(s.nnz) / (double(p.rows) * double(p.cols));
  s.row_mean = double(s.nnz) / double(p.rows);
  s.row_min = s.nnz;
  // Squared deviations from the known mean, not sum-of-squares minus square-of-sum, which
  // cancels badly when the rows are long and alike.
  double squared_deviations = 0;
  for (int32_t r = 0; r < p.rows; ++r) {
    const int64_t length = int64_t(p.row_ptr[r + 1]) - p.row_ptr[r];
    s.row_min = std::min(s.row_min, length);
    s.row_max = std::max(s.row_max, length);
    if (length == 0) ++s.empty_rows;
    const double deviation = double(length) - s.row_mean;
    squared_deviations += deviation * deviation;
  }
  s.row_std = std::sqrt(squared_deviations / double(p.rows));
  s.row_cv = s.row_mean > 0 ? s.row_std / s.row_mean : 0.0;
  return s;
}

}  // namespace inspect_detail

BasicStats basic_stats(PatternView pattern) {
  validate(pattern, /*require_sorted=*/false);
  return inspect_detail::basic_stats(pattern);
}

}  // namespace sparsejit
