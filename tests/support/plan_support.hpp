// Helpers the planner suites share (plan_test.cpp and the per-op plan_*_test.cpp).
#pragma once
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "plan/choose.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/matrix.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::test {

// A 4x6 matrix with rows of length 3, 0, 2, 1.
inline Features small_features() {
  Coo<double> coo;
  coo.rows = 4;
  coo.cols = 6;
  coo.row_idx = {0, 0, 0, 2, 2, 3};
  coo.col_idx = {0, 2, 5, 1, 3, 4};
  coo.values.assign(6, 1.0);
  const Csr<double> a = to_csr(coo);
  return inspect(a.pattern());
}

// The decision's candidate of that variant; InvalidInputError when it has none.
inline const Candidate& candidate(const Decision& d, const std::string& name) {
  for (const auto& c : d.candidates)
    if (c.variant == name) return c;
  throw InvalidInputError("no candidate " + name);
}

// A neighbour keeps its centre's variant and differs from it; returns the options forcing it.
inline Options forcing_neighbour(const std::string& variant, const nlohmann::json& centre, const plan::TimedChoice& n) {
  EXPECT_EQ(n.variant, variant);
  EXPECT_NE(n.params, centre);
  Options forced;
  forced.variant = n.variant;
  forced.params = n.params;
  return forced;
}

}  // namespace sparsejit::test
