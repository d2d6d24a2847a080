// The RS-SpMM heavy/light split: a hand-made matrix with every array worked out, and random
// matrices over a grid of panel widths and thresholds where a CPU executor that reads only
// the split (heavy work items + light CSR) must reproduce a plain CSR product exactly, for
// C = A·B and C = Aᵀ·B, and the counts must equal row_segment_split's.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "formats/row_segments.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

// ---------------------------------------------------------------------------------------
// Matrices.

struct Entry {
  int32_t col;
  double value;
};

template <class T>
Csr<T> csr_from_rows(int32_t cols, const std::vector<std::vector<Entry>>& rows) {
  Csr<T> m;
  m.rows = int32_t(rows.size());
  m.cols = cols;
  for (const auto& row : rows) {
    for (const Entry& entry : row) {
      m.col_idx.push_back(entry.col);
      m.values.push_back(T(float(entry.value)));
    }
    m.row_ptr.push_back(int32_t(m.col_idx.size()));
  }
  return m;
}

// Rows made of a few runs of nearby columns (so that heavy segments exist at every W) plus
// scattered singles, sorted and deduplicated. Values are integers in [1, 9]: every product
// below is then exact in float, double and half, and a lost or repeated entry always shows.
template <class T>
Csr<T> random_csr(std::mt19937_64& rng, int32_t rows, int32_t cols, int32_t max_runs, int32_t max_run_length) {
  std::uniform_int_distribution<int32_t> pick_col(0, std::max(cols - 1, 0));
  std::uniform_int_distribution<int32_t> pick_runs(0, max_runs);
  std::uniform_int_distribution<int32_t> pick_length(1, max_run_length);
  std::uniform_int_distribution<int32_t> pick_step(1, 3);
  std::uniform_int_distribution<int32_t> pick_value(1, 9);
  std::vector<std::vector<Entry>> entries(static_cast<std::size_t>(rows));
  for (auto& row : entries) {
    if (cols == 0) continue;
    std::vector<int32_t> columns;
    for (int32_t run = pick_runs(rng); run > 0; --run) {
      int32_t c = pick_col(rng);
      for (int32_t n = pick_length(rng); n > 0 && c < cols; --n, c += pick_step(rng)) columns.push_back(c);
    }
    std::sort(columns.begin(), columns.end());
    columns.erase(std::unique(columns.begin(), columns.end()), columns.end());
    for (const int32_t c : columns) row.push_back({c, double(pick_value(rng))});
  }
  return csr_from_rows<T>(cols, entries);
}

Dense<double> random_dense(std::mt19937_64& rng, int32_t rows, int32_t cols) {
  std::uniform_int_distribution<int32_t> pick(-9, 9);
  Dense<double> d(rows, cols);
  for (double& x : d.data) {
    do x = pick(rng); while (x == 0);
  }
  return d;
}

int64_t longest_row(const Csr<float>& a) {
  int64_t longest = 0;
  for (int32_t r = 0; r < a.rows; ++r) longest = std::max<int64_t>(longest, a.row_ptr[r + 1] - a.row_ptr[r]);
  return longest;
}

// ---------------------------------------------------------------------------------------
// Products.

// C = A·B (transpose false) or Aᵀ·B (true) straight from the CSR.
template <class T>
Dense<double> csr_product(const Csr<T>& a, const Dense<double>& b, bool transpose) {
  Dense<double> c(transpose ? a.cols : a.rows, b.cols);
  for (int32_t r = 0; r < a.rows; ++r)
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
      const int32_t out = transpose ? a.col_idx[e] : r, in = transpose ? r : a.col_idx[e];
      for (int32_t k = 0; k < b.cols; ++k) c.at(out, k) += double(float(a.values[e])) * b.at(in, k);
    }
  return c;
}

// The same product read only from the split, the way the kernels read it (row_segments.hpp):
// the heavy part through the work items (panel from block_panel, columns relative to the
// panel start), then the light CSR, both added into C.
template <class T>
void spmm_from_split(const RowSegmentSplit<T>& split, const Dense<double>& b, Dense<double>& c, bool transpose) {
  c = Dense<double>(transpose ? split.cols : split.rows, b.cols);
  auto add = [&](int32_t row, int32_t col, double value) {
    const int32_t out = transpose ? col : row, in = transpose ? row : col;
    for (int32_t k = 0; k < b.cols; ++k) c.at(out, k) += value * b.at(in, k);
  };
  for (int32_t item = 0; item < split.blocks(); ++item) {
    const int32_t panel_start = split.panel_begin(split.block_panel[item]);
    for (int32_t s = split.block_seg_begin[item]; s < split.block_seg_end[item]; ++s)
      for (int32_t e = split.seg_ptr[s]; e < split.seg_ptr[s + 1]; ++e)
        add(split.seg_row[s], panel_start + split.heavy_col[e], double(float(split.heavy_val[e])));
  }
  for (std::size_t i = 0; i < split.light_row.size(); ++i)
    for (int32_t e = split.light_ptr[i]; e < split.light_ptr[i + 1]; ++e)
      add(split.light_row[i], split.light_col[e], double(float(split.light_val[e])));
}

// ---------------------------------------------------------------------------------------
// Checks.

// Sizes, orders and the heavy/light rule, segment by segment and light row by light row.
template <class T>
void expect_well_formed(const RowSegmentSplit<T>& s) {
  ASSERT_EQ(s.panel_ptr.size(), std::size_t(s.panels) + 1);
  ASSERT_EQ(s.seg_row.size(), std::size_t(s.heavy_segments));
  ASSERT_EQ(s.seg_ptr.size(), std::size_t(s.heavy_segments) + 1);
  ASSERT_EQ(s.heavy_col.size(), std::size_t(s.heavy_nnz));
  ASSERT_EQ(s.heavy_val.size(), std::size_t(s.heavy_nnz));
  ASSERT_EQ(s.panel_ptr.front(), 0);
  ASSERT_EQ(s.panel_ptr.back(), s.heavy_segments);
  ASSERT_EQ(s.seg_ptr.front(), 0);
  ASSERT_EQ(s.seg_ptr.back(), s.heavy_nnz);
  for (int32_t p = 0; p < s.panels; ++p)
    for (int32_t seg = s.panel_ptr[p]; seg < s.panel_ptr[p + 1]; ++seg) {
      if (seg > s.panel_ptr[p]) { EXPECT_LT(s.seg_row[seg - 1], s.seg_row[seg]) << "panel " << p; }
      EXPECT_GE(s.seg_ptr[seg + 1] - s.seg_ptr[seg], s.threshold) << "segment " << seg;
      for (int32_t e = s.seg_ptr[seg]; e < s.seg_ptr[seg + 1]; ++e) {
        EXPECT_GE(s.heavy_col[e], 0);
        EXPECT_LT(s.heavy_col[e], s.panel_columns(p));
        if (e > s.seg_ptr[seg]) { EXPECT_LT(s.heavy_col[e - 1], s.heavy_col[e]); }
      }
    }
  ASSERT_EQ(s.light_row.size(), std::size_t(s.light_rows));
  ASSERT_EQ(s.light_ptr.size(), std::size_t(s.light_rows) + 1);
  ASSERT_EQ(s.light_col.size(), std::size_t(s.light_nnz));
  ASSERT_EQ(s.light_val.size(), std::size_t(s.light_nnz));
  ASSERT_EQ(s.light_ptr.front(), 0);
  ASSERT_EQ(s.light_ptr.back(), s.light_nnz);
  for (std::size_t i = 0; i < s.light_row.size(); ++i) {
    if (i > 0) { EXPECT_LT(s.light_row[i - 1], s.light_row[i]); }
    EXPECT_LT(s.light_ptr[i], s.light_ptr[i + 1]) << "light row " << s.light_row[i] << " is empty";
    // The light part of a row holds fewer than T nonzeros in every panel.
    std::vector<int32_t> per_panel(std::size_t(s.panels), 0);
    for (int32_t e = s.light_ptr[i]; e < s.light_ptr[i + 1]; ++e) {
      if (e > s.light_ptr[i]) { EXPECT_LT(s.light_col[e - 1], s.light_col[e]); }
      EXPECT_LT(++per_panel[std::size_t(s.light_col[e] / s.panel_width)], s.threshold) << "light row " << s.light_row[i];
    }
  }
}

