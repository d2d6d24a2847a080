// The COO view of a pattern and csr_merge's list of rows cleared before its launch: a
// hand-worked example, and random patterns where a CPU walk of the merge kernel's ranges (a
// row is stored when one range holds all of it, else added onto C) must leave no row that is
// neither stored nor cleared, and no stored row cleared.
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <vector>

#include "formats/coo_rows.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit {
namespace {

PatternView view(const std::vector<int32_t>& row_ptr, const std::vector<int32_t>& col_idx, int32_t cols) {
  return {int32_t(row_ptr.size() - 1), cols, row_ptr.data(), col_idx.data()};
}

TEST(CooRows, RowIndicesExpandTheRowOffsets) {
  const std::vector<int32_t> row_ptr{0, 2, 2, 5}, col_idx{0, 3, 1, 2, 3};
  EXPECT_EQ(formats::coo_row_indices(view(row_ptr, col_idx, 4)), (std::vector<int32_t>{0, 0, 2, 2, 2}));
}

// Rows of 3, 0, 1, 4, 0, 2 nonzeros (offsets 0 3 3 4 8 8 10) in ranges of 4: boundaries at 4
// and 8. Row 0 [0, 3) lies in range 0; row 2 [3, 4) too; row 3 [4, 8) is exactly range 1;
// row 5 [8, 10) is range 2. So only the empty rows 1 and 4 are cleared. In ranges of 3
// (boundaries 3, 6, 9): row 3 [4, 8) crosses 6 and row 5 [8, 10) crosses 9.
TEST(CooRows, ClearedRowsWorkedExample) {
  const std::vector<int32_t> row_ptr{0, 3, 3, 4, 8, 8, 10}, col_idx{0, 1, 2, 0, 0, 1, 2, 3, 1, 2};
  const PatternView p = view(row_ptr, col_idx, 4);
  EXPECT_EQ(formats::rows_cleared_before_merge(p, 4), (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(formats::rows_cleared_before_merge(p, 3), (std::vector<int32_t>{1, 3, 4, 5}));
  EXPECT_EQ(formats::rows_cleared_before_merge(p, 1), (std::vector<int32_t>{0, 1, 3, 4, 5}));
  EXPECT_EQ(formats::rows_cleared_before_merge(p, 1000), (std::vector<int32_t>{1, 4}));
}

TEST(CooRows, ClearedRowsRefuseARangeBelowOne) {
  const std::vector<int32_t> row_ptr{0, 1}, col_idx{0};
  try {
    formats::rows_cleared_before_merge(view(row_ptr, col_idx, 1), 0);
    FAIL() << "range 0 accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("range = 0"), std::string::npos) << e.what();
  }
}

// The merge kernel's rule, walked range by range: a range stores its rows except its first
// when the nonzero before the range is in that row, and its last when the nonzero after is.
std::set<int32_t> rows_stored_by_ranges(const std::vector<int32_t>& coo, int64_t range) {
  std::set<int32_t> stored;
  const int64_t nnz = int64_t(coo.size());
  for (int64_t begin = 0; begin < nnz; begin += range) {
    const int64_t end = std::min(nnz, begin + range);
    for (int64_t e = begin; e < end; ++e) {
      const int32_t r = coo[std::size_t(e)];
      const bool shared_first = begin > 0 && coo[std::size_t(begin - 1)] == r && r == coo[std::size_t(begin)];
      const bool shared_last = end < nnz && coo[std::size_t(end)] == r && r == coo[std::size_t(end - 1)];
      if (!shared_first && !shared_last) stored.insert(r);
    }
  }
  return stored;
}

TEST(CooRows, EveryRowIsStoredOrClearedNeverBoth) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 40; ++trial) {
    // Power-law rows with runs of empty ones, and uniform rows.
    const Csr<double> a = trial % 2 ? generate::rmat(500 + trial * 37, 4000, uint64_t(trial)) : generate::uniform(700, 900, 3, uint64_t(trial));
    const std::vector<int32_t> coo = formats::coo_row_indices(a.pattern());
    for (int64_t range : {int64_t(1), int64_t(5), int64_t(32), int64_t(64 + trial), int64_t(4096)}) {
      const std::set<int32_t> stored = rows_stored_by_ranges(coo, range);
      const std::vector<int32_t> cleared = formats::rows_cleared_before_merge(a.pattern(), range);
      ASSERT_TRUE(std::is_sorted(cleared.begin(), cleared.end()));
      for (int32_t r : cleared) EXPECT_EQ(stored.count(r), 0u) << "row " << r << " range " << range;
      EXPECT_EQ(stored.size() + cleared.size(), std::size_t(a.rows)) << "range " << range << " trial " << trial;
    }
  }
}

}  // namespace
}  // namespace sparsejit
