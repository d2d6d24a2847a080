#include <gtest/gtest.h>

#include <cmath>

#include "sparsejit/error.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit {
namespace {

Coo<double> small_coo() {
  Coo<double> coo;
  coo.rows = 3;
  coo.cols = 4;
  coo.row_idx = {2, 0, 1, 0, 2, 0};
  coo.col_idx = {1, 3, 2, 0, 1, 3};
  coo.values = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
  return coo;
}

TEST(Matrix, CooToCsrSortsAndSumsDuplicates) {
  const Csr<double> csr = to_csr(small_coo());
  EXPECT_EQ(csr.row_ptr, (std::vector<int32_t>{0, 2, 3, 4}));
  EXPECT_EQ(csr.col_idx, (std::vector<int32_t>{0, 3, 2, 1}));
  EXPECT_EQ(csr.values, (std::vector<double>{4.0, 8.0, 3.0, 6.0}));
  EXPECT_NO_THROW(validate(csr));
}

TEST(Matrix, CsrCooRoundTrip) {
  const Csr<double> csr = to_csr(small_coo());
  const Csr<double> again = to_csr(to_coo(csr));
  EXPECT_EQ(again.row_ptr, csr.row_ptr);
  EXPECT_EQ(again.col_idx, csr.col_idx);
  EXPECT_EQ(again.values, csr.values);
}

TEST(Matrix, TransposeTwiceIsIdentityAndSwapsEntries) {
  const Csr<double> csr = to_csr(small_coo());
  const Csr<double> t = transpose(csr);
  EXPECT_EQ(t.rows, 4);
  EXPECT_EQ(t.cols, 3);
  EXPECT_EQ(t.row_ptr, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(t.col_idx, (std::vector<int32_t>{0, 2, 1, 0}));
  EXPECT_EQ(t.values, (std::vector<double>{4.0, 6.0, 3.0, 8.0}));
  const Csr<double> tt = transpose(t);
  EXPECT_EQ(tt.col_idx, csr.col_idx);
  EXPECT_EQ(tt.values, csr.values);
}

TEST(Matrix, ExpandSymmetricMirrorsOffDiagonal) {
  Coo<double> lower;
  lower.rows = lower.cols = 2;
  lower.row_idx = {0, 1};
  lower.col_idx = {0, 0};
  lower.values = {1.0, 2.0};
  const Csr<double> sym = to_csr(expand_symmetric(lower, false));
  EXPECT_EQ(sym.values, (std::vector<double>{1.0, 2.0, 2.0}));
  const Csr<double> skew = to_csr(expand_symmetric(lower, true));
  EXPECT_EQ(skew.values, (std::vector<double>{1.0, -2.0, 2.0}));
}

TEST(Matrix, ValidateNamesTheBadIndex) {
  Csr<float> csr = cast<float>(to_csr(small_coo()));
  csr.col_idx[1] = 4;
  try {
    validate(csr);
    FAIL() << "expected InvalidInputError";
  } catch (const InvalidInputError& e) {
    EXPECT_STREQ(e.what(), "row 0: column index 4 out of range [0, 4)");
  }
  csr.col_idx[1] = 0;
  EXPECT_THROW(validate(csr), InvalidInputError);  // repeated column
  EXPECT_NO_THROW(validate(csr, /*require_sorted=*/false));
  csr.row_ptr[2] = 0;
  EXPECT_THROW(validate(csr, false), InvalidInputError);  // offsets not monotone
}

TEST(Matrix, ValidateChecksEveryOffsetBeforeReadingColumns) {
  // Row 0 claims 100 entries of 5: the offsets are refused before any column past 5 is read.
  const std::vector<int32_t> row_ptr = {0, 100, 5}, col_idx = {0, 1, 2, 3, 4};
  try {
    validate(PatternView{2, 8, row_ptr.data(), col_idx.data()}, false);
    FAIL() << "expected InvalidInputError";
  } catch (const InvalidInputError& e) {
    EXPECT_STREQ(e.what(), "row 1: offsets not monotone (100 then 5)");
  }
}

TEST(Matrix, CooToCsrRejectsOutOfRangeEntries) {
  Coo<double> coo = small_coo();
  coo.row_idx[3] = 3;
  EXPECT_THROW(to_csr(coo), InvalidInputError);
}

TEST(Types, HalfAndBfloat16RoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f}) {
    EXPECT_EQ(float(half(f)), f) << f;
  }
  EXPECT_EQ(float(half(1.0f + 1.0f / 4096)), 1.0f);  // ties to even
  EXPECT_TRUE(std::isinf(float(half(1e6f))));
  EXPECT_TRUE(std::isnan(float(half(NAN))));
  EXPECT_EQ(float(bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(float(bfloat16(3.0f)), 3.0f);
  EXPECT_EQ(float(bfloat16(1.00390625f)), 1.0f);  // ties to even
  EXPECT_TRUE(std::isnan(float(bfloat16(NAN))));
  EXPECT_EQ(parse_dtype("f32"), DType::F32);
  EXPECT_THROW(parse_dtype("f8"), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit
