// cuSPARSE baselines against a double-precision loop: SpMM (each CSR algorithm, A and Aᵀ) and
// the sampled dot products of SDDMM, f32 and f64, several K, random matrices with empty and
// heavy rows; outputs poisoned with NaN bytes before every run, fresh values every time.
// Combinations cuSPARSE rejects are recorded and printed; CSR_ALG1 on A must always work.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/error.hpp"
#include "support/test_support.hpp"
#include "vendor/cusparse_sddmm.hpp"
#include "vendor/cusparse_spmm.hpp"

namespace sparsejit {
namespace {

using vendor::SpmmAlgorithm;

struct Shape {
  int32_t rows, cols, mean_per_row;
};
const Shape kShapes[] = {{7, 5, 2}, {64, 64, 8}, {300, 200, 12}, {1000, 1000, 20}};

// A random CSR: row lengths vary (about one row in eight empty, one in sixteen ten times the
// mean, capped at cols), columns sorted and distinct, values uniform in [-1, 1].
template <class T>
Csr<T> random_csr(std::mt19937_64& rng, const Shape& shape) {
  Csr<T> m;
  m.rows = shape.rows;
  m.cols = shape.cols;
  std::uniform_int_distribution<int> kind(0, 15);
  std::uniform_int_distribution<int> length(0, 2 * shape.mean_per_row);
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  std::vector<int32_t> all(shape.cols);
  for (int32_t c = 0; c < shape.cols; ++c) all[c] = c;
  for (int32_t r = 0; r < shape.rows; ++r) {
    const int k = kind(rng);
    int n = k < 2 ? 0 : (k == 15 ? 10 * shape.mean_per_row : length(rng));
    n = std::min(n, int(shape.cols));
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int32_t> cols(all.begin(), all.begin() + n);
    std::sort(cols.begin(), cols.end());
    for (int32_t c : cols) {
      m.col_idx.push_back(c);
      m.values.push_back(T(value(rng)));
    }
    m.row_ptr.push_back(int32_t(m.col_idx.size()));
  }
  return m;
}

template <class T>
Dense<T> random_dense(std::mt19937_64& rng, int32_t rows, int32_t cols) {
  std::uniform_real_distribution<double> value(-1.0, 1.0);
  Dense<T> d(rows, cols);
  for (T& x : d.data) x = T(value(rng));
  return d;
}

template <class T>
std::vector<double> to_double(const std::vector<T>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// C = op(A)·B in double.
template <class T>
std::vector<double> reference_spmm(const Csr<T>& a, bool transpose, const Dense<T>& b) {
  const int32_t m = transpose ? a.cols : a.rows;
  const int32_t k = b.cols;
  std::vector<double> c(std::size_t(m) * k, 0.0);
  for (int32_t i = 0; i < a.rows; ++i)
    for (int32_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int32_t j = a.col_idx[e];
      const int32_t out = transpose ? j : i, in = transpose ? i : j;
      for (int32_t x = 0; x < k; ++x) c[std::size_t(out) * k + x] += double(a.values[e]) * double(b.at(in, x));
    }
  return c;
}

// out[e] = dot(A[i,:], B[j,:]) in double for every entry (i, j) of s.
template <class T>
std::vector<double> reference_sampled_dots(const Csr<T>& s, const Dense<T>& a, const Dense<T>& b) {
  std::vector<double> out(s.col_idx.size(), 0.0);
  for (int32_t i = 0; i < s.rows; ++i)
    for (int32_t e = s.row_ptr[i]; e < s.row_ptr[i + 1]; ++e)
      for (int32_t x = 0; x < a.cols; ++x) out[e] += double(a.at(i, x)) * double(b.at(s.col_idx[e], x));
  return out;
}

template <class T> double tolerance();
template <> double tolerance<float>() { return 1e-5; }
template <> double tolerance<double>() { return 1e-12; }
template <class T> const char* type_name();
template <> const char* type_name<float>() { return "f32"; }
template <> const char* type_name<double>() { return "f64"; }

const int32_t kSpmmWidths[] = {1, 3, 32, 33, 100, 128, 512};
const int32_t kSddmmWidths[] = {1, 3, 32, 33, 100, 128};
const SpmmAlgorithm kAlgorithms[] = {SpmmAlgorithm::CsrAlg1, SpmmAlgorithm::CsrAlg2, SpmmAlgorithm::CsrAlg3};

class Vendor : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!driver_available()) GTEST_SKIP() << driver_unavailable_reason();
    seed_ = test::fresh_seed();
    rng_.seed(seed_);
    context_.emplace(0);
    handle_.emplace(*context_);
    stream_.emplace(*context_);
  }
  void TearDown() override {
    if (!rejected_.empty()) {
      std::cout << "cuSPARSE rejected " << rejected_.size() << " combinations:\n";
      for (const std::string& r : rejected_) std::cout << "  " << r << "\n";
    }
  }