// Every heavy segment in exactly one work item; items inside their panel, ordered, bounded.
template <class T>
void expect_work_items_cover_segments_once(const RowSegmentSplit<T>& s) {
  ASSERT_EQ(s.block_seg_begin.size(), s.block_panel.size());
  ASSERT_EQ(s.block_seg_end.size(), s.block_panel.size());
  std::vector<int32_t> covered(std::size_t(s.heavy_segments), 0);
  int32_t expected_items = 0;
  for (int32_t p = 0; p < s.panels; ++p) {
    const int32_t n = s.panel_ptr[p + 1] - s.panel_ptr[p];
    expected_items += (n + s.max_segments_per_block - 1) / s.max_segments_per_block;
  }
  EXPECT_EQ(s.blocks(), expected_items);
  for (int32_t item = 0; item < s.blocks(); ++item) {
    const int32_t p = s.block_panel[item], begin = s.block_seg_begin[item], end = s.block_seg_end[item];
    ASSERT_GE(p, 0);
    ASSERT_LT(p, s.panels);
    EXPECT_GE(begin, s.panel_ptr[p]) << "item " << item;
    EXPECT_LE(end, s.panel_ptr[p + 1]) << "item " << item;
    EXPECT_LT(begin, end) << "item " << item;
    EXPECT_LE(end - begin, s.max_segments_per_block) << "item " << item;
    if (item > 0) { EXPECT_EQ(begin, s.block_seg_end[item - 1]) << "items out of order at " << item; }
    for (int32_t seg = std::max(begin, 0); seg < std::min<int32_t>(end, int32_t(s.heavy_segments)); ++seg) ++covered[std::size_t(seg)];
  }
  for (std::size_t seg = 0; seg < covered.size(); ++seg) EXPECT_EQ(covered[seg], 1) << "segment " << seg;
}

template <class T>
void expect_counts_match_features(const RowSegmentSplit<T>& s, const Csr<T>& a) {
  const SplitStats expected = row_segment_split(a.pattern(), s.panel_width, s.threshold);
  EXPECT_EQ(s.panels, expected.panels);
  EXPECT_EQ(s.heavy_segments, expected.heavy_segments);
  EXPECT_EQ(s.heavy_nnz, expected.heavy_nnz);
  EXPECT_EQ(s.light_rows, expected.light_rows);
  EXPECT_EQ(s.light_nnz, expected.light_nnz);
}

template <class T>
void expect_products_match(const RowSegmentSplit<T>& s, const Csr<T>& a, std::mt19937_64& rng) {
  for (const bool transpose : {false, true}) {
    const Dense<double> b = random_dense(rng, transpose ? a.rows : a.cols, 3);
    Dense<double> from_split;
    spmm_from_split(s, b, from_split, transpose);
    const Dense<double> expected = csr_product(a, b, transpose);
    ASSERT_EQ(from_split.rows, expected.rows);
    ASSERT_EQ(from_split.cols, expected.cols);
    // Integer data: the sums are exact, so any lost or repeated nonzero is a mismatch.
    EXPECT_EQ(from_split.data, expected.data) << (transpose ? "Aᵀ·B" : "A·B");
  }
}

