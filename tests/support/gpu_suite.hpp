// What every GPU suite shares: one Runtime per process on device 0, the skip (with the
// driver's reason) where no GPU exists, a fresh seed per test, and the tolerances and
// conversions the comparisons with the CPU reference use.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/test_support.hpp"

namespace sparsejit::test {

class GpuSuite : public ::testing::Test {
 protected:
  void SetUp() override;
  static Runtime& rt();
  // Seeds for one test's random inputs: different in every run (printed in failure traces)
  // unless SPARSEJIT_TEST_SEED fixes them.
  uint64_t next_seed() { return seed_++; }

 private:
  uint64_t seed_ = 0;
};

// CallInfo::plan_reused across calls with the same options on one handle (`previous`: the
// decision of the call before, null for the first): a call reuses the handle's plan, unless it
// timed auto's shortlist (measured selection) and made the measured plan, a new decision with
// source measured and the time the measuring took.
inline void expect_plan_reuse(const CallInfo& call, const std::shared_ptr<const Decision>& previous) {
  if (!previous || call.decision != previous) {
    EXPECT_FALSE(call.plan_reused);
  } else {
    EXPECT_TRUE(call.plan_reused);
  }
  if (previous && call.decision != previous) {
    EXPECT_EQ(call.decision->source, DecisionSource::Measured) << describe(*call.decision);
    EXPECT_GT(call.decision->measure_ms, 0);
  }
}

// Options that time auto's shortlist whatever the model's margin and the predicted call's
// length (Options::measure_skip_margin, measure_budget_calls): for tests of measured selection
// itself, on matrices whose calls take microseconds.
inline Options always_measure(Options o = {}) {
  o.measure_skip_margin = std::numeric_limits<double>::infinity();
  o.measure_budget_calls = std::numeric_limits<double>::infinity();
  return o;
}

// Removes the measured selections stored for `pattern` in the process's cache, so a test that
// asserts its own timing is not served by a record an earlier run left (the same pattern comes
// again under a fixed SPARSEJIT_TEST_SEED).
void forget_recorded(PatternView pattern);

// Relative error allowed against the double-accumulating CPU reference.
template <class T>
double gpu_tolerance() { return std::is_same_v<T, float> ? 1e-5 : 1e-12; }

// The widest vector (values per 16-byte load) that divides K: what the SDDMM kernels load.
template <class T>
int widest(int32_t k) {
  const int w = std::is_same_v<T, float> ? 4 : 2;
  return k % w == 0 ? w : 1;
}

// True when v holds the 0xFF bytes outputs are poisoned with (an element no kernel wrote).
template <class T>
bool is_poison(T v) {
  T poison;
  std::memset(&poison, 0xFF, sizeof(T));
  return std::memcmp(&v, &poison, sizeof(T)) == 0;
}

// A failure naming the first element of `got` still poisoned (a C element no kernel wrote).
template <class T>
void expect_all_written(const std::vector<T>& got, const std::string& what) {
  for (std::size_t i = 0; i < got.size(); ++i)
    if (is_poison(got[i])) {
      ADD_FAILURE() << what << ": C element " << i << " was not written";
      return;
    }
}

// Removes every entry of every `step`-th row: truly empty rows, not stored zeros.
inline Csr<double> empty_every(const Csr<double>& m, int32_t step) {
  Csr<double> out;
  out.rows = m.rows;
  out.cols = m.cols;
  for (int32_t r = 0; r < m.rows; ++r) {
    if (r % step != 0) {
      for (int32_t e = m.row_ptr[r]; e < m.row_ptr[r + 1]; ++e) {
        out.col_idx.push_back(m.col_idx[e]);
        out.values.push_back(m.values[e]);
      }
    }
    out.row_ptr.push_back(int32_t(out.col_idx.size()));
  }
  return out;
}

template <class T>
std::vector<double> as_double(const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); }

// One SpMM problem ready on the device: A (the pattern, fresh random values), B, the CPU
// reference C, and device copies; B and C have leading dimension k + ld_pad.
template <class T>
struct SpmmCase {
  SpmmCase(Runtime& rt, const Csr<double>& pattern, int32_t k, bool transpose, uint64_t seed, int64_t ld_pad = 0)
      : a(random_values(pattern, seed)),
        b(transpose ? a.rows : a.cols, k),
        da(rt.context(), a),
        db(rt.context(), b.rows, k, k + ld_pad),
        dc(rt.context(), transpose ? a.cols : a.rows, k, k + ld_pad) {
    generate::fill_random(b, seed + 1);
    reference::spmm(a, b, expected, transpose);
    db.upload(b);
  }

  static Csr<T> random_values(const Csr<double>& pattern, uint64_t seed) {
    Csr<T> m = cast<T>(pattern);
    generate::fill_random(m.values, seed);
    return m;
  }

  Csr<T> a;
  Dense<T> b;
  Dense<T> expected;
  DeviceCsr<T> da;
  DeviceDense<T> db, dc;
};

// P = S ∘ (A·Bᵀ) on fresh random values of S (pattern `spec`, seed `seed`), A and B (k
// columns), with the CPU reference's answer and the device operands (P not yet poisoned).
struct SddmmCase {
  SddmmCase(Runtime& rt, const std::string& spec, int32_t k, uint64_t seed)
      : s(random_pattern(spec, seed)), a(random_dense(s.rows, k, seed + 2)), b(random_dense(s.cols, k, seed + 3)),
        ds(rt.context(), s), da(rt.context(), a), db(rt.context(), b), dp(rt.context(), s.values.size() * sizeof(float)) {
    reference::sddmm(s, a, b, expected);
  }
  static Csr<float> random_pattern(const std::string& spec, uint64_t seed) {
    Csr<float> m = cast<float>(generate::from_spec(spec, seed));
    generate::fill_random(m.values, seed + 1);
    return m;
  }
  static Dense<float> random_dense(int32_t rows, int32_t cols, uint64_t seed) {
    Dense<float> d(rows, cols);
    generate::fill_random(d, seed);
    return d;
  }
  // The device result of the last call against the reference.
  double error() const {
    return relative_error(as_double(dp.download_as<float>(s.values.size())), as_double(expected.values));
  }

