// What every GPU suite shares: one Runtime per process on device 0, the skip (with the
// driver's reason) where no GPU exists, a fresh seed per test, and the tolerances and
// conversions the comparisons with the CPU reference use.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "sparsejit/runtime.hpp"

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

// Relative error allowed against the double-accumulating CPU reference.
template <class T>
double gpu_tolerance() { return std::is_same_v<T, float> ? 1e-5 : 1e-12; }

template <class T>
std::vector<double> as_double(const std::vector<T>& v) { return std::vector<double>(v.begin(), v.end()); }

}  // namespace sparsejit::test
