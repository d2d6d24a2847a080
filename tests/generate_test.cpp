// The generators: determinism, shapes, the structure each one promises, the decay formulas,
// the spec parser and parameter checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit {
namespace {

int32_t row_size(const Csr<double>& m, int32_t r) { return m.row_ptr[std::size_t(r) + 1] - m.row_ptr[std::size_t(r)]; }

bool same(const Csr<double>& x, const Csr<double>& y) {
  return x.rows == y.rows && x.cols == y.cols && x.row_ptr == y.row_ptr && x.col_idx == y.col_idx && x.values == y.values;
}

// Sorted rows, no duplicates, values in [-1, 1).
void expect_well_formed(const Csr<double>& m, const std::string& what) {
  EXPECT_NO_THROW(validate(m, /*require_sorted=*/true)) << what;
  for (double v : m.values) {
    ASSERT_GE(v, -1.0) << what;
    ASSERT_LT(v, 1.0) << what;
  }
}

const char* const kSpecs[] = {"uniform:300:7",          "rect:40:900:120",   "band:400:9:5",
                              "rmat:1000:8000",         "rmat:1000:8000:0.7", "clustered:256:20:0.5:4",
                              "blockdiag:100:8:3",      "chunglu:2000:16000:2.5"};

TEST(Generate, SameSeedSameMatrixOtherSeedOtherMatrix) {
  for (const char* spec : kSpecs) {
    const Csr<double> first = generate::from_spec(spec, 42);
    expect_well_formed(first, spec);
    EXPECT_GT(first.nnz(), 0) << spec;
    EXPECT_TRUE(same(first, generate::from_spec(spec, 42))) << spec;
    EXPECT_FALSE(same(first, generate::from_spec(spec, 43))) << spec;
  }
}

// A matrix large enough to be built by several threads equals itself (rows seed their own
// streams) and its values do not repeat between rows.
TEST(Generate, LargeMatricesAreDeterministic) {
  const Csr<double> a = generate::uniform(50000, 50000, 16, 7);
  EXPECT_TRUE(same(a, generate::uniform(50000, 50000, 16, 7)));
  EXPECT_NE(a.values[0], a.values[16]);
}

TEST(Generate, UniformHasExactlyRDistinctColumnsPerRow) {
  // Sparse rows (draw and re-draw) and nearly full rows (selection sampling).
  for (const auto& [rows, cols, per_row] : std::vector<std::array<int32_t, 3>>{{200, 1000, 13}, {50, 60, 55}, {20, 9, 9}, {30, 1, 1}, {5, 4, 0}}) {
    const Csr<double> m = generate::uniform(rows, cols, per_row, 3);
    expect_well_formed(m, "uniform");
    EXPECT_EQ(m.rows, rows);
    EXPECT_EQ(m.cols, cols);
    for (int32_t r = 0; r < rows; ++r) ASSERT_EQ(row_size(m, r), per_row) << "row " << r;
  }
}

TEST(Generate, UniformColumnsCoverTheRange) {
  const Csr<double> m = generate::uniform(2000, 100, 10, 5);
  std::vector<int> hits(100, 0);
  for (int32_t c : m.col_idx) ++hits[std::size_t(c)];
  // 200 expected hits per column; a uniform draw stays well inside [100, 300].
  for (int c = 0; c < 100; ++c) {
    EXPECT_GT(hits[std::size_t(c)], 100) << "column " << c;
    EXPECT_LT(hits[std::size_t(c)], 300) << "column " << c;
  }
}

TEST(Generate, BandStaysWithinHalfWidthAndMergesDuplicates) {
  const int32_t n = 3000, per_row = 32, half_width = 64;
  const Csr<double> m = generate::banded(n, per_row, half_width, 11);
  expect_well_formed(m, "band");
  ASSERT_EQ(m.rows, n);
  ASSERT_EQ(m.cols, n);
  for (int32_t r = 0; r < n; ++r)
    for (int32_t e = m.row_ptr[std::size_t(r)]; e < m.row_ptr[std::size_t(r) + 1]; ++e)
    {
      const int32_t offset = m.col_idx[std::size_t(e)] - r;
      ASSERT_GE(offset, -half_width) << "row " << r;
      ASSERT_LT(offset, half_width) << "row " << r;
    }
  // Interior rows draw 32 times from 128 columns: E[distinct] = 128·(1 - (127/128)^32) ≈ 28.41,
  // the rate behind ANCHORS' band:1000000:32:64 = 28,412,264 nonzeros.
  int64_t interior = 0;
  for (int32_t r = half_width; r < n - half_width; ++r) interior += row_size(m, r);
  const double mean = double(interior) / (n - 2 * half_width);
  EXPECT_NEAR(mean, 128.0 * (1.0 - std::pow(127.0 / 128.0, 32)), 0.1);
  // Narrow band: a row holds at most 2H entries (50 draws over 4 columns miss none here).
  const Csr<double> narrow = generate::banded(100, 50, 2, 11);
  for (int32_t r = 0; r < 100; ++r) ASSERT_LE(row_size(narrow, r), 4);
  EXPECT_EQ(narrow.col_idx[std::size_t(narrow.row_ptr[50])], 48);
  EXPECT_EQ(row_size(narrow, 50), 4);
  EXPECT_EQ(row_size(narrow, 0), 2);  // columns 0 and 1: the window is clamped at the edge
  // H = 0: the diagonal.
  const Csr<double> diagonal = generate::banded(7, 3, 0, 11);
  EXPECT_EQ(diagonal.col_idx, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6}));
}