template <class T>
void expect_same_split(const RowSegmentSplit<T>& x, const RowSegmentSplit<T>& y) {
  EXPECT_EQ(x.panel_ptr, y.panel_ptr);
  EXPECT_EQ(x.seg_row, y.seg_row);
  EXPECT_EQ(x.seg_ptr, y.seg_ptr);
  EXPECT_EQ(x.heavy_col, y.heavy_col);
  EXPECT_EQ(x.block_panel, y.block_panel);
  EXPECT_EQ(x.block_seg_begin, y.block_seg_begin);
  EXPECT_EQ(x.block_seg_end, y.block_seg_end);
  EXPECT_EQ(x.light_row, y.light_row);
  EXPECT_EQ(x.light_ptr, y.light_ptr);
  EXPECT_EQ(x.light_col, y.light_col);
  ASSERT_EQ(x.heavy_val.size(), y.heavy_val.size());
  for (std::size_t i = 0; i < x.heavy_val.size(); ++i) EXPECT_EQ(float(x.heavy_val[i]), float(y.heavy_val[i]));
  ASSERT_EQ(x.light_val.size(), y.light_val.size());
  for (std::size_t i = 0; i < x.light_val.size(); ++i) EXPECT_EQ(float(x.light_val[i]), float(y.light_val[i]));
}

// ---------------------------------------------------------------------------------------
// The example of row_segments.hpp.

// 6 x 8; entry values are their CSR order number 1..19.
Csr<float> six_by_eight() {
  return csr_from_rows<float>(8, {{{0, 1}, {1, 2}, {3, 3}, {7, 4}},
                                  {},
                                  {{2, 5}, {5, 6}, {6, 7}},
                                  {{0, 8}, {1, 9}, {2, 10}, {3, 11}, {4, 12}, {5, 13}, {6, 14}, {7, 15}},
                                  {{3, 16}, {4, 17}},
                                  {{6, 18}, {7, 19}}});
}

