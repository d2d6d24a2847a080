// csr_pipelined end to end on the GPU: forced with every pair count (1, 2, 4 a lane), unroll 1,
// 8, 16 and 32 and every lane count, f32 and f64, K = 1, 7, 32, 33, 100, 128, 512,
// on matrices whose rows end inside a chunk, span many chunks, or are empty next to long ones
// in the same warp (the walk is warp-uniform), against the CPU reference with fresh random values
// and C poisoned with NaN first; the second call on a handle must reuse the plan.
#include <gtest/gtest.h>

#include <random>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class CsrPipelinedGpu : public test::GpuSuite {};

// Rows of 0 to 300 nonzeros drawn at random, so one warp's groups walk rows of very different
// lengths (and the last rows of the matrix leave lanes with no row).
Csr<double> ragged_rows(int32_t rows, int32_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Csr<double> a;
  a.rows = rows;
  a.cols = cols;
  for (int32_t r = 0; r < rows; ++r) {
    const int32_t length = r % 5 == 0 ? 0 : int32_t(rng() % 301);
    int32_t col = int32_t(rng() % 3);
    for (int32_t i = 0; i < length && col < cols; ++i, col += 1 + int32_t(rng() % 3)) {
      a.col_idx.push_back(col);
      a.values.push_back(1.0);
    }
    a.row_ptr.push_back(int32_t(a.col_idx.size()));
  }
  return a;
}

std::vector<std::pair<std::string, Csr<double>>> matrices() {
  std::vector<std::pair<std::string, Csr<double>>> out;
  out.emplace_back("ragged 203 x 1000", ragged_rows(203, 1000, 3));
  out.emplace_back("pruned layer 250 x 2304 at 10%", generate::uniform(250, 2304, 230, 17));
  out.emplace_back("pruned layer 64 x 576 at 50%", generate::uniform(64, 576, 288, 13));
  out.emplace_back("rmat", generate::from_spec("rmat:4096:40000", 7));
  out.emplace_back("uniform 2500x300", generate::uniform(2500, 300, 6, 3));
  return out;
}

const int32_t kWidths[] = {1, 7, 32, 33, 100, 128, 512};

Options forced(nlohmann::json params) {
  Options o;
  o.variant = "csr_pipelined";
  o.params = std::move(params);
  return o;
}

// The planner's sets, every pair count and lane count, unroll from 1 (one load at a time) to
// 32, and small blocks.
std::vector<nlohmann::json> param_sets() {
  return {nlohmann::json::object(),
          {{"lanes_per_row", 32}, {"pairs_per_lane", 1}, {"unroll", 16}},
          {{"lanes_per_row", 16}, {"pairs_per_lane", 4}, {"unroll", 32}},
          {{"lanes_per_row", 8}, {"pairs_per_lane", 2}, {"unroll", 1}, {"block_threads", 64}},
          {{"lanes_per_row", 32}, {"pairs_per_lane", 2}, {"unroll", 8}, {"block_threads", 128}}};
}

TEST_F(CsrPipelinedGpu, EveryParameterSetTypeAndK) {
  for (const auto& [name, m] : matrices()) {
    for (int32_t k : kWidths) {
      for (const auto& params : param_sets()) {
        test::check_spmm_twice<float>(rt(), name, m, k, forced(params), next_seed());
        test::check_spmm_twice<double>(rt(), name, m, k, forced(params), next_seed());
      }
    }
  }
}

TEST_F(CsrPipelinedGpu, AnInfInBRowZeroReachesOnlyTheRowThatHoldsColumnZero) {
  for (const auto& params : param_sets()) {
    test::check_inf_in_b_row0_stays_in_its_row<float>(rt(), forced(params), next_seed());
    test::check_inf_in_b_row0_stays_in_its_row<double>(rt(), forced(params), next_seed());
  }
}

TEST_F(CsrPipelinedGpu, PaddedLeadingDimensions) {
  // ld = k + 1 forbids vectors (the planner falls back to scalar); ld = k + 4 keeps them.
  const Csr<double> m = ragged_rows(203, 1000, 5);
  for (int64_t pad : {1, 4}) {
    test::check_spmm_twice<float>(rt(), "ragged", m, 128, forced(nlohmann::json::object()), next_seed(), pad);
    test::check_spmm_twice<double>(rt(), "ragged", m, 100, forced({{"lanes_per_row", 16}}), next_seed(), pad);
  }
}

TEST_F(CsrPipelinedGpu, NewValuesAreUsedByTheSamePlan) {
  test::check_new_values_follow(rt(), cast<float>(ragged_rows(203, 1000, 7)), 64, forced(nlohmann::json::object()), 2, next_seed());
}

TEST_F(CsrPipelinedGpu, EmptyMatrixGivesZeros) { test::expect_empty_gives_zeros(rt(), forced(nlohmann::json::object())); }

TEST_F(CsrPipelinedGpu, InvalidForcedParametersAndTransposeAreRejected) {
  const Csr<float> a = cast<float>(generate::uniform(64, 64, 4, 1));
  DeviceCsr<float> da(rt().context(), a);
  DeviceDense<float> db(rt().context(), 64, 7), dc(rt().context(), 64, 7);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"vec_width", 4}})), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"lanes_per_row", 8}, {"pairs_per_lane", 1}, {"unroll", 16}})), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"block_threads", 512}})), InvalidInputError);
  Options transposed = forced(nlohmann::json::object());
  transposed.transpose_a = true;
  EXPECT_THROW(rt().spmm(da, db, dc, transposed), UnsupportedError);
}

}  // namespace
}  // namespace sparsejit
