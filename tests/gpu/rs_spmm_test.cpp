// The RS-SpMM variants end to end on the GPU: csr_vector (the light kernel over the whole
// matrix) and rs (light + heavy split) forced with many parameter sets, f32 and f64, A·B and
// Aᵀ·B, K = 1, 7, 32, 33, 100, 128, 512, on generated matrices with and without clustering
// and on rectangular ones, against the CPU reference with fresh random values and C poisoned
// with NaN before every call. The second call on a handle must reuse the plan and the split.
#include <gtest/gtest.h>

#include <cmath>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/io.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class RsSpmmGpu : public test::GpuSuite {};

// Clustered (heavy segments), banded, power-law with empty and very long rows, uniform
// (almost no heavy segments), block-diagonal, and rectangular shapes both ways.
std::vector<std::pair<std::string, Csr<double>>> matrices() {
  std::vector<std::pair<std::string, Csr<double>>> out;
  for (const char* spec : {"clustered:2048:24:0.6:16", "band:2000:16:40", "rmat:4096:40000", "uniform:3000:9", "blockdiag:1500:30:2"})
    out.emplace_back(spec, generate::from_spec(spec, 7));
  out.emplace_back("clustered 900x2500", generate::clustered(900, 2500, 20, 0.7, 8, 5));
  out.emplace_back("uniform 2500x300", generate::uniform(2500, 300, 6, 3));
  return out;
}

const int32_t kWidths[] = {1, 7, 32, 33, 100, 128, 512};

Options forced(const std::string& variant, nlohmann::json params, bool transpose) {
  Options o;
  o.variant = variant;
  o.params = std::move(params);
  o.transpose_a = transpose;
  return o;
}

// rs parameter sets: small panels (many panels and work items), every threshold regime
// (T = 1: everything heavy, the light kernel only writes zeros), every coarsening.
std::vector<nlohmann::json> rs_param_sets() {
  return {{{"panel_width", 64}, {"threshold", 1}, {"cf_v", 1}, {"cf_h", 1}},
          {{"panel_width", 64}, {"threshold", 2}, {"cf_v", 2}, {"cf_h", 2}},
          {{"panel_width", 64}, {"threshold", 8}, {"cf_v", 4}, {"cf_h", 1}, {"segments_per_block", 3}},
          {{"threshold", 2}, {"cf_v", 1}, {"cf_h", 2}},
          {{"threshold", 8}, {"cf_v", 2}, {"cf_h", 1}, {"heavy_lanes", 8}, {"lanes_per_row", 16}}};
}

std::vector<nlohmann::json> vector_param_sets() {
  return {nlohmann::json::object(),
          {{"lanes_per_row", 8}, {"cf_h", 1}},
          {{"lanes_per_row", 16}, {"cf_h", 2}, {"unroll", 1}},
          {{"lanes_per_row", 32}, {"cf_h", 2}, {"unroll", 8}}};
}

TEST_F(RsSpmmGpu, RsEveryParameterSetTypeKAndDirection) {
  for (const auto& [name, m] : matrices()) {
    for (int32_t k : kWidths) {
      for (bool transpose : {false, true}) {
        for (const auto& params : rs_param_sets()) {
          test::check_spmm_twice<float>(rt(), name, m, k, forced("rs", params, transpose), next_seed());
          test::check_spmm_twice<double>(rt(), name, m, k, forced("rs", params, transpose), next_seed());
        }
      }
    }
  }
}

TEST_F(RsSpmmGpu, CsrVectorEveryShapeTypeKAndDirection) {
  for (const auto& [name, m] : matrices()) {
    for (int32_t k : kWidths) {
      for (bool transpose : {false, true}) {
        for (const auto& params : vector_param_sets()) {
          test::check_spmm_twice<float>(rt(), name, m, k, forced("csr_vector", params, transpose), next_seed());
          test::check_spmm_twice<double>(rt(), name, m, k, forced("csr_vector", params, transpose), next_seed());
        }
      }
    }
  }
}

TEST_F(RsSpmmGpu, AnInfInBRowZeroReachesOnlyTheRowThatHoldsColumnZero) {
  for (const auto& params : vector_param_sets()) {
    test::check_inf_in_b_row0_stays_in_its_row<float>(rt(), forced("csr_vector", params, false), next_seed());
    test::check_inf_in_b_row0_stays_in_its_row<double>(rt(), forced("csr_vector", params, false), next_seed());
  }
  test::check_inf_in_b_row0_stays_in_its_row<float>(rt(), forced("rs", {{"threshold", 8}}, false), next_seed());
}

TEST_F(RsSpmmGpu, PaddedLeadingDimensions) {
  // ld = k + 1 forbids vectors (the planner falls back to scalar); ld = k + 4 keeps them.
  const Csr<double> m = generate::from_spec("clustered:2048:24:0.6:16", 11);
  for (int64_t pad : {1, 4}) {
    for (bool transpose : {false, true}) {
      test::check_spmm_twice<float>(rt(), "clustered", m, 128, forced("rs", {{"panel_width", 64}, {"threshold", 2}}, transpose), next_seed(), pad);
      test::check_spmm_twice<double>(rt(), "clustered", m, 100, forced("csr_vector", nlohmann::json::object(), transpose), next_seed(), pad);
    }
  }
}

TEST_F(RsSpmmGpu, AutomaticChoiceOnGeneratedAndSharedMatrices) {
  auto all = matrices();
  for (const auto& file : test::shared_matrix_files()) {
    for (const char* name : {"cora.mtx", "bcsstk13.mtx", "wiki-Vote.mtx", "cyl6.mtx"})
      if (file.find(name) != std::string::npos) all.emplace_back(name, io::read_csr<double>(file));
  }
  for (const auto& [name, m] : all) {
    for (int32_t k : {32, 128}) {
      for (bool transpose : {false, true}) {
        test::check_spmm_twice<float>(rt(), name, m, k, forced("", nlohmann::json::object(), transpose), next_seed());
        test::check_spmm_twice<double>(rt(), name, m, k, forced("", nlohmann::json::object(), transpose), next_seed());
      }
    }
  }
}

TEST_F(RsSpmmGpu, NewValuesRebuildTheSplit) {
  test::check_new_values_follow(rt(), cast<float>(generate::from_spec("clustered:2048:24:0.6:16", 4)), 64,
                                forced("rs", {{"panel_width", 64}, {"threshold", 2}}, false), 2, next_seed());
}

TEST_F(RsSpmmGpu, EmptyMatrixGivesZerosForEveryVariant) {
  for (const char* v : {"rs", "csr_vector"})
    for (bool transpose : {false, true}) test::expect_empty_gives_zeros(rt(), forced(v, nlohmann::json::object(), transpose));
}

TEST_F(RsSpmmGpu, InvalidForcedParametersAreRejected) {
  const Csr<float> a = cast<float>(generate::uniform(64, 64, 4, 1));
  DeviceCsr<float> da(rt().context(), a);
  DeviceDense<float> db(rt().context(), 64, 7), dc(rt().context(), 64, 7);
  EXPECT_THROW(rt().spmm(da, db, dc, forced("csr_vector", {{"vec_width", 4}}, false)), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced("rs", {{"panel_width", 1 << 20}}, false)), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced("rs", {{"cf_v", 3}}, false)), InvalidInputError);
}

}  // namespace
}  // namespace sparsejit
