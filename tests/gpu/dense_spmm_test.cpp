// The dense SpMM variant end to end on the GPU: A expanded into a dense copy cached on the
// handle, then the GEMM: the tensor-core kernel (templates/spmm_dense_mma.cu) for f32 A·B,
// cuBLAS SGEMM / DGEMM otherwise, and each forced. Forced, f32 and f64, A·B and Aᵀ·B, K = 1, 7, 32, 33,
// 100, 128, 512, padded leading dimensions, on a pruned-layer shape, rectangular shapes both
// ways, and empty rows and columns. Every call is checked against the CPU reference with fresh random
// values and C poisoned with NaN first; the second call on a handle reuses the plan; new
// values on the same handle rebuild the copy.
#include <gtest/gtest.h>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class DenseSpmmGpu : public test::GpuSuite {};

Options dense(bool transpose) {
  Options o;
  o.variant = "dense";
  o.transpose_a = transpose;
  return o;
}

// Rows 1, 3 and the last empty, columns 4, 6 and 7 never used.
Csr<double> gaps() {
  Csr<double> a;
  a.rows = 7;
  a.cols = 9;
  a.row_ptr = {0, 2, 2, 5, 5, 7, 8, 8};
  a.col_idx = {1, 8, 0, 3, 5, 2, 3, 8};
  a.values.assign(a.col_idx.size(), 1.0);
  return a;
}

std::vector<std::pair<std::string, Csr<double>>> matrices() {
  std::vector<std::pair<std::string, Csr<double>>> out;
  out.emplace_back("pruned layer 256 x 2304 at 50%", generate::uniform(256, 2304, 1152, 3));
  out.emplace_back("tall 3000 x 200", generate::uniform(3000, 200, 20, 5));
  out.emplace_back("wide 50 x 1000", generate::uniform(50, 1000, 300, 7));
  out.emplace_back("empty rows and columns", gaps());
  return out;
}

const int32_t kWidths[] = {1, 7, 32, 33, 100, 128, 512};

TEST_F(DenseSpmmGpu, EveryTypeKAndDirection) {
  for (const auto& [name, m] : matrices()) {
    for (int32_t k : kWidths) {
      for (bool transpose : {false, true}) {
        test::check_spmm_twice<float>(rt(), name, m, k, dense(transpose), next_seed());
        test::check_spmm_twice<double>(rt(), name, m, k, dense(transpose), next_seed());
      }
    }
  }
}

TEST_F(DenseSpmmGpu, PaddedLeadingDimensions) {
  const Csr<double> m = generate::uniform(300, 500, 200, 9);
  for (int64_t pad : {1, 3}) {
    for (bool transpose : {false, true}) {
      test::check_spmm_twice<float>(rt(), "300 x 500", m, 64, dense(transpose), next_seed(), pad);
      test::check_spmm_twice<double>(rt(), "300 x 500", m, 33, dense(transpose), next_seed(), pad);
    }
  }
}

// The tensor-core GEMM with the inner dimension whole and cut into 2-16 parts (the parts add
// onto a cleared C), against cuBLAS's on the same handle: a pruned layer's long rows (2304
// inner elements), K a multiple of 4 (16-byte copies) and not (single values), and a shape
// whose rows, columns and K all end inside a tile.
TEST_F(DenseSpmmGpu, TheTensorCoreGemmAtEverySplitAndCublasAgree) {
  const std::vector<std::pair<std::string, Csr<double>>> shapes = {
      {"pruned layer 256 x 2304 at 50%", generate::uniform(256, 2304, 1152, 13)},
      {"ragged 77 x 301", generate::uniform(77, 301, 90, 17)}};
  for (const auto& [name, m] : shapes) {
    for (int32_t k : {128, 33}) {
      for (int splits : {1, 2, 4, 16}) {
        Options o = dense(false);
        o.params = {{"gemm", "mma"}, {"splits", splits}};
        test::check_spmm_twice<float>(rt(), name + " mma splits " + std::to_string(splits), m, k, o, next_seed());
      }
      Options cublas = dense(false);
      cublas.params = {{"gemm", "cublas"}};
      test::check_spmm_twice<float>(rt(), name + " cublas", m, k, cublas, next_seed());
    }
  }
}

TEST_F(DenseSpmmGpu, NewValuesRebuildTheCopy) {
  test::check_new_values_follow(rt(), cast<float>(generate::uniform(200, 300, 120, 11)), 48, dense(false), 3, next_seed());
}

TEST_F(DenseSpmmGpu, ParametersAndUnsupportedTypesAreRejected) {
  const Csr<float> a = cast<float>(generate::uniform(64, 64, 4, 1));
  DeviceCsr<float> da(rt().context(), a);
  DeviceDense<float> db(rt().context(), 64, 8), dc(rt().context(), 64, 8);
  Options with_param = dense(false);
  with_param.params = {{"lanes", 8}};
  EXPECT_THROW(rt().spmm(da, db, dc, with_param), InvalidInputError);
  with_param.params = {{"gemm", "fast"}};
  EXPECT_THROW(rt().spmm(da, db, dc, with_param), InvalidInputError);
  // A column count that is not a multiple of 4 cannot take 16-byte copies of the dense copy's rows.
  const Csr<float> odd = cast<float>(generate::uniform(64, 63, 4, 1));
  DeviceCsr<float> dodd(rt().context(), odd);
  DeviceDense<float> ob(rt().context(), 63, 8), oc(rt().context(), 64, 8);
  with_param.params = {{"gemm", "mma"}, {"vec_width", 4}};
  EXPECT_THROW(rt().spmm(dodd, ob, oc, with_param), InvalidInputError);
  // The tensor-core GEMM serves f32 only.
  const Csr<double> wide = generate::uniform(64, 64, 4, 1);
  DeviceCsr<double> dw(rt().context(), wide);
  DeviceDense<double> wb(rt().context(), 64, 8), wc(rt().context(), 64, 8);
  with_param.params = {{"gemm", "mma"}};
  EXPECT_THROW(rt().spmm(dw, wb, wc, with_param), UnsupportedError);
  const Csr<half> h = cast<half>(generate::uniform(64, 64, 4, 1));
  DeviceCsr<half> dh(rt().context(), h);
  DeviceDense<half> hb(rt().context(), 64, 8), hc(rt().context(), 64, 8);
  EXPECT_THROW(rt().spmm(dh, hb, hc, dense(false)), UnsupportedError);
  // A row naming a column twice: the SpMM planner rejects it for every variant, naming it.
  Csr<float> repeated = cast<float>(gaps());
  repeated.col_idx[3] = 0;
  DeviceCsr<float> dr(rt().context(), repeated);
  DeviceDense<float> rb(rt().context(), 9, 8), rc(rt().context(), 7, 8);
  try {
    rt().spmm(dr, rb, rc, dense(false));
    FAIL() << "a repeated column was accepted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("row 2: column index 0 repeated"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace sparsejit