  Csr<float> s;
  Dense<float> a, b;
  Csr<float> expected;
  DeviceCsr<float> ds;
  DeviceDense<float> da, db;
  DeviceBuffer dp;
};

// C = op(A)·B on the device twice (the plan made, then reused), each time against the CPU
// reference with C poisoned first; a forced variant and its parameters must be what ran.
// ld_pad adds padding columns to B's and C's rows.
template <class T>
void check_spmm_twice(Runtime& rt, const std::string& name, const Csr<double>& pattern, int32_t k, const Options& options,
                      uint64_t seed, int64_t ld_pad = 0) {
  SCOPED_TRACE(name + " k=" + std::to_string(k) + " " + (options.variant.empty() ? "auto" : options.variant) +
               options.params.dump() + (options.transpose_a ? " Aᵀ·B" : " A·B") + " ld_pad=" + std::to_string(ld_pad) +
               " seed=" + std::to_string(seed));
  SpmmCase<T> problem(rt, pattern, k, options.transpose_a, seed, ld_pad);
  std::shared_ptr<const Decision> previous;
  for (int round = 0; round < 2; ++round) {
    problem.dc.buffer().fill_bytes(0xFF);
    const CallInfo call = rt.spmm(problem.da, problem.db, problem.dc, options);
    rt.context().synchronize();
    ASSERT_TRUE(call.decision);
    expect_plan_reuse(call, previous);
    previous = call.decision;
    if (!options.variant.empty()) {
      EXPECT_EQ(call.decision->variant, options.variant);
      for (const auto& [key, value] : options.params.items()) EXPECT_EQ(call.decision->params.at(key), value) << key;
    }
    ASSERT_LE(relative_error(as_double(problem.dc.download().data), as_double(problem.expected.data)), gpu_tolerance<T>());
  }
}

// B's row 0 set to +Inf: the one row of A that holds column 0 gets Inf or NaN, and every other
// row must come out finite and equal to the CPU reference. csr_merge loads B row 0 for the lanes
// past its range in the last batch and must drop those products, not multiply them by a zero
// value (0 x Inf = NaN); the row walks skip those loads. Rows of 37 entries leave a partial
// batch at every unroll.
template <class T>
void check_inf_in_b_row0_stays_in_its_row(Runtime& rt, const Options& options, uint64_t seed) {
  SCOPED_TRACE((options.variant.empty() ? "auto" : options.variant) + options.params.dump() + " seed=" + std::to_string(seed));
  constexpr int32_t kRowWithColumn0 = 7;
  const Csr<double> pattern = generate::from_spec("rect:96:300:37", seed);
  Csr<double> kept;
  kept.rows = pattern.rows;
  kept.cols = pattern.cols;
  for (int32_t r = 0; r < pattern.rows; ++r) {
    for (int32_t q = pattern.row_ptr[r]; q < pattern.row_ptr[r + 1]; ++q) {
      const bool first = q == pattern.row_ptr[r];
      if (r == kRowWithColumn0 && first) kept.col_idx.push_back(0);  // its first column becomes 0
      else if (pattern.col_idx[q] != 0) kept.col_idx.push_back(pattern.col_idx[q]);
      else continue;
      kept.values.push_back(pattern.values[q]);
    }
    kept.row_ptr.push_back(int32_t(kept.col_idx.size()));
  }
  const int32_t k = 128;
  SpmmCase<T> problem(rt, kept, k, false, seed);
  for (int32_t j = 0; j < k; ++j) problem.b.at(0, j) = std::numeric_limits<T>::infinity();
  problem.db.upload(problem.b);
  Dense<T> expected;
  reference::spmm(problem.a, problem.b, expected, false);
  problem.dc.buffer().fill_bytes(0xFF);
  rt.spmm(problem.da, problem.db, problem.dc, options);
  rt.context().synchronize();
  const Dense<T> c = problem.dc.download();
  EXPECT_FALSE(std::isfinite(c.at(kRowWithColumn0, 0)));
  for (int32_t r = 0; r < kept.rows; ++r) {
    if (r == kRowWithColumn0) continue;
    for (int32_t j = 0; j < k; ++j) {
      ASSERT_TRUE(std::isfinite(c.at(r, j))) << "row " << r << " column " << j;
      ASSERT_NEAR(double(c.at(r, j)), double(expected.at(r, j)), gpu_tolerance<T>() * (1.0 + std::abs(double(expected.at(r, j)))))
          << "row " << r << " column " << j;
    }
  }
}

// SpMM A·B with `options` on one handle `rounds` times (k columns), fresh random values of A
// uploaded before every call after the first: each result must match the CPU reference for
// the current values (C poisoned first) while the plan is reused, so whatever the variant
// caches on the handle (a split, a dense copy) has to follow the values.
void check_new_values_follow(Runtime& rt, Csr<float> a, int32_t k, const Options& options, int rounds, uint64_t seed);

// An empty 5 x 4 matrix (no entries at all): C = op(A)·B with `options` must be all zeros, C
// poisoned first.
void expect_empty_gives_zeros(Runtime& rt, const Options& options);

}  // namespace sparsejit::test
