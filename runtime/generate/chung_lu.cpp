// Chung-Lu power-law graphs: entry (i, j) is present with probability min(1, s·w_i·w_j), where
// w_i = (i + 1)^(-1/(γ-1)), so the expected row and column degrees follow a power law of
// exponent γ, and s makes the expected nonzero count the one asked for.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "generate/rows.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {
namespace {

// Newton steps allowed when solving for the scale; each step lands on or below the root, and a
// few (one per saturated run of columns it crosses) reach it in practice.
constexpr int kScaleSteps = 64;

// A row's walk costs about its nonzeros plus this many candidates that find nothing (see
// walk_row), in units of one nonzero.
constexpr int64_t kWorkPerRow = 2;

// Ten significant digits: "2.0000001" stays itself, where std::to_string would print 2.000000.
std::string decimal(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

void check_chung_lu_arguments(int32_t n, int64_t nnz, double exponent) {
  const char* name = "chunglu";
  detail::require(n >= 1, name, "rows " + std::to_string(n) + " must be at least 1");
  detail::require(nnz >= 1, name, "nnz " + std::to_string(nnz) + " must be at least 1");
  detail::require(nnz <= int64_t(n) * n, name,
                  "nnz " + std::to_string(nnz) + " exceeds the " + std::to_string(int64_t(n) * n) + " entries of " +
                      std::to_string(n) + "x" + std::to_string(n));
  detail::require_nnz_fits(nnz, 1, name);
  // At or below 2 the mean of a power-law degree distribution diverges: the expected degrees
  // would all sit in the first rows, however large the graph.
  detail::require(std::isfinite(exponent) && exponent > 2.0, name,
                  "exponent " + decimal(exponent) +
                      " must be a finite number above 2 (at or below 2 a power law's mean degree diverges)");
}

// w_i = (i + 1)^(-1/(γ-1)), non-increasing in i: rows and columns are ordered by expected degree.
std::vector<double> power_law_weights(int32_t n, double exponent) {
  const double beta = 1.0 / (exponent - 1.0);
  std::vector<double> w(static_cast<std::size_t>(n));
  for (int32_t i = 0; i < n; ++i) w[std::size_t(i)] = std::pow(double(i) + 1.0, -beta);
  return w;
}

// Calls fn(i, e_i, e'_i) for every row i: its expected nonzeros at scale s, e_i = Σ_j min(1,
// s·w_i·w_j), and their derivative in s, Σ over the unsaturated columns of w_i·w_j. Row i
// saturates the columns j < J_i (s·w_i·w_j ≥ 1); J_i does not grow with i, so one pointer
// walking down serves every row: O(n).
template <class Fn>
void for_each_row_expectation(const std::vector<double>& w, double s, Fn fn) {
  const int64_t n = int64_t(w.size());
  int64_t saturated = n;  // J_i
  double tail = 0.0;      // Σ_{j ≥ J_i} w_j
  for (int64_t i = 0; i < n; ++i) {
    const double a = s * w[std::size_t(i)];
    while (saturated > 0 && a * w[std::size_t(saturated - 1)] < 1.0) tail += w[std::size_t(--saturated)];
    fn(i, double(saturated) + a * tail, w[std::size_t(i)] * tail);
  }
}

// The expected nonzero count at scale s, f(s), and its derivative.
struct ScaledCount {
  double count, slope;
};

ScaledCount expected_count(const std::vector<double>& w, double s) {
  ScaledCount total{0.0, 0.0};
  for_each_row_expectation(w, s, [&](int64_t, double count, double slope) {
    total.count += count;
    total.slope += slope;
  });
  return total;
}

// The s with f(s) = nnz. f is concave and piecewise linear in s, so Newton's method from below
// (s = nnz / (Σw)², where f(s) ≤ s·(Σw)² = nnz) climbs to the root without passing it.
double solve_scale(const std::vector<double>& w, int64_t nnz) {
  double sum = 0.0;
  for (double x : w) sum += x;
  double s = double(nnz) / (sum * sum);
  for (int step = 0; step < kScaleSteps; ++step) {
    const ScaledCount f = expected_count(w, s);
    if (f.count >= double(nnz) * (1.0 - 1e-9) || f.slope <= 0.0) break;
    s += (double(nnz) - f.count) / f.slope;
  }
  return s;
}

// Appends the columns of a row whose column j is present with probability min(1, a·w_j), in
// increasing order. Edge skipping (Miller & Hagberg, "Efficient generation of networks with given
// expected degrees", 2011): candidates come at geometric gaps of the last candidate's
// probability p, which bounds every later one because w does not grow; a candidate is kept with
// q/p, its own probability over the bound. Work: the row's nonzeros plus the candidates turned
// down (measured: 1.7 to 1.9 candidates per nonzero over chunglu:1000000:8000000 and
// chunglu:2000000:8000000, most of the surplus in light rows, which leave after a few gaps).
void walk_row(detail::Rng& rng, const std::vector<double>& w, double a, std::vector<int32_t>& out) {
  const int64_t n = int64_t(w.size());
  int64_t j = 0;
  double p = std::min(1.0, a * w[0]);
  while (j < n && p > 0.0) {
    if (p < 1.0) {
      // Failures before the next success of a Bernoulli(p) sequence; 1 - unit() is in (0, 1].
      const double gap = std::floor(std::log1p(-rng.unit()) / std::log1p(-p));
      if (gap >= double(n - j)) break;
      j += int64_t(gap);
    }
    const double q = std::min(1.0, a * w[std::size_t(j)]);
    if (q == p || rng.unit() * p < q) out.push_back(int32_t(j));
    p = q;
    ++j;
  }
}

// Rows cut into parts of about equal expected work, one per thread. The heaviest rows come
// first: cut evenly, the first of 16 parts would get two thirds of the nonzeros of
// chunglu:1000000:8000000:2.1.
std::vector<int64_t> balanced_parts(const std::vector<double>& w, double s) {
  const int64_t n = int64_t(w.size());
  std::vector<int64_t> work_before(std::size_t(n) + 1, 0);
  for_each_row_expectation(w, s, [&](int64_t i, double count, double) {
    work_before[std::size_t(i) + 1] = work_before[std::size_t(i)] + std::llround(count);
  });
  const int64_t total = work_before.back() + kWorkPerRow * n;
  return sparsejit::detail::balanced_row_bounds(work_before.data(), int32_t(n), sparsejit::detail::part_count(total), 1,
                                                kWorkPerRow);
}

}  // namespace

Csr<double> chung_lu(int32_t n, int64_t nnz, double exponent, uint64_t seed) {
  check_chung_lu_arguments(n, nnz, exponent);
  const std::vector<double> w = power_law_weights(n, exponent);
  const double s = solve_scale(w, nnz);
  return detail::build_rows_in_parts("chunglu", n, seed, balanced_parts(w, s), nnz,
                                     [&](int32_t row, detail::Rng& rng, std::vector<int32_t>& out) {
                                       walk_row(rng, w, s * w[std::size_t(row)], out);
                                     });
}

}  // namespace sparsejit::generate