TEST(Generate, RmatDegreesAreHeavyTailed) {
  const int32_t rows = 1 << 14;
  const int64_t edges = 16 * int64_t(rows);
  const Csr<double> m = generate::rmat(rows, edges, 9);
  expect_well_formed(m, "rmat");
  ASSERT_EQ(m.rows, rows);
  ASSERT_EQ(m.cols, rows);
  EXPECT_LE(m.nnz(), edges);
  EXPECT_GT(m.nnz(), edges / 2);
  int32_t max_degree = 0, empty = 0;
  for (int32_t r = 0; r < rows; ++r) {
    max_degree = std::max(max_degree, row_size(m, r));
    empty += row_size(m, r) == 0;
  }
  const double mean = double(m.nnz()) / rows;
  EXPECT_GT(max_degree, 20 * mean) << "max " << max_degree << " mean " << mean;
  EXPECT_GT(empty, 0);
  // Rows that are not a power of two: every edge stays inside.
  const Csr<double> odd = generate::rmat(1000, 20000, 9);
  EXPECT_NO_THROW(validate(odd));
}

// The coefficient of variation of the row lengths: how skewed the rows are.
double row_length_cv(const Csr<double>& m) {
  const double mean = double(m.nnz()) / m.rows;
  double squares = 0;
  for (int32_t r = 0; r < m.rows; ++r) squares += (row_size(m, r) - mean) * (row_size(m, r) - mean);
  return std::sqrt(squares / m.rows) / mean;
}

// R-MAT's optional A moves the skew: b, c and d keep the default's proportions, so A = 0.57 is
// the default matrix, and a larger A spreads the row lengths further (the longest rows do not
// grow much past 0.57: their repeated columns merge).
TEST(Generate, RmatSkewFollowsA) {
  EXPECT_TRUE(same(generate::from_spec("rmat:4096:40000:0.57", 3), generate::from_spec("rmat:4096:40000", 3)));
  EXPECT_TRUE(same(generate::from_spec("rmat:4096:40000:0.45", 3),
                   generate::rmat(4096, 40000, 3, 0.45, 0.55 * 19 / 43, 0.55 * 19 / 43)));
  // Measured: 2.9, 5.7 and 9.0.
  const double mild = row_length_cv(generate::from_spec("rmat:65536:500000:0.45", 3));
  const double standard = row_length_cv(generate::from_spec("rmat:65536:500000", 3));
  const double heavy = row_length_cv(generate::from_spec("rmat:65536:500000:0.7", 3));
  EXPECT_GT(standard, 1.4 * mild);
  EXPECT_GT(heavy, 1.4 * standard);
}

