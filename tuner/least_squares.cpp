#include "tuner/least_squares.hpp"

#include <cmath>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::tuner {

namespace {

void check_system(const std::vector<std::vector<double>>& rows, const std::vector<double>& y) {
  if (rows.empty()) throw InvalidInputError("least squares: no observations");
  const std::size_t n = rows.front().size();
  if (n == 0) throw InvalidInputError("least squares: no regressors");
  if (rows.size() != y.size())
    throw InvalidInputError("least squares: " + std::to_string(rows.size()) + " rows but " + std::to_string(y.size()) + " targets");
  if (rows.size() < n)
    throw InvalidInputError("least squares: " + std::to_string(rows.size()) + " observations for " + std::to_string(n) + " unknowns");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != n)
      throw InvalidInputError("least squares: row " + std::to_string(i) + " has " + std::to_string(rows[i].size()) +
                              " values, row 0 has " + std::to_string(n));
    if (!std::isfinite(y[i])) throw InvalidInputError("least squares: target " + std::to_string(i) + " is not finite");
    for (std::size_t j = 0; j < n; ++j)
      if (!std::isfinite(rows[i][j]))
        throw InvalidInputError("least squares: row " + std::to_string(i) + " column " + std::to_string(j) + " is not finite");
  }
}

// Solves m·x = b in place (m is n×n, row-major) by elimination with partial pivoting.
std::vector<double> solve(std::vector<double> m, std::vector<double> b, std::size_t n) {
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(m[r * n + col]) > std::fabs(m[pivot * n + col])) pivot = r;
    // The columns were scaled to unit norm, so the diagonal of the normal matrix is 1 and a
    // pivot this small means a column is (nearly) a combination of the others.
    if (std::fabs(m[pivot * n + col]) < 1e-12)
      throw InvalidInputError("least squares: regressor column " + std::to_string(col) + " is linearly dependent on the others");
    if (pivot != col) {
      for (std::size_t j = 0; j < n; ++j) std::swap(m[col * n + j], m[pivot * n + j]);
      std::swap(b[col], b[pivot]);
    }
    for (std::size_t r = col + 1; r < n; ++r) {
      const double f = m[r * n + col] / m[col * n + col];
      for (std::size_t j = col; j < n; ++j) m[r * n + j] -= f * m[col * n + j];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = n; i-- > 0;) {
    double s = b[i];
    for (std::size_t j = i + 1; j < n; ++j) s -= m[i * n + j] * x[j];
    x[i] = s / m[i * n + i];
  }
  return x;
}

}  // namespace

std::vector<double> least_squares(const std::vector<std::vector<double>>& rows, const std::vector<double>& y) {
  check_system(rows, y);
  const std::size_t n = rows.front().size();
  std::vector<double> scale(n, 0.0);
  for (const auto& row : rows)
    for (std::size_t j = 0; j < n; ++j) scale[j] += row[j] * row[j];
  for (std::size_t j = 0; j < n; ++j) {
    if (scale[j] == 0) throw InvalidInputError("least squares: regressor column " + std::to_string(j) + " is all zeros");
    scale[j] = std::sqrt(scale[j]);
  }
  std::vector<double> normal(n * n, 0.0), rhs(n, 0.0);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    for (std::size_t a = 0; a < n; ++a) {
      const double va = rows[i][a] / scale[a];
      rhs[a] += va * y[i];
      for (std::size_t b = 0; b < n; ++b) normal[a * n + b] += va * rows[i][b] / scale[b];
    }
  }
  std::vector<double> x = solve(normal, rhs, n);
  for (std::size_t j = 0; j < n; ++j) x[j] /= scale[j];
  return x;
}

}  // namespace sparsejit::tuner
