// The CPU references against naive dense products computed here, for every value type, on
// small random inputs of awkward shapes (empty rows, one column, K = 1, rectangular, empty).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sparsejit/error.hpp"
#include "sparsejit/matrix.hpp"
#include "sparsejit/reference.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

// A dense matrix of doubles, the independent side of every comparison.
struct Naive {
  int rows = 0, cols = 0;
  std::vector<double> v;
  Naive(int r, int c) : rows(r), cols(c), v(std::size_t(r) * std::size_t(c), 0.0) {}
  double& at(int r, int c) { return v[std::size_t(r) * std::size_t(cols) + std::size_t(c)]; }
  double at(int r, int c) const { return v[std::size_t(r) * std::size_t(cols) + std::size_t(c)]; }
};

double as_double(double x) { return x; }
double as_double(float x) { return x; }
double as_double(half x) { return float(x); }
double as_double(bfloat16 x) { return float(x); }

template <class T>
Naive naive(const Csr<T>& m) {
  Naive d(m.rows, m.cols);
  for (int r = 0; r < m.rows; ++r)
    for (int e = m.row_ptr[r]; e < m.row_ptr[r + 1]; ++e) d.at(r, m.col_idx[e]) += as_double(m.values[e]);
  return d;
}

template <class T>
Naive naive(const Dense<T>& m) {
  Naive d(m.rows, m.cols);
  for (std::size_t i = 0; i < m.data.size(); ++i) d.v[i] = as_double(m.data[i]);
  return d;
}

Naive transposed(const Naive& m) {
  Naive t(m.cols, m.rows);
  for (int r = 0; r < m.rows; ++r)
    for (int c = 0; c < m.cols; ++c) t.at(c, r) = m.at(r, c);
  return t;
}

// The product and, per entry, Σ|a_ik·b_kj| (the scale that bounds rounding errors).
struct NaiveProduct {
  Naive value, magnitude;
};

NaiveProduct multiply(const Naive& a, const Naive& b) {
  NaiveProduct p{Naive(a.rows, b.cols), Naive(a.rows, b.cols)};
  for (int i = 0; i < a.rows; ++i)
    for (int j = 0; j < b.cols; ++j)
      for (int k = 0; k < a.cols; ++k) {
        p.value.at(i, j) += a.at(i, k) * b.at(k, j);
        p.magnitude.at(i, j) += std::fabs(a.at(i, k) * b.at(k, j));
      }
  return p;
}

// Unit roundoff of T: the output is the exact double result rounded once to T.
template <class T> double unit_roundoff();
template <> double unit_roundoff<double>() { return 0x1p-52; }
template <> double unit_roundoff<float>() { return 0x1p-23; }
template <> double unit_roundoff<half>() { return 0x1p-10; }
template <> double unit_roundoff<bfloat16>() { return 0x1p-7; }
// Half the spacing of T's subnormals: the absolute error of rounding a result near zero,
// which no relative bound covers (half's subnormals are only 2^-24 apart).
template <class T> double subnormal_half_step();
template <> double subnormal_half_step<double>() { return 0x1p-1074; }
template <> double subnormal_half_step<float>() { return 0x1p-150; }
template <> double subnormal_half_step<half>() { return 0x1p-25; }
template <> double subnormal_half_step<bfloat16>() { return 0x1p-134; }

template <class T>
Dense<T> random_dense(int rows, int cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Dense<T> d(rows, cols);
  for (T& x : d.data) x = T(float(value(rng)));
  return d;
}
template <>
Dense<double> random_dense(int rows, int cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Dense<double> d(rows, cols);
  for (double& x : d.data) x = value(rng);
  return d;
}

// Random CSR with about `density` of the entries set; every third row empty when asked.
template <class T>
Csr<T> random_csr(int rows, int cols, double density, bool empty_rows, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  Coo<T> coo;
  coo.rows = rows;
  coo.cols = cols;
  for (int r = 0; r < rows; ++r) {
    if (empty_rows && r % 3 == 1) continue;
    for (int c = 0; c < cols; ++c) {
      if (unit(rng) >= density) continue;
      coo.row_idx.push_back(r);
      coo.col_idx.push_back(c);
      coo.values.push_back(T(float(2.0 * unit(rng) - 1.0)));
    }
  }
  return to_csr(coo);
}

template <class T>
void expect_matches(const Dense<T>& out, const NaiveProduct& ref, const std::string& what) {
  ASSERT_EQ(out.rows, ref.value.rows) << what;
  ASSERT_EQ(out.cols, ref.value.cols) << what;
  const Naive got = naive(out);
  for (int i = 0; i < out.rows; ++i)
    for (int j = 0; j < out.cols; ++j)
      ASSERT_NEAR(got.at(i, j), ref.value.at(i, j), 2 * unit_roundoff<T>() * ref.magnitude.at(i, j) + subnormal_half_step<T>() + 1e-300)
          << what << " at (" << i << ", " << j << ")";
}

struct Shape {
  int m, k, n;
  double density;
  bool empty_rows;
};

// m×k sparse times k×n dense: empty rows, one column, K = 1, rectangular, empty, and one
// large enough to be split over threads.
const Shape kShapes[] = {
    {7, 5, 4, 0.4, true}, {9, 1, 3, 0.7, false}, {6, 8, 1, 0.5, true}, {13, 4, 9, 0.3, false},
    {3, 11, 2, 0.0, false}, {0, 4, 3, 0.5, false}, {5, 0, 3, 0.5, false}, {400, 300, 64, 0.05, true},
};

std::string describe(const Shape& s, uint64_t seed) {
  return std::to_string(s.m) + "x" + std::to_string(s.k) + " · " + std::to_string(s.k) + "x" + std::to_string(s.n) +
         " seed " + std::to_string(seed);
}

template <class T>
class ReferenceTyped : public ::testing::Test {};
using ValueTypes = ::testing::Types<double, float, half, bfloat16>;
TYPED_TEST_SUITE(ReferenceTyped, ValueTypes);

TYPED_TEST(ReferenceTyped, SpmmMatchesDenseProduct) {
  using T = TypeParam;
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const Shape& s : kShapes) {
    const Csr<T> a = random_csr<T>(s.m, s.k, s.density, s.empty_rows, rng);
    const Dense<T> b = random_dense<T>(s.k, s.n, rng);
    Dense<T> c(1, 1, T(7.0f));  // stale contents must be replaced
    reference::spmm(a, b, c);
    expect_matches(c, multiply(naive(a), naive(b)), "A·B " + describe(s, seed));
  }
}

TYPED_TEST(ReferenceTyped, SpmmTransposedMatchesDenseProduct) {
  using T = TypeParam;
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const Shape& s : kShapes) {
    const Csr<T> a = random_csr<T>(s.m, s.k, s.density, s.empty_rows, rng);
    const Dense<T> b = random_dense<T>(s.m, s.n, rng);
    Dense<T> c;
    reference::spmm(a, b, c, /*transpose_a=*/true);
    expect_matches(c, multiply(transposed(naive(a)), naive(b)), "Aᵀ·B " + describe(s, seed));
  }
}

TYPED_TEST(ReferenceTyped, SddmmMatchesMaskedDenseProduct) {
  using T = TypeParam;
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const Shape& s : kShapes) {
    // S is m×n, A is m×k, B is n×k.
    const Csr<T> pattern = random_csr<T>(s.m, s.n, std::max(s.density, 0.2), s.empty_rows, rng);
    const Dense<T> a = random_dense<T>(s.m, s.k, rng);
    const Dense<T> b = random_dense<T>(s.n, s.k, rng);
    const NaiveProduct dense = multiply(naive(a), transposed(naive(b)));
    Csr<T> p;
    reference::sddmm(pattern, a, b, p);
    ASSERT_EQ(p.row_ptr, pattern.row_ptr);
    ASSERT_EQ(p.col_idx, pattern.col_idx);
    for (int r = 0; r < pattern.rows; ++r)
      for (int e = pattern.row_ptr[r]; e < pattern.row_ptr[r + 1]; ++e) {
        const int c = pattern.col_idx[e];
        const double scale = as_double(pattern.values[e]);
        ASSERT_NEAR(as_double(p.values[e]), scale * dense.value.at(r, c),
                    2 * unit_roundoff<T>() * std::fabs(scale) * dense.magnitude.at(r, c) + subnormal_half_step<T>() + 1e-300)
            << describe(s, seed) << " at (" << r << ", " << c << ")";
      }
  }
}