  // Runs one SpMM plan twice (the second time with fresh B and A values written in place) and
  // checks each result; returns false when cuSPARSE rejected the combination.
  template <class T>
  bool check_spmm(const Shape& shape, SpmmAlgorithm algorithm, bool transpose, int32_t k) {
    const std::string label = std::string(type_name<T>()) + " " + vendor::to_string(algorithm) +
                              (transpose ? " Aᵀ" : " A") + " " + std::to_string(shape.rows) + "x" +
                              std::to_string(shape.cols) + " K=" + std::to_string(k);
    SCOPED_TRACE(label + ", seed " + std::to_string(seed_) + " (SPARSEJIT_TEST_SEED reproduces it)");
    Csr<T> a = random_csr<T>(rng_, shape);
    const int32_t inner = transpose ? a.rows : a.cols, m = transpose ? a.cols : a.rows;
    Dense<T> b = random_dense<T>(rng_, inner, k);
    DeviceCsr<T> da(*context_, a);
    DeviceDense<T> db(*context_, b);
    DeviceDense<T> dc(*context_, m, k);
    std::optional<vendor::CusparseSpmm<T>> plan;
    try {
      plan.emplace(*handle_, da, transpose, db, dc, algorithm, stream_->handle());
    } catch (const UnsupportedError& e) {
      rejected_.insert(label + ": " + e.what());
      return false;
    }
    for (int round = 0; round < 2; ++round) {
      if (round == 1) {
        b = random_dense<T>(rng_, inner, k);
        db.upload(b);
        for (T& v : a.values) v = T(std::uniform_real_distribution<double>(-1.0, 1.0)(rng_));
        da.update_values(a.values);
      }
      dc.buffer().fill_bytes(0xFF);
      plan->run(stream_->handle());
      stream_->synchronize();
      const std::vector<double> got = to_double(dc.download().data);
      const double error = test::relative_error(got, reference_spmm(a, transpose, b));
      EXPECT_LT(error, tolerance<T>()) << "round " << round;
    }
    return true;
  }

  template <class T>
  void check_sampled_dots(const Shape& shape, int32_t k) {
    SCOPED_TRACE(std::string(type_name<T>()) + " SDDMM " + std::to_string(shape.rows) + "x" +
                 std::to_string(shape.cols) + " K=" + std::to_string(k) + ", seed " + std::to_string(seed_));
    const Csr<T> s = random_csr<T>(rng_, shape);
    Dense<T> a = random_dense<T>(rng_, s.rows, k);
    Dense<T> b = random_dense<T>(rng_, s.cols, k);
    DeviceCsr<T> ds(*context_, s);
    DeviceDense<T> da(*context_, a);
    DeviceDense<T> db(*context_, b);
    DeviceBuffer out(*context_, std::max<std::size_t>(1, s.col_idx.size()) * sizeof(T));
    vendor::CusparseSampledDots<T> plan(*handle_, ds, da, db, out, stream_->handle());
    for (int round = 0; round < 2; ++round) {
      if (round == 1) {
        a = random_dense<T>(rng_, s.rows, k);
        b = random_dense<T>(rng_, s.cols, k);
        da.upload(a);
        db.upload(b);
      }
      out.fill_bytes(0xFF);
      plan.run(stream_->handle());
      stream_->synchronize();
      const std::vector<double> got = to_double(out.download_as<T>(s.col_idx.size()));
      EXPECT_LT(test::relative_error(got, reference_sampled_dots(s, a, b)), tolerance<T>()) << "round " << round;
    }
  }

  // Every algorithm × op(A) × K × shape; plain A·B with CSR_ALG1 must never be rejected.
  template <class T>
  void check_spmm_grid() {
    for (bool transpose : {false, true})
      for (SpmmAlgorithm algorithm : kAlgorithms)
        for (int32_t k : kSpmmWidths)
          for (const Shape& shape : kShapes) {
            const bool ran = check_spmm<T>(shape, algorithm, transpose, k);
            const bool must_run = algorithm == SpmmAlgorithm::CsrAlg1 && !transpose;
            EXPECT_TRUE(ran || !must_run) << "CSR_ALG1 rejected plain A·B";
          }
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  std::optional<Context> context_;
  std::optional<vendor::CusparseHandle> handle_;
  std::optional<Stream> stream_;
  std::set<std::string> rejected_;
};

TEST_F(Vendor, SpmmFloat) { check_spmm_grid<float>(); }
TEST_F(Vendor, SpmmDouble) { check_spmm_grid<double>(); }

TEST_F(Vendor, SampledDotsFloatAndDouble) {
  for (int32_t k : kSddmmWidths)
    for (const Shape& shape : kShapes) {
      check_sampled_dots<float>(shape, k);
      check_sampled_dots<double>(shape, k);
    }
}

TEST_F(Vendor, ShapeMismatchesAreInvalidInput) {
  const Csr<float> a = random_csr<float>(rng_, {10, 7, 3});
  DeviceCsr<float> da(*context_, a);
  DeviceDense<float> wrong_b(*context_, 10, 4);  // needs 7 rows for A·B
  DeviceDense<float> c(*context_, 10, 4);
  EXPECT_THROW(vendor::CusparseSpmm<float>(*handle_, da, false, wrong_b, c, SpmmAlgorithm::CsrAlg1, nullptr),
               InvalidInputError);
  DeviceDense<float> a_dense(*context_, 10, 4), b_dense(*context_, 7, 5);  // K differs
  DeviceBuffer out(*context_, a.col_idx.size() * sizeof(float));
  EXPECT_THROW(vendor::CusparseSampledDots<float>(*handle_, da, a_dense, b_dense, out, nullptr), InvalidInputError);
  DeviceDense<float> b_ok(*context_, 7, 4);
  DeviceBuffer small(*context_, 4);
  EXPECT_THROW(vendor::CusparseSampledDots<float>(*handle_, da, a_dense, b_ok, small, nullptr), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit
