#include "tuner/least_squares.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::tuner {

namespace {

void check_system(const std::vector<std::vector<double>>& rows, const std::vector<double>& y, bool need_determined = true) {
  if (rows.empty()) throw InvalidInputError("least squares: no observations");
  const std::size_t n = rows.front().size();
  if (n == 0) throw InvalidInputError("least squares: no regressors");
  if (rows.size() != y.size())
    throw InvalidInputError("least squares: " + std::to_string(rows.size()) + " rows but " + std::to_string(y.size()) + " targets");
  if (need_determined && rows.size() < n)
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

// Unit-norm columns of A (an all-zero column stays zero) and the norms they were divided by.
std::vector<std::vector<double>> unit_columns(const std::vector<std::vector<double>>& rows, std::vector<double>& norms) {
  const std::size_t n = rows.front().size();
  norms.assign(n, 0.0);
  for (const auto& row : rows)
    for (std::size_t j = 0; j < n; ++j) norms[j] += row[j] * row[j];
  for (double& v : norms) v = std::sqrt(v);
  std::vector<std::vector<double>> a = rows;
  for (auto& row : a)
    for (std::size_t j = 0; j < n; ++j) row[j] = norms[j] > 0 ? row[j] / norms[j] : 0.0;
  return a;
}

// Aᵀ(y - A·x): the descent direction of every coefficient.
std::vector<double> gradient(const std::vector<std::vector<double>>& a, const std::vector<double>& y, const std::vector<double>& x) {
  std::vector<double> w(x.size(), 0.0);
  for (std::size_t i = 0; i < a.size(); ++i) {
    double r = y[i];
    for (std::size_t j = 0; j < x.size(); ++j) r -= a[i][j] * x[j];
    for (std::size_t j = 0; j < x.size(); ++j) w[j] += a[i][j] * r;
  }
  return w;
}

// Unconstrained least squares over the passive columns; the others are 0.
std::vector<double> solve_passive(const std::vector<std::vector<double>>& a, const std::vector<double>& y,
                                  const std::vector<bool>& passive) {
  std::vector<std::size_t> cols;
  for (std::size_t j = 0; j < passive.size(); ++j)
    if (passive[j]) cols.push_back(j);
  std::vector<std::vector<double>> sub(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    for (std::size_t j : cols) sub[i].push_back(a[i][j]);
  const std::vector<double> solved = least_squares(sub, y);
  std::vector<double> z(passive.size(), 0.0);
  for (std::size_t k = 0; k < cols.size(); ++k) z[cols[k]] = solved[k];
  return z;
}

}  // namespace

std::vector<double> nonnegative_least_squares(const std::vector<std::vector<double>>& rows, const std::vector<double>& y) {
  check_system(rows, y, false);
  const std::size_t n = rows.front().size();
  std::vector<double> norms;
  const auto a = unit_columns(rows, norms);
  double y_norm = 0;
  for (double v : y) y_norm += v * v;
  // Columns have unit norm, so every gradient entry is at most ||y||: below this it is noise.
  const double tolerance = 1e-10 * std::max(1.0, std::sqrt(y_norm));
  std::vector<bool> passive(n, false), excluded(n, false);
  for (std::size_t j = 0; j < n; ++j) excluded[j] = norms[j] == 0;
  std::vector<double> x(n, 0.0);
  // Each outer step frees one coefficient; the bound only stops rounding from cycling.
  for (std::size_t step = 0; step < 3 * n + 3; ++step) {
    const std::vector<double> w = gradient(a, y, x);
    std::size_t enter = n;
    for (std::size_t j = 0; j < n; ++j)
      if (!passive[j] && !excluded[j] && w[j] > tolerance && (enter == n || w[j] > w[enter])) enter = j;
    if (enter == n) break;
    passive[enter] = true;
    for (;;) {
      std::vector<double> z;
      try {
        z = solve_passive(a, y, passive);
      } catch (const InvalidInputError&) {  // the entering column depends on the passive ones
        passive[enter] = false;
        excluded[enter] = true;
        break;
      }
      // Step from x towards z as far as every passive coefficient stays >= 0; the ones that
      // reach 0 leave the passive set.
      double alpha = 1.0;
      std::size_t blocking = n;
      for (std::size_t j = 0; j < n; ++j) {
        if (!passive[j] || z[j] > 0) continue;
        const double a_j = x[j] > 0 ? x[j] / (x[j] - z[j]) : 0.0;
        if (blocking == n || a_j < alpha) { alpha = a_j; blocking = j; }
      }
      for (std::size_t j = 0; j < n; ++j) x[j] += alpha * (z[j] - x[j]);
      if (blocking == n) break;
      x[blocking] = 0;
      for (std::size_t j = 0; j < n; ++j)
        if (passive[j] && x[j] <= 0) { passive[j] = false; x[j] = 0; }
      if (std::none_of(passive.begin(), passive.end(), [](bool p) { return p; })) break;
    }
  }
  for (std::size_t j = 0; j < n; ++j) x[j] = norms[j] > 0 ? x[j] / norms[j] : 0.0;
  return x;
}

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
