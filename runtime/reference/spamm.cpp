// CPU reference SpAMM: C ≈ A·B over square tiles. Tile Frobenius norms are computed first (in
// double); the product A_ik·B_kj of tile row i, tile column j and inner tile k is added iff
// ‖A_ik‖F·‖B_kj‖F ≥ tau. Edge tiles are partial when a size is not a multiple of the tile.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference/checks.hpp"
#include "reference/parallel.hpp"
#include "reference/values.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/reference.hpp"

namespace sparsejit::reference {
namespace {

using detail::loop_type_t;

int32_t tile_count(int32_t size, int tile) { return int32_t((int64_t(size) + tile - 1) / tile); }

// Frobenius norm of every tile of a rows×cols row-major matrix, tile-row-major.
template <class V>
std::vector<double> tile_norms(const V* values, int32_t rows, int32_t cols, int tile) {
  const int32_t tile_rows = tile_count(rows, tile), tile_cols = tile_count(cols, tile);
  std::vector<double> squares(std::size_t(tile_rows) * std::size_t(tile_cols), 0.0);
  for (int32_t r = 0; r < rows; ++r) {
    double* tile_row = squares.data() + std::size_t(r / tile) * std::size_t(tile_cols);
    const V* row = values + std::size_t(r) * std::size_t(cols);
    for (int32_t c = 0; c < cols; ++c) tile_row[c / tile] += double(row[c]) * double(row[c]);
  }
  for (double& s : squares) s = std::sqrt(s);
  return squares;
}

void check_spamm_arguments(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols, int tile, double tau) {
  if (a_cols != b_rows)
    throw InvalidInputError("spamm: A is " + detail::dims(a_rows, a_cols) + " but B has " + std::to_string(b_rows) +
                            " rows (A·B needs " + std::to_string(a_cols) + "; B is " + detail::dims(b_rows, b_cols) + ")");
  if (tile < 1) throw InvalidInputError("spamm: tile size " + std::to_string(tile) + " must be at least 1");
  if (!(tau >= 0.0) || std::isinf(tau))
    throw InvalidInputError("spamm: threshold tau " + std::to_string(tau) + " must be finite and non-negative");
}

}  // namespace

template <class T>
void spamm(const Dense<T>& a, const Dense<T>& b, Dense<T>& c, int tile, double tau) {
  detail::check_dense(a, "spamm", "A");
  detail::check_dense(b, "spamm", "B");
  check_spamm_arguments(a.rows, a.cols, b.rows, b.cols, tile, tau);
  const int32_t m = a.rows, k = a.cols, n = b.cols;
  const detail::LoopValues<T> a_values(a.data), b_values(b.data);
  const loop_type_t<T>* av = a_values.data();
  const loop_type_t<T>* bv = b_values.data();
  const std::vector<double> a_norms = tile_norms(av, m, k, tile);
  const std::vector<double> b_norms = tile_norms(bv, k, n, tile);
  const int32_t m_tiles = tile_count(m, tile), k_tiles = tile_count(k, tile), n_tiles = tile_count(n, tile);

  Dense<T> out(m, n);  // built aside so that c may alias a or b
  // One tile row of C per work item; its accumulator is rows_in_tile × n doubles.
  detail::parallel_for(m_tiles, int64_t(tile) * std::max<int32_t>(1, k) * std::max<int32_t>(1, n),
                       [&](int, int64_t tile_begin, int64_t tile_end) {
    std::vector<double> acc;
    for (int64_t ti = tile_begin; ti < tile_end; ++ti) {
      const int32_t row0 = int32_t(ti * tile), row1 = std::min<int32_t>(m, row0 + tile);
      acc.assign(std::size_t(row1 - row0) * std::size_t(n), 0.0);
      for (int32_t tk = 0; tk < k_tiles; ++tk) {
        const double a_norm = a_norms[std::size_t(ti) * std::size_t(k_tiles) + std::size_t(tk)];
        const int32_t inner0 = tk * tile, inner1 = std::min<int32_t>(k, inner0 + tile);
        for (int32_t tj = 0; tj < n_tiles; ++tj) {
          if (!(a_norm * b_norms[std::size_t(tk) * std::size_t(n_tiles) + std::size_t(tj)] >= tau)) continue;
          const int32_t col0 = tj * tile, col1 = std::min<int32_t>(n, col0 + tile);
          for (int32_t i = row0; i < row1; ++i) {
            double* acc_row = acc.data() + std::size_t(i - row0) * std::size_t(n);
            for (int32_t p = inner0; p < inner1; ++p) {
              const double a_ip = double(av[std::size_t(i) * std::size_t(k) + std::size_t(p)]);
              const loop_type_t<T>* b_row = bv + std::size_t(p) * std::size_t(n);
              for (int32_t j = col0; j < col1; ++j) acc_row[j] += a_ip * double(b_row[j]);
            }
          }
        }
      }
      T* out_rows = out.data.data() + std::size_t(row0) * std::size_t(n);
      for (std::size_t e = 0; e < acc.size(); ++e) out_rows[e] = detail::from_double<T>(acc[e]);
    }
  });
  c = std::move(out);
}

#define SPARSEJIT_INSTANTIATE(T) template void spamm(const Dense<T>&, const Dense<T>&, Dense<T>&, int, double);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::reference