std::vector<int32_t> row_degrees(const Csr<double>& m) {
  std::vector<int32_t> degrees(std::size_t(m.rows), 0);
  for (int32_t r = 0; r < m.rows; ++r) degrees[std::size_t(r)] = row_size(m, r);
  return degrees;
}

std::vector<int32_t> column_degrees(const Csr<double>& m) {
  std::vector<int32_t> degrees(std::size_t(m.cols), 0);
  for (int32_t c : m.col_idx) ++degrees[std::size_t(c)];
  return degrees;
}

// The slope of log(how many degrees are at least d) against log d, least squares over d = lo,
// lo·2^¼, lo·2^½, ... while at least 50 degrees reach d: -(γ-1) for a power law of exponent γ.
// NaN when fewer than 4 such d exist (no tail).
double tail_slope(std::vector<int32_t> degrees, double lo) {
  std::sort(degrees.begin(), degrees.end());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  int points = 0;
  for (double d = lo;; d *= std::pow(2.0, 0.25)) {
    const auto first = std::lower_bound(degrees.begin(), degrees.end(), int32_t(std::ceil(d)));
    const double at_least = double(degrees.end() - first);
    if (at_least < 50) break;
    const double x = std::log(d), y = std::log(at_least);
    sx += x, sy += y, sxx += x * x, sxy += x * y, ++points;
  }
  if (points < 4) return std::nan("");
  return (points * sxy - sx * sy) / (points * sxx - sx * sx);
}

// Chung-Lu's degrees follow the exponent asked for, on rows and columns, over the tail from twice
// the mean degree (measured at 200k rows and 2M nonzeros, two seeds: slopes within 0.08 of
// -(γ-1) for γ from 2.1 to 3; the heaviest rows' capped columns steepen γ = 2.1 the most).
// Uniform rows, all of one length, have no tail to fit.
TEST(Generate, ChungLuDegreesFollowTheExponent) {
  const int32_t rows = 200000;
  const int64_t nnz = 2000000;
  const double mean = double(nnz) / rows;
  std::map<double, double> slopes;
  for (double gamma : {2.2, 2.8}) {
    const Csr<double> m = generate::chung_lu(rows, nnz, gamma, 5);
    expect_well_formed(m, "chunglu");
    ASSERT_EQ(m.rows, rows);
    ASSERT_EQ(m.cols, rows);
    EXPECT_NEAR(double(m.nnz()), double(nnz), 0.02 * nnz) << gamma;
    slopes[gamma] = tail_slope(row_degrees(m), 2 * mean);
    EXPECT_NEAR(slopes[gamma], -(gamma - 1), 0.15) << "rows, gamma " << gamma;
    EXPECT_NEAR(tail_slope(column_degrees(m), 2 * mean), -(gamma - 1), 0.15) << "columns, gamma " << gamma;
  }
  EXPECT_GT(slopes[2.2] - slopes[2.8], 0.4);
  EXPECT_TRUE(std::isnan(tail_slope(row_degrees(generate::uniform(rows, rows, 10, 5)), 2 * mean)));
}

// The expected count holds where min(1, ·) caps many entries, up to the full matrix, and the
// heaviest rows come first.
TEST(Generate, ChungLuMeetsTheCountWhenRowsSaturate) {
  for (const auto& [n, nnz] : std::vector<std::pair<int32_t, int64_t>>{{100, 5000}, {1000, 200000}, {3000, 30000}}) {
    const Csr<double> m = generate::chung_lu(n, nnz, 2.1, 8);
    expect_well_formed(m, "chunglu");
    EXPECT_NEAR(double(m.nnz()), double(nnz), 0.02 * nnz) << n << " " << nnz;
    EXPECT_GE(row_size(m, 0), row_size(m, n - 1));
  }
  const Csr<double> full = generate::chung_lu(50, 2500, 2.5, 8);
  EXPECT_EQ(full.nnz(), 2500);
  EXPECT_EQ(generate::chung_lu(1, 1, 3.0, 8).nnz(), 1);
}

// The share of nonzeros in columns that every row of their 32-row group holds.
double measured_clustered_fraction(const Csr<double>& m, int32_t group_rows) {
  int64_t in_shared_columns = 0;
  for (int32_t g0 = 0; g0 < m.rows; g0 += group_rows) {
    const int32_t g1 = std::min(m.rows, g0 + group_rows);
    std::map<int32_t, int32_t> rows_with_column;
    for (int32_t e = m.row_ptr[std::size_t(g0)]; e < m.row_ptr[std::size_t(g1)]; ++e) ++rows_with_column[m.col_idx[std::size_t(e)]];
    for (const auto& [column, count] : rows_with_column)
      if (count == g1 - g0) in_shared_columns += count;
  }
  return double(in_shared_columns) / double(m.nnz());
}

TEST(Generate, ClusteredFractionIsAsRequested) {
  for (double fraction : {0.0, 0.25, 0.5, 0.9, 1.0}) {
    const Csr<double> m = generate::clustered(1024, 4096, 24, fraction, 4, 21);
    expect_well_formed(m, "clustered");
    for (int32_t r = 0; r < m.rows; ++r) ASSERT_EQ(row_size(m, r), 24) << "row " << r;
    const double requested = std::round(fraction * 24) / 24;
    EXPECT_NEAR(measured_clustered_fraction(m, 32), requested, 0.01) << "fraction " << fraction;
  }
  // The clustered columns come in runs: with runs of 8 and 16 clustered per row, each row of
  // a group holds two full aligned runs.
  const Csr<double> runs = generate::clustered(64, 512, 20, 0.8, 8, 4);
  std::set<int32_t> row0(runs.col_idx.begin(), runs.col_idx.begin() + runs.row_ptr[1]);
  int full_runs = 0;
  for (int32_t start = 0; start < 512; start += 8) {
    int held = 0;
    for (int32_t c = start; c < start + 8; ++c) held += int(row0.count(c));
    full_runs += held == 8;
  }
  EXPECT_EQ(full_runs, 2);
}

TEST(Generate, BlockDiagonalHoldsItsBlockAndNoiseOutside) {
  const int32_t n = 100, block = 16, noise = 5;
  const Csr<double> m = generate::block_diagonal(n, block, noise, 8);
  expect_well_formed(m, "blockdiag");
  for (int32_t r = 0; r < n; ++r) {
    const int32_t first = r / block * block, last = std::min(n, first + block);
    int32_t inside = 0, outside = 0;
    for (int32_t e = m.row_ptr[std::size_t(r)]; e < m.row_ptr[std::size_t(r) + 1]; ++e) {
      const int32_t c = m.col_idx[std::size_t(e)];
      (c >= first && c < last ? inside : outside) += 1;
    }
    ASSERT_EQ(inside, last - first) << "row " << r;  // the last block is 100 - 96 = 4 wide
    ASSERT_EQ(outside, noise) << "row " << r;
  }
}

