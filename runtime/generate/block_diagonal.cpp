// Block-diagonal matrix: dense diagonal blocks plus uniform noise outside each row's block.
#include <algorithm>

#include "generate/rows.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {

Csr<double> block_diagonal(int32_t n, int32_t block, int32_t noise_per_row, uint64_t seed) {
  const char* name = "blockdiag";
  detail::require_non_negative(n, name, "n");
  detail::require(block >= 1, name, "block size " + std::to_string(block) + " must be at least 1");
  detail::require_non_negative(noise_per_row, name, "noise_per_row");
  const int32_t widest_block = std::min(block, n);
  detail::require(noise_per_row <= n - widest_block, name,
                  "noise_per_row " + std::to_string(noise_per_row) + " exceeds the " + std::to_string(n - widest_block) +
                      " columns outside a " + std::to_string(widest_block) + "-wide block of an " + std::to_string(n) +
                      "-column matrix");
  detail::require_nnz_fits(n, int64_t(widest_block) + noise_per_row, name);
  return detail::build_rows(name, n, n, seed, int64_t(widest_block) + noise_per_row,
                            [&](int32_t row, detail::Rng& rng, std::vector<int32_t>& out) {
    const int32_t first = row / block * block;
    const int32_t width = std::min(block, n - first);
    const std::size_t start = out.size();
    detail::draw_distinct_outside(rng, n, {{first, width}}, noise_per_row, out);
    for (int32_t c = first; c < first + width; ++c) out.push_back(c);
    std::sort(out.begin() + std::ptrdiff_t(start), out.end());
  });
}

}  // namespace sparsejit::generate
