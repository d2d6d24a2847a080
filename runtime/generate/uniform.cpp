// Uniform random sparse matrix: a fixed number of distinct uniform columns per row.
#include "generate/rows.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {

Csr<double> uniform(int32_t rows, int32_t cols, int32_t nnz_per_row, uint64_t seed) {
  const char* name = "uniform";
  detail::require_non_negative(rows, name, "rows");
  detail::require_non_negative(cols, name, "cols");
  detail::require_non_negative(nnz_per_row, name, "nnz_per_row");
  detail::require(nnz_per_row <= cols, name,
                  "nnz_per_row " + std::to_string(nnz_per_row) + " exceeds cols " + std::to_string(cols));
  detail::require_nnz_fits(rows, nnz_per_row, name);
  return detail::build_rows(name, rows, cols, seed, nnz_per_row,
                            [&](int32_t, detail::Rng& rng, std::vector<int32_t>& out) {
                              detail::draw_distinct(rng, cols, nnz_per_row, out);
                            });
}

}  // namespace sparsejit::generate