TEST(Generate, DecayFormulasAreExact) {
  const Dense<double> alg = generate::algebraic_decay(6, 7, 1.0, 2.0, generate::DecaySigns::Positive, 1);
  ASSERT_EQ(alg.rows, 6);
  ASSERT_EQ(alg.cols, 7);
  EXPECT_DOUBLE_EQ(alg.at(2, 2), 1.0);          // 1 / (0 + 1)
  EXPECT_DOUBLE_EQ(alg.at(0, 3), 0.1);          // 1 / (3² + 1)
  EXPECT_DOUBLE_EQ(alg.at(5, 1), 1.0 / 17.0);   // 1 / (4² + 1)
  const Dense<double> paper = generate::algebraic_decay(4, 4, 0.1, 0.1, generate::DecaySigns::Positive, 1);
  EXPECT_DOUBLE_EQ(paper.at(3, 0), 0.1 / (std::pow(3.0, 0.1) + 1.0));
  const Dense<double> ex = generate::exponential_decay(5, 5, 2.0, 0.5, generate::DecaySigns::Positive, 1);
  EXPECT_DOUBLE_EQ(ex.at(4, 4), 2.0);           // 2 · 0.5⁰
  EXPECT_DOUBLE_EQ(ex.at(0, 3), 0.25);          // 2 · 0.5³
  EXPECT_DOUBLE_EQ(ex.at(1, 0), 1.0);           // 2 · 0.5¹
  const Dense<double> zero_base = generate::exponential_decay(3, 3, 1.0, 0.0, generate::DecaySigns::Positive, 1);
  EXPECT_EQ(zero_base.data, (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(Generate, RandomDecaySignsKeepMagnitudes) {
  const Dense<double> plus = generate::algebraic_decay(40, 30, 0.5, 1.0, generate::DecaySigns::Positive, 2);
  const Dense<double> mixed = generate::algebraic_decay(40, 30, 0.5, 1.0, generate::DecaySigns::Random, 2);
  int negative = 0;
  for (std::size_t i = 0; i < plus.data.size(); ++i) {
    ASSERT_GT(plus.data[i], 0.0);
    ASSERT_EQ(std::fabs(mixed.data[i]), plus.data[i]);
    negative += mixed.data[i] < 0;
  }
  EXPECT_GT(negative, 400);  // 1200 fair coins
  EXPECT_LT(negative, 800);
  EXPECT_EQ(mixed.data, generate::algebraic_decay(40, 30, 0.5, 1.0, generate::DecaySigns::Random, 2).data);
}

TEST(Generate, SpecsBuildTheDocumentedMatrices) {
  EXPECT_TRUE(same(generate::from_spec("uniform:300:7", 5), generate::uniform(300, 300, 7, 5)));
  EXPECT_TRUE(same(generate::from_spec("rect:64:576:288", 5), generate::uniform(64, 576, 288, 5)));
  EXPECT_TRUE(same(generate::from_spec("band:400:9:5", 5), generate::banded(400, 9, 5, 5)));
  EXPECT_TRUE(same(generate::from_spec("rmat:1000:8000", 5), generate::rmat(1000, 8000, 5)));
  EXPECT_TRUE(same(generate::from_spec("clustered:256:20:0.5:4", 5), generate::clustered(256, 256, 20, 0.5, 4, 5)));
  EXPECT_TRUE(same(generate::from_spec("blockdiag:100:8:3", 5), generate::block_diagonal(100, 8, 3, 5)));
  EXPECT_TRUE(same(generate::from_spec("chunglu:3000:30000:2.4", 5), generate::chung_lu(3000, 30000, 2.4, 5)));
  const std::string help = generate::spec_help();
  for (const char* form : {"uniform:N:R", "band:N:R:H", "rmat:N:EDGES[:A]", "chunglu:N:NNZ:GAMMA", "clustered:N:R:FRAC:RUN",
                           "blockdiag:N:B:NOISE"})
    EXPECT_NE(help.find(form), std::string::npos) << form;
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

TEST(Generate, BadSpecsNameTheSpecAndTheField) {
  auto spec = [](const char* text) { return [text] { generate::from_spec(text, 1); }; };
  expect_invalid(spec("banana:10:2"), {"\"banana:10:2\"", "unknown generator \"banana\"", "uniform"});
  expect_invalid(spec("band:10:2"), {"\"band:10:2\"", "2 fields", "expected 3", "band:N:R:H"});
  expect_invalid(spec("uniform:10:2:4"), {"3 fields", "expected 2"});
  expect_invalid(spec("band:100:x:5"), {"\"band:100:x:5\"", "field R = \"x\" is not an integer"});
  expect_invalid(spec("uniform:10:"), {"field R = \"\" is not an integer"});
  expect_invalid(spec("uniform:1e3:2"), {"field N = \"1e3\" is not an integer"});
  expect_invalid(spec("uniform:-5:2"), {"field N = \"-5\" must not be negative"});
  expect_invalid(spec("uniform:3000000000:2"), {"field N = \"3000000000\" exceeds"});
  expect_invalid(spec("clustered:100:10:1.5:4"), {"field FRAC = \"1.5\" is outside [0, 1]"});
  expect_invalid(spec("clustered:100:10:half:4"), {"field FRAC = \"half\" is not a number"});
  expect_invalid(spec("uniform:10:20"), {"\"uniform:10:20\"", "nnz_per_row 20 exceeds cols 10"});
  expect_invalid(spec("rect:64:100:101"), {"\"rect:64:100:101\"", "nnz_per_row 101 exceeds cols 100"});
  expect_invalid(spec("blockdiag:10:0:1"), {"\"blockdiag:10:0:1\"", "block size 0"});
  expect_invalid(spec(""), {"unknown generator \"\""});
  expect_invalid(spec("rmat:10:20:0.5:1"), {"4 fields", "expected 2 to 3", "rmat:N:EDGES[:A]"});
  expect_invalid(spec("rmat:10:20:1.5"), {"field A = \"1.5\" is outside [0, 1]"});
  expect_invalid(spec("chunglu:100:1000"), {"2 fields", "expected 3", "chunglu:N:NNZ:GAMMA"});
  expect_invalid(spec("chunglu:100:1000:inf"), {"field GAMMA = \"inf\" is not finite"});
  expect_invalid(spec("chunglu:100:1000:steep"), {"field GAMMA = \"steep\" is not a number"});
  expect_invalid(spec("chunglu:100:1000:1.9"), {"\"chunglu:100:1000:1.9\"", "exponent 1.9 must be", "above 2",
                                                "mean degree diverges"});
  expect_invalid(spec("chunglu:100:1000:2"), {"exponent 2 must be"});
  expect_invalid(spec("chunglu:100:10001:2.5"), {"nnz 10001 exceeds the 10000 entries of 100x100"});
  expect_invalid(spec("chunglu:100:0:2.5"), {"nnz 0 must be at least 1"});
  expect_invalid(spec("chunglu:0:5:2.5"), {"rows 0 must be at least 1"});
}

// Issue 27: explain gen:uniform:2000000000:1 set out to build 2e9 entries. A spec past the
// limit is refused before anything is allocated, naming the count and the limit; the limit
// can be raised or turned off (0).
TEST(Generate, SpecsPastTheSizeLimitAreRefusedBeforeBuilding) {
  auto spec = [](const char* text, int64_t limit = generate::kMaxGeneratedEntries) {
    return [text, limit] { generate::from_spec(text, 1, limit); };
  };
  expect_invalid(spec("uniform:2000000000:1"), {"\"uniform:2000000000:1\"", "2000000000 rows or columns", "limit of 134217728"});
  expect_invalid(spec("uniform:20000000:10"), {"200000000 entries", "limit of 134217728"});
  expect_invalid(spec("rmat:1000:1000000000000"), {"1000000000000 entries"});
  expect_invalid(spec("chunglu:100000:200000000:2.5"), {"200000000 entries"});
  expect_invalid(spec("rect:10:2000000000:5"), {"2000000000 rows or columns"});
  expect_invalid(spec("blockdiag:1000:8:3", 10000), {"11000 entries", "limit of 10000"});
  EXPECT_EQ(generate::from_spec("blockdiag:1000:8:3", 1, 11000).rows, 1000);
  EXPECT_EQ(generate::from_spec("uniform:300:7", 1, 0).nnz(), 2100);
}

TEST(Generate, BadParametersThrow) {
  expect_invalid([] { generate::uniform(-1, 5, 1, 0); }, {"uniform", "rows -1"});
  expect_invalid([] { generate::uniform(5, 5, 6, 0); }, {"nnz_per_row 6 exceeds cols 5"});
  expect_invalid([] { generate::uniform(2000000000, 2000000000, 2, 0); }, {"uniform", "2000000000 rows", "int32"});
  expect_invalid([] { generate::banded(10, 2, -1, 0); }, {"band", "half_width -1"});
  expect_invalid([] { generate::rmat(10, -4, 0); }, {"rmat", "edges -4"});
  expect_invalid([] { generate::rmat(10, 5, 0, 0.6, 0.3, 0.3); }, {"rmat", "exceed 1"});
  expect_invalid([] { generate::rmat(0, 5, 0); }, {"rmat", "5 edges need at least one row"});
  expect_invalid([] { generate::clustered(10, 100, 5, -0.1, 2, 0); }, {"clustered", "fraction -0.1"});
  expect_invalid([] { generate::clustered(10, 100, 5, std::nan(""), 2, 0); }, {"clustered", "fraction"});
  expect_invalid([] { generate::clustered(10, 10, 9, 1.0, 4, 0); }, {"clustered", "need 3 runs of 4", "only 2 fit"});
  expect_invalid([] { generate::clustered(10, 100, 5, 0.5, 0, 0); }, {"run length 0"});
  expect_invalid([] { generate::block_diagonal(10, 4, 7, 0); }, {"blockdiag", "noise_per_row 7 exceeds the 6"});
  expect_invalid([] { generate::algebraic_decay(4, 4, 1.0, -1.0, generate::DecaySigns::Positive, 0); }, {"lambda -1"});
  expect_invalid([] { generate::exponential_decay(4, 4, 1.0, 1.5, generate::DecaySigns::Positive, 0); }, {"lambda 1.5"});
  expect_invalid([] { generate::exponential_decay(-4, 4, 1.0, 0.5, generate::DecaySigns::Positive, 0); }, {"rows -4"});
}

template <class T>
class FillRandomTyped : public ::testing::Test {};
using ValueTypes = ::testing::Types<double, float, half, bfloat16>;
TYPED_TEST_SUITE(FillRandomTyped, ValueTypes);

TYPED_TEST(FillRandomTyped, SeededUniformValues) {
  using T = TypeParam;
  Dense<T> d(300, 700);  // several chunks of values
  generate::fill_random(d, 17);
  double sum = 0, sum_sq = 0;
  for (const T& x : d.data) {
    const double v = static_cast<float>(x);
    ASSERT_GE(v, -1.0);
    ASSERT_LE(v, 1.0);
    sum += v;
    sum_sq += v * v;
  }
  const double n = double(d.data.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum_sq / n, 1.0 / 3.0, 0.01);  // variance of U(-1, 1)
  std::vector<T> again(d.data.size());
  generate::fill_random(again, 17);
  std::vector<T> other(d.data.size());
  generate::fill_random(other, 18);
  int equal_again = 0, equal_other = 0;
  for (std::size_t i = 0; i < again.size(); ++i) {
    equal_again += static_cast<float>(again[i]) == static_cast<float>(d.data[i]);
    equal_other += static_cast<float>(other[i]) == static_cast<float>(d.data[i]);
  }
  EXPECT_EQ(equal_again, int(again.size()));
  EXPECT_LT(equal_other, int(again.size()) / 10);
}

}  // namespace
}  // namespace sparsejit