// C = A·B must have the boolean product's pattern and the dense product's values.
template <class T>
void check_spgemm(const Csr<T>& a, const Csr<T>& b, const std::string& what) {
  const int m = a.rows, k = a.cols, n = b.cols;
  const Csr<T> c = reference::spgemm(a, b);
  EXPECT_NO_THROW(validate(c, /*require_sorted=*/true));
  ASSERT_EQ(c.rows, m);
  ASSERT_EQ(c.cols, n);
  // Boolean product of the patterns, computed densely.
  Naive a_ones(m, k), b_ones(k, n);
  for (int r = 0; r < a.rows; ++r)
    for (int e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) a_ones.at(r, a.col_idx[e]) = 1.0;
  for (int r = 0; r < b.rows; ++r)
    for (int e = b.row_ptr[r]; e < b.row_ptr[r + 1]; ++e) b_ones.at(r, b.col_idx[e]) = 1.0;
  const Naive reachable = multiply(a_ones, b_ones).value;
  const NaiveProduct ref = multiply(naive(a), naive(b));
  Naive in_c(m, n);
  for (int r = 0; r < c.rows; ++r)
    for (int e = c.row_ptr[r]; e < c.row_ptr[r + 1]; ++e) {
      const int j = c.col_idx[e];
      in_c.at(r, j) = 1.0;
      ASSERT_NEAR(as_double(c.values[e]), ref.value.at(r, j), 2 * unit_roundoff<T>() * ref.magnitude.at(r, j) + subnormal_half_step<T>())
          << what << " at (" << r << ", " << j << ")";
    }
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      ASSERT_EQ(in_c.at(i, j) != 0.0, reachable.at(i, j) != 0.0) << what << " at (" << i << ", " << j << ")";
}

TYPED_TEST(ReferenceTyped, SpgemmPatternIsBooleanProductAndValuesMatch) {
  using T = TypeParam;
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  for (const Shape& s : kShapes) {
    const Csr<T> a = random_csr<T>(s.m, s.k, s.density, s.empty_rows, rng);
    const Csr<T> b = random_csr<T>(s.k, s.n, 0.4, false, rng);
    check_spgemm(a, b, describe(s, seed));
  }
  // Wide and sparse: output rows few enough to be sorted rather than scanned.
  const Csr<T> a = random_csr<T>(30, 40, 0.1, true, rng);
  const Csr<T> b = random_csr<T>(40, 3000, 0.004, false, rng);
  check_spgemm(a, b, "wide sparse seed " + std::to_string(seed));
}

TYPED_TEST(ReferenceTyped, SpammWithZeroThresholdIsTheExactProduct) {
  using T = TypeParam;
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  // Sizes that are and are not multiples of the tile.
  const int cases[][4] = {{8, 8, 8, 4}, {10, 7, 5, 4}, {3, 3, 3, 8}, {9, 1, 6, 2}, {70, 66, 40, 16}};
  for (const auto& cs : cases) {
    const Dense<T> a = random_dense<T>(cs[0], cs[1], rng);
    const Dense<T> b = random_dense<T>(cs[1], cs[2], rng);
    Dense<T> c;
    reference::spamm(a, b, c, cs[3], 0.0);
    expect_matches(c, multiply(naive(a), naive(b)), "spamm tile " + std::to_string(cs[3]) + " seed " + std::to_string(seed));
  }
}

TEST(Reference, SpammWithHugeThresholdIsZero) {
  std::mt19937_64 rng(test::fresh_seed());
  const Dense<double> a = random_dense<double>(12, 10, rng), b = random_dense<double>(10, 9, rng);
  Dense<double> c;
  reference::spamm(a, b, c, 4, 1e30);
  ASSERT_EQ(c.rows, 12);
  ASSERT_EQ(c.cols, 9);
  for (double x : c.data) EXPECT_EQ(x, 0.0);
}

// Every element is its own tile, so the norm test reads |a_ik|·|b_kj| ≥ tau.
TEST(Reference, SpammHandComputedSelection) {
  Dense<double> a(2, 2), b(2, 2);
  a.data = {3, 1, 1, 2};
  b.data = {2, 1, 1, 1};
  Dense<double> c;
  // Row 0: 3·2 and 3·1 pass, 1·1 does not -> (6, 3). Row 1: 1·2, 1·1, 2·1 all below 2.5.
  reference::spamm(a, b, c, 1, 2.5);
  EXPECT_EQ(c.data, (std::vector<double>{6, 3, 0, 0}));
  reference::spamm(a, b, c, 1, 0.0);
  EXPECT_EQ(c.data, (std::vector<double>{7, 4, 4, 3}));
}

// tau between the smallest and largest norm products: the result is the sum of exactly the
// tile products a naive loop selects.
TEST(Reference, SpammMiddleThresholdMatchesNaiveSelection) {
  const uint64_t seed = test::fresh_seed();
  std::mt19937_64 rng(seed);
  const int m = 10, k = 9, n = 7, tile = 3;
  Dense<double> a = random_dense<double>(m, k, rng), b = random_dense<double>(k, n, rng);
  // Decay away from the diagonal so the tile norms differ a lot.
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < k; ++j) a.at(i, j) /= 1.0 + std::abs(i - j) * std::abs(i - j);
  auto norm = [&](const Dense<double>& d, int ti, int tj) {
    double s = 0;
    for (int i = ti * tile; i < std::min(d.rows, (ti + 1) * tile); ++i)
      for (int j = tj * tile; j < std::min(d.cols, (tj + 1) * tile); ++j) s += d.at(i, j) * d.at(i, j);
    return std::sqrt(s);
  };
  const int mt = 4, kt = 3, nt = 3;
  std::vector<double> products;
  for (int ti = 0; ti < mt; ++ti)
    for (int tk = 0; tk < kt; ++tk)
      for (int tj = 0; tj < nt; ++tj) products.push_back(norm(a, ti, tk) * norm(b, tk, tj));
  std::sort(products.begin(), products.end());
  const double tau = products[products.size() / 2];
  Dense<double> expected(m, n);
  int selected = 0;
  for (int ti = 0; ti < mt; ++ti)
    for (int tk = 0; tk < kt; ++tk)
      for (int tj = 0; tj < nt; ++tj) {
        if (norm(a, ti, tk) * norm(b, tk, tj) < tau) continue;
        ++selected;
        for (int i = ti * tile; i < std::min(m, (ti + 1) * tile); ++i)
          for (int j = tj * tile; j < std::min(n, (tj + 1) * tile); ++j)
            for (int p = tk * tile; p < std::min(k, (tk + 1) * tile); ++p) expected.at(i, j) += a.at(i, p) * b.at(p, j);
      }
  ASSERT_GT(selected, 0);
  ASSERT_LT(selected, mt * kt * nt);
  Dense<double> c;
  reference::spamm(a, b, c, tile, tau);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) EXPECT_NEAR(c.at(i, j), expected.at(i, j), 1e-14) << "seed " << seed;
}

