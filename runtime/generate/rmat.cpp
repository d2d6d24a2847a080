// R-MAT power-law graphs: each edge picks one quadrant of a recursive 2×2 split per level.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "generate/rows.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {
namespace {

// Edges are drawn in fixed chunks, each from its own stream, so that chunks can run in
// parallel and the result does not depend on the thread count.
constexpr int64_t kEdgesPerChunk = int64_t(1) << 16;

// Cumulative probabilities of top-left, top-right, bottom-left, scaled to 16-bit draws.
struct Quadrants {
  uint32_t a, ab, abc;
  Quadrants(double pa, double pb, double pc)
      : a(scaled(pa)), ab(scaled(pa + pb)), abc(scaled(pa + pb + pc)) {}
  static uint32_t scaled(double p) { return uint32_t(std::lround(std::min(1.0, p) * 65536.0)); }
};

int levels_for(int32_t rows) {
  int levels = 0;
  while ((int64_t(1) << levels) < rows) ++levels;
  return levels;
}

// One edge inside rows×rows, re-drawn while it falls outside (rows not a power of two). Each
// level uses 16 random bits (probabilities resolved to 2^-16), four levels per 64-bit draw.
void draw_edge(detail::Rng& rng, int levels, int32_t rows, const Quadrants& q, int32_t& row, int32_t& col) {
  do {
    int64_t r = 0, c = 0;
    uint64_t bits = 0;
    for (int level = 0; level < levels; ++level) {
      if (level % 4 == 0) bits = rng.next();
      const uint32_t u = uint32_t(bits & 0xFFFFu);
      bits >>= 16;
      r = 2 * r + (u >= q.ab ? 1 : 0);
      c = 2 * c + ((u >= q.a && u < q.ab) || u >= q.abc ? 1 : 0);
    }
    row = int32_t(r);
    col = int32_t(c);
  } while (row >= rows || col >= rows);
}

void check_rmat_arguments(int32_t rows, int64_t edges, double a, double b, double c) {
  const char* name = "rmat";
  detail::require_non_negative(rows, name, "rows");
  detail::require_non_negative(edges, name, "edges");
  detail::require_nnz_fits(edges, 1, name);
  detail::require(rows > 0 || edges == 0, name, std::to_string(edges) + " edges need at least one row");
  for (double p : {a, b, c})
    detail::require(p >= 0.0 && p <= 1.0, name, "quadrant probability " + std::to_string(p) + " outside [0, 1]");
  detail::require(a + b + c <= 1.0 + 1e-12, name,
                  "quadrant probabilities a + b + c = " + std::to_string(a + b + c) + " exceed 1");
}

}  // namespace

Csr<double> rmat(int32_t rows, int64_t edges, uint64_t seed, double a, double b, double c) {
  check_rmat_arguments(rows, edges, a, b, c);
  const Quadrants q(a, b, c);
  const int levels = levels_for(rows);
  std::vector<int32_t> edge_row(static_cast<std::size_t>(edges)), edge_col(static_cast<std::size_t>(edges));
  const int64_t chunks = (edges + kEdgesPerChunk - 1) / kEdgesPerChunk;
  sparsejit::detail::parallel_for(chunks, kEdgesPerChunk * std::max(1, levels), [&](int, int64_t begin, int64_t end) {
    for (int64_t chunk = begin; chunk < end; ++chunk) {
      detail::Rng rng(seed, detail::Stream::EdgeChunk, uint64_t(chunk));
      const int64_t last = std::min(edges, (chunk + 1) * kEdgesPerChunk);
      for (int64_t e = chunk * kEdgesPerChunk; e < last; ++e)
        draw_edge(rng, levels, rows, q, edge_row[std::size_t(e)], edge_col[std::size_t(e)]);
    }
  });
  // Bucket the edges by row (counting sort, edge order kept), then build rows from the buckets.
  std::vector<int64_t> bucket_start(static_cast<std::size_t>(rows) + 1, 0);
  for (int32_t r : edge_row) ++bucket_start[std::size_t(r) + 1];
  std::partial_sum(bucket_start.begin(), bucket_start.end(), bucket_start.begin());
  std::vector<int32_t> bucketed(edge_col.size());
  {
    std::vector<int64_t> next(bucket_start.begin(), bucket_start.end() - 1);
    for (std::size_t e = 0; e < edge_row.size(); ++e) bucketed[std::size_t(next[std::size_t(edge_row[e])]++)] = edge_col[e];
  }
  edge_row = std::vector<int32_t>();
  edge_col = std::vector<int32_t>();
  const int64_t mean_degree = rows > 0 ? edges / rows + 1 : 1;
  return detail::build_rows("rmat", rows, rows, seed, mean_degree, [&](int32_t row, detail::Rng&, std::vector<int32_t>& out) {
    const std::size_t start = out.size();
    out.insert(out.end(), bucketed.begin() + bucket_start[std::size_t(row)], bucketed.begin() + bucket_start[std::size_t(row) + 1]);
    std::sort(out.begin() + std::ptrdiff_t(start), out.end());
    out.erase(std::unique(out.begin() + std::ptrdiff_t(start), out.end()), out.end());
  });
}

}  // namespace sparsejit::generate