TEST(RowSegments, HandMadeSixByEightGivesTheDocumentedArrays) {
  const Csr<float> a = six_by_eight();
  const RowSegmentSplit<float> s = build_row_segments(a, 4, 2, /*max_segments_per_block=*/2);
  EXPECT_EQ(s.rows, 6);
  EXPECT_EQ(s.cols, 8);
  EXPECT_EQ(s.panels, 2);
  EXPECT_EQ(s.panel_ptr, (std::vector<int32_t>{0, 2, 5}));
  EXPECT_EQ(s.seg_row, (std::vector<int32_t>{0, 3, 2, 3, 5}));
  EXPECT_EQ(s.seg_ptr, (std::vector<int32_t>{0, 3, 7, 9, 13, 15}));
  EXPECT_EQ(s.heavy_col, (std::vector<int32_t>{0, 1, 3, 0, 1, 2, 3, 1, 2, 0, 1, 2, 3, 2, 3}));
  EXPECT_EQ(s.heavy_val, (std::vector<float>{1, 2, 3, 8, 9, 10, 11, 6, 7, 12, 13, 14, 15, 18, 19}));
  EXPECT_EQ(s.light_row, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(s.light_ptr, (std::vector<int32_t>{0, 1, 2, 4}));
  EXPECT_EQ(s.light_col, (std::vector<int32_t>{7, 2, 3, 4}));
  EXPECT_EQ(s.light_val, (std::vector<float>{4, 5, 16, 17}));
  EXPECT_EQ(s.heavy_segments, 5);
  EXPECT_EQ(s.heavy_nnz, 15);
  EXPECT_EQ(s.light_rows, 3);
  EXPECT_EQ(s.light_nnz, 4);
  EXPECT_EQ(s.block_panel, (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(s.block_seg_begin, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(s.block_seg_end, (std::vector<int32_t>{2, 4, 5}));

  const RowSegmentSplit<float> one_item_per_panel = build_row_segments(a, 4, 2);
  EXPECT_EQ(one_item_per_panel.max_segments_per_block, kDefaultSegmentsPerBlock);
  EXPECT_EQ(one_item_per_panel.block_panel, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(one_item_per_panel.block_seg_begin, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(one_item_per_panel.block_seg_end, (std::vector<int32_t>{2, 5}));
}

TEST(RowSegments, HandMadeProductsByHand) {
  // With B = I (8 x 8) A·B is A itself, and with B = I (6 x 6) Aᵀ·B is Aᵀ: the split must
  // give back the entries of the example at their places.
  const Csr<float> a = six_by_eight();
  const RowSegmentSplit<float> s = build_row_segments(a, 4, 2);
  Dense<double> eye8(8, 8), eye6(6, 6), c;
  for (int32_t i = 0; i < 8; ++i) eye8.at(i, i) = 1;
  for (int32_t i = 0; i < 6; ++i) eye6.at(i, i) = 1;
  spmm_from_split(s, eye8, c, false);
  EXPECT_EQ(c.at(0, 3), 3);
  EXPECT_EQ(c.at(0, 7), 4);
  EXPECT_EQ(c.at(3, 4), 12);
  EXPECT_EQ(c.at(5, 7), 19);
  EXPECT_EQ(c.at(1, 0), 0);
  spmm_from_split(s, eye6, c, true);
  EXPECT_EQ(c.rows, 8);
  EXPECT_EQ(c.at(3, 0), 3);
  EXPECT_EQ(c.at(7, 0), 4);
  EXPECT_EQ(c.at(4, 3), 12);
  EXPECT_EQ(c.at(7, 5), 19);
  double total = 0;
  for (const double x : c.data) total += x;
  EXPECT_EQ(total, 19 * 20 / 2);
}

// ---------------------------------------------------------------------------------------
// Random matrices, every value type.

template <class T>
class RowSegmentsTyped : public ::testing::Test {};
using ValueTypes = ::testing::Types<float, double, half, bfloat16>;
TYPED_TEST_SUITE(RowSegmentsTyped, ValueTypes);

TYPED_TEST(RowSegmentsTyped, GridOfWidthsAndThresholdsLosesAndRepeatsNothing) {
  const uint64_t seed = test::fresh_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<std::pair<int32_t, int32_t>> shapes = {{1, 1}, {7, 5}, {40, 33}, {64, 128}, {25, 300}};
  int32_t mixed_splits = 0;  // splits with both parts non-empty: the grid must exercise both
  for (const auto& [rows, cols] : shapes) {
    const Csr<TypeParam> a = random_csr<TypeParam>(rng, rows, cols, 4, 12);
    for (const int32_t width : {1, 2, 3, 4, 7, 16, 64, 1000})
      for (const int32_t threshold : {1, 2, 3, 5, 9}) {
        SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols) + " W=" + std::to_string(width) +
                     " T=" + std::to_string(threshold));
        const RowSegmentSplit<TypeParam> s = build_row_segments(a, width, threshold, /*max_segments_per_block=*/3);
        expect_well_formed(s);
        expect_counts_match_features(s, a);
        expect_work_items_cover_segments_once(s);
        expect_products_match(s, a, rng);
        mixed_splits += s.heavy_nnz > 0 && s.light_nnz > 0 ? 1 : 0;
      }
  }
  EXPECT_GT(mixed_splits, 20);
}

// ---------------------------------------------------------------------------------------
// Extremes of T, empty rows and empty matrices.

TEST(RowSegments, ThresholdOneMakesEveryNonzeroHeavy) {
  std::mt19937_64 rng(test::fresh_seed());
  const Csr<float> a = random_csr<float>(rng, 30, 50, 3, 8);
  const RowSegmentSplit<float> s = build_row_segments(a, 8, 1);
  EXPECT_EQ(s.heavy_nnz, a.nnz());
  EXPECT_EQ(s.heavy_segments, row_segment_split(a.pattern(), 8, 1).segments);
  EXPECT_EQ(s.light_nnz, 0);
  EXPECT_EQ(s.light_rows, 0);
  EXPECT_EQ(s.light_ptr, (std::vector<int32_t>{0}));
  expect_products_match(s, a, rng);
}

TEST(RowSegments, ThresholdAboveTheLongestRowMakesEveryNonzeroLight) {
  std::mt19937_64 rng(test::fresh_seed());
  const Csr<float> a = random_csr<float>(rng, 30, 50, 3, 8);
  const int32_t threshold = int32_t(longest_row(a)) + 1;
  const RowSegmentSplit<float> s = build_row_segments(a, 8, threshold);
  EXPECT_EQ(s.heavy_segments, 0);
  EXPECT_EQ(s.heavy_nnz, 0);
  EXPECT_EQ(s.panel_ptr, std::vector<int32_t>(std::size_t(s.panels) + 1, 0));
  EXPECT_EQ(s.blocks(), 0);
  // The light part is A itself without its empty rows.
  std::vector<int32_t> non_empty_rows;
  for (int32_t r = 0; r < a.rows; ++r)
    if (a.row_ptr[r + 1] > a.row_ptr[r]) non_empty_rows.push_back(r);
  EXPECT_EQ(s.light_row, non_empty_rows);
  EXPECT_EQ(s.light_col, a.col_idx);
  EXPECT_EQ(s.light_val, a.values);
  expect_products_match(s, a, rng);
}

TEST(RowSegments, EmptyRowsAreInNeitherPart) {
  // Rows 0, 2, 3 and 5 are empty; row 1 is heavy in panel 0, row 4 light.
  const Csr<double> a = csr_from_rows<double>(6, {{}, {{0, 1}, {1, 2}}, {}, {}, {{5, 3}}, {}});
  const RowSegmentSplit<double> s = build_row_segments(a, 3, 2);
  EXPECT_EQ(s.seg_row, (std::vector<int32_t>{1}));
  EXPECT_EQ(s.panel_ptr, (std::vector<int32_t>{0, 1, 1}));
  EXPECT_EQ(s.light_row, (std::vector<int32_t>{4}));
  EXPECT_EQ(s.light_ptr, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(s.light_col, (std::vector<int32_t>{5}));
  EXPECT_EQ(s.heavy_col, (std::vector<int32_t>{0, 1}));
  expect_well_formed(s);
}

TEST(RowSegments, EmptyMatrices) {
  std::mt19937_64 rng(test::fresh_seed());
  for (const auto& [rows, cols] : std::vector<std::pair<int32_t, int32_t>>{{0, 0}, {0, 7}, {5, 0}, {4, 6}}) {
    SCOPED_TRACE(std::to_string(rows) + "x" + std::to_string(cols));
    const Csr<float> a = csr_from_rows<float>(cols, std::vector<std::vector<Entry>>(std::size_t(rows)));
    const RowSegmentSplit<float> s = build_row_segments(a, 4, 2);
    EXPECT_EQ(s.panels, (cols + 3) / 4);
    EXPECT_EQ(s.panel_ptr, std::vector<int32_t>(std::size_t(s.panels) + 1, 0));
    EXPECT_EQ(s.seg_ptr, (std::vector<int32_t>{0}));
    EXPECT_EQ(s.light_ptr, (std::vector<int32_t>{0}));
    EXPECT_TRUE(s.seg_row.empty() && s.heavy_col.empty() && s.light_row.empty() && s.light_col.empty());
    EXPECT_EQ(s.blocks(), 0);
    expect_well_formed(s);
    expect_counts_match_features(s, a);
    expect_products_match(s, a, rng);
  }
}

// ---------------------------------------------------------------------------------------
// Work items.

TEST(RowSegments, TinyBlockBoundCutsCrowdedPanelsAndCoversEverySegmentOnce) {
  std::mt19937_64 rng(test::fresh_seed());
  // A dense 20 x 12 block: W = 4 gives 3 panels of 20 heavy segments each.
  std::vector<std::vector<Entry>> dense_rows(20);
  for (auto& row : dense_rows)
    for (int32_t c = 0; c < 12; ++c) row.push_back({c, 1});
  const Csr<float> dense = csr_from_rows<float>(12, dense_rows);
  for (const int32_t per_block : {1, 3, 7, 20, 64}) {
    const RowSegmentSplit<float> s = build_row_segments(dense, 4, 2, per_block);
    EXPECT_EQ(s.heavy_segments, 60);
    EXPECT_EQ(s.blocks(), 3 * ((20 + per_block - 1) / per_block)) << "per block " << per_block;
    expect_work_items_cover_segments_once(s);
  }
  const Csr<float> a = random_csr<float>(rng, 80, 40, 5, 10);
  for (const int32_t per_block : {1, 2, 5}) {
    const RowSegmentSplit<float> s = build_row_segments(a, 8, 2, per_block);
    expect_work_items_cover_segments_once(s);
    expect_products_match(s, a, rng);
  }
}

// ---------------------------------------------------------------------------------------
// Threads, validation, cost.

TEST(RowSegments, EveryThreadCountBuildsTheSameSplit) {
  std::mt19937_64 rng(test::fresh_seed());
  const Csr<double> a = random_csr<double>(rng, 200, 150, 6, 16);
  for (const int32_t width : {4, 32})
    for (const int32_t threshold : {1, 3}) {
      const RowSegmentSplit<double> one = build_row_segments(a, width, threshold, 5, /*threads=*/1);
      for (const int32_t threads : {2, 3, 7}) {
        SCOPED_TRACE("W=" + std::to_string(width) + " T=" + std::to_string(threshold) + " threads=" + std::to_string(threads));
        expect_same_split(build_row_segments(a, width, threshold, 5, threads), one);
      }
      expect_same_split(build_row_segments(a, width, threshold, 5), one);
    }
}

template <class Call>
void expect_invalid_input_naming(const Call& call, const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error; expected one naming '" << text << "'";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

TEST(RowSegments, RejectsBadParametersAndUnsortedRows) {
  const Csr<float> a = six_by_eight();
  expect_invalid_input_naming([&] { build_row_segments(a, 0, 2); }, "panel width 0");
  expect_invalid_input_naming([&] { build_row_segments(a, -4, 2); }, "panel width -4");
  expect_invalid_input_naming([&] { build_row_segments(a, 4, 0); }, "heavy threshold 0");
  expect_invalid_input_naming([&] { build_row_segments(a, 4, 2, 0); }, "max segments per block 0");
  expect_invalid_input_naming([&] { build_row_segments(a, 4, 2, 8, -1); }, "builder threads -1");
  const Csr<float> unsorted = csr_from_rows<float>(8, {{{3, 1}, {1, 2}}});
  expect_invalid_input_naming([&] { build_row_segments(unsorted, 4, 2); }, "column index 1 out of order");
  const Csr<float> repeated = csr_from_rows<float>(8, {{{3, 1}, {3, 2}}});
  expect_invalid_input_naming([&] { build_row_segments(repeated, 4, 2); }, "column index 3 repeated");
}

TEST(RowSegments, BuildCostOnAboutTwoMillionNonzeros) {
  // 100000 rows of about 20 nonzeros; the time is printed, not asserted.
  std::mt19937_64 rng(test::fresh_seed());
  const Csr<float> a = random_csr<float>(rng, 100000, 100000, 6, 12);
  const SplitStats expected = row_segment_split(a.pattern(), 256, 4);
  for (const int32_t threads : {1, 0}) {
    const auto start = std::chrono::steady_clock::now();
    const RowSegmentSplit<float> s = build_row_segments(a, 256, 4, kDefaultSegmentsPerBlock, threads);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("build_row_segments: %lld nnz, W=256 T=4, threads=%s: %.1f ms (heavy %.1f%%, %d work items)\n",
                (long long)a.nnz(), threads == 0 ? "auto" : "1", ms, 100.0 * double(s.heavy_nnz) / double(a.nnz()), s.blocks());
    EXPECT_EQ(s.heavy_segments, expected.heavy_segments);
    EXPECT_EQ(s.heavy_nnz, expected.heavy_nnz);
    EXPECT_EQ(s.light_rows, expected.light_rows);
    EXPECT_EQ(s.light_nnz, expected.light_nnz);
  }
}

}  // namespace
}  // namespace sparsejit
