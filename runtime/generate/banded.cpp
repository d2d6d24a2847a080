// Banded random sparse matrix: each row draws its columns near the diagonal.
#include <algorithm>

#include "generate/rows.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {

Csr<double> banded(int32_t n, int32_t nnz_per_row, int32_t half_width, uint64_t seed) {
  const char* name = "band";
  detail::require_non_negative(n, name, "n");
  detail::require_non_negative(nnz_per_row, name, "nnz_per_row");
  detail::require_non_negative(half_width, name, "half_width");
  detail::require_nnz_fits(n, nnz_per_row, name);
  return detail::build_rows(name, n, n, seed, nnz_per_row, [&](int32_t row, detail::Rng& rng, std::vector<int32_t>& out) {
    // Offsets row + [-H, H): 2H columns (the diagonal alone when H = 0), clamped to [0, n).
    const int64_t width = std::max<int64_t>(1, 2 * int64_t(half_width));
    const int32_t lo = int32_t(std::max<int64_t>(0, int64_t(row) - half_width));
    const int32_t end = int32_t(std::min<int64_t>(n, int64_t(row) - half_width + width));
    detail::draw_merged(rng, lo, end - lo, nnz_per_row, out);
  });
}

}  // namespace sparsejit::generate