TEST(Reference, SpgemmKeepsStructuralZeros) {
  // [1 1] · [1; -1] = [0], but the pattern produces the entry, so it stays.
  Csr<double> a, b;
  a.rows = 1; a.cols = 2; a.row_ptr = {0, 2}; a.col_idx = {0, 1}; a.values = {1, 1};
  b.rows = 2; b.cols = 1; b.row_ptr = {0, 1, 2}; b.col_idx = {0, 0}; b.values = {1, -1};
  const Csr<double> c = reference::spgemm(a, b);
  EXPECT_EQ(c.row_ptr, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(c.col_idx, (std::vector<int32_t>{0}));
  EXPECT_EQ(c.values, (std::vector<double>{0.0}));
}

// Expects InvalidInputError whose message contains every piece of `parts`.
template <class Fn>
void expect_invalid(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    FAIL() << "no exception";
  } catch (const InvalidInputError& e) {
    for (const std::string& part : parts) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(Reference, ShapeMismatchesThrowNamingBothShapes) {
  Csr<float> a;
  a.rows = 3; a.cols = 4; a.row_ptr = {0, 0, 0, 0};
  Dense<float> c;
  Csr<float> p;
  expect_invalid([&] { reference::spmm(a, Dense<float>(5, 2), c); }, {"spmm", "A is 3x4", "B has 5 rows"});
  expect_invalid([&] { reference::spmm(a, Dense<float>(4, 2), c, true); }, {"spmm", "A is 3x4", "B has 4 rows"});
  expect_invalid([&] { reference::sddmm(a, Dense<float>(2, 8), Dense<float>(4, 8), p); }, {"sddmm", "S is 3x4", "A is 2x8"});
  expect_invalid([&] { reference::sddmm(a, Dense<float>(3, 8), Dense<float>(5, 8), p); }, {"sddmm", "S is 3x4", "B is 5x8"});
  expect_invalid([&] { reference::sddmm(a, Dense<float>(3, 8), Dense<float>(4, 7), p); }, {"A is 3x8", "B is 4x7"});
  expect_invalid([&] { reference::spgemm(a, a); }, {"spgemm", "A is 3x4", "B has 3 rows"});
  expect_invalid([&] { reference::spamm(Dense<float>(3, 4), Dense<float>(5, 2), c, 2, 0.0); }, {"spamm", "A is 3x4", "B is 5x2"});
  expect_invalid([&] { reference::spamm(Dense<float>(3, 4), Dense<float>(4, 2), c, 0, 0.0); }, {"tile size 0"});
  expect_invalid([&] { reference::spamm(Dense<float>(3, 4), Dense<float>(4, 2), c, 2, -1.0); }, {"tau"});
}

TEST(Reference, MalformedOperandsThrow) {
  Csr<double> a;
  a.rows = 2; a.cols = 2; a.row_ptr = {0, 1, 2}; a.col_idx = {0, 5}; a.values = {1, 1};
  Dense<double> c;
  expect_invalid([&] { reference::spmm(a, Dense<double>(2, 2), c); }, {"spmm: A:", "column index 5"});
  Dense<double> short_b(2, 2);
  short_b.data.pop_back();
  a.col_idx = {0, 1};
  expect_invalid([&] { reference::spmm(a, short_b, c); }, {"spmm: B is 2x2 but holds 3 values"});
}

// The comparison every --check uses: hand-computed norms, a NaN (a poisoned element the run never
// wrote) and a size mismatch are infinitely wrong, an all-zero reference compares absolutely.
TEST(Reference, RelativeErrorIsTheNormRatioAndNaNIsInfinite) {
  EXPECT_DOUBLE_EQ(reference::relative_error(std::vector<double>{3, 4}, std::vector<double>{3, 4}), 0.0);
  EXPECT_DOUBLE_EQ(reference::relative_error(std::vector<double>{3, 5}, std::vector<double>{3, 4}), 1.0 / 5.0);
  EXPECT_DOUBLE_EQ(reference::relative_error(std::vector<float>{3, 4}, std::vector<float>{0, 0}), 5.0);
  EXPECT_TRUE(std::isinf(reference::relative_error(std::vector<float>{NAN, 4}, std::vector<float>{3, 4})));
  EXPECT_TRUE(std::isinf(reference::relative_error(std::vector<double>{3}, std::vector<double>{3, 4})));
  EXPECT_LT(reference::check_tolerance<double>(), reference::check_tolerance<float>());
}

}  // namespace
}  // namespace sparsejit
