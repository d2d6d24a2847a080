// The SpMM variants that split rows between lane groups, end to end on the GPU: csr_merge
// (nonzero-balanced ranges) and csr_rowsplit (a block of groups per row, A·B only), forced with
// several parameter sets, f32 and f64, A·B and Aᵀ·B, K = 1, 7, 32, 33, 100, 128, 512, on
// matrices whose rows stress the range boundaries: empty rows (also at both ends), one huge
// row among short ones, a few long rows, power-law rmat, uniform, rectangular both ways, and
// padded leading dimensions. Every call is checked against the CPU reference with fresh random
// values and C poisoned with NaN first (so a row no range writes, or a boundary row added onto
// garbage, shows); the second call on a handle must reuse the plan.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class SplitRowsGpu : public test::GpuSuite {};

// A CSR with the given row lengths, distinct sorted columns drawn at random, values 1 (the
// checks draw fresh values).
Csr<double> with_row_lengths(const std::vector<int32_t>& lengths, int32_t cols, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Csr<double> a;
  a.rows = int32_t(lengths.size());
  a.cols = cols;  // row_ptr starts as {0}
  std::vector<int32_t> all(static_cast<std::size_t>(cols));
  for (int32_t c = 0; c < cols; ++c) all[std::size_t(c)] = c;
  for (int32_t len : lengths) {
    std::shuffle(all.begin(), all.end(), rng);
    std::vector<int32_t> row(all.begin(), all.begin() + len);
    std::sort(row.begin(), row.end());
    a.col_idx.insert(a.col_idx.end(), row.begin(), row.end());
    a.row_ptr.push_back(int32_t(a.col_idx.size()));
  }
  a.values.assign(a.col_idx.size(), 1.0);
  return a;
}

// 3000 rows of 0..4 nonzeros (about a fifth empty, the first and last rows empty) with row 1234
// holding 5000 nonzeros: one range boundary after another falls inside the huge row.
Csr<double> one_huge_row() {
  std::vector<int32_t> lengths(3000);
  std::mt19937 rng(17);
  for (auto& len : lengths) len = int32_t(rng() % 5);
  lengths.front() = 0;
  lengths.back() = 0;
  lengths[1234] = 5000;
  return with_row_lengths(lengths, 6000, 3);
}

// Runs of empty rows between single-nonzero rows and rows longer than any range.
Csr<double> empty_runs() {
  std::vector<int32_t> lengths;
  for (int i = 0; i < 400; ++i) {
    lengths.push_back(i % 3 == 0 ? 1 : 0);
    if (i % 50 == 7) lengths.push_back(300);
  }
  return with_row_lengths(lengths, 700, 5);
}

std::vector<std::pair<std::string, Csr<double>>> matrices() {
  std::vector<std::pair<std::string, Csr<double>>> out;
  out.emplace_back("one huge row", one_huge_row());
  out.emplace_back("empty runs", empty_runs());
  out.emplace_back("128 x 2000 long rows", generate::uniform(128, 4096, 2000, 9));
  out.emplace_back("rmat", generate::from_spec("rmat:4096:40000", 7));
  out.emplace_back("uniform", generate::from_spec("uniform:3000:9", 7));
  out.emplace_back("uniform 2500x300", generate::uniform(2500, 300, 6, 3));
  out.emplace_back("rmat-like 900x2500", generate::rmat(900, 20000, 11));
  return out;
}

Options forced(nlohmann::json params, bool transpose, const char* variant = "csr_merge") {
  Options o;
  o.variant = variant;
  o.params = std::move(params);
  o.transpose_a = transpose;
  return o;
}

// Ranges shorter than a chunk, equal to it, and long; every lane count; unroll 1 (the single
// tail path only), 2, 4 and 8; more vectors per lane; small blocks.
std::vector<nlohmann::json> param_sets() {
  return {nlohmann::json::object(),
          {{"nnz_per_group", 1}, {"lanes", 8}, {"unroll", 1}},
          {{"nnz_per_group", 5}, {"lanes", 16}, {"unroll", 2}, {"block_threads", 64}},
          {{"nnz_per_group", 32}, {"lanes", 32}, {"unroll", 8}},
          {{"nnz_per_group", 256}, {"lanes", 8}, {"cf", 2}, {"unroll", 4}, {"block_threads", 256}}};
}

const int32_t kWidths[] = {1, 7, 32, 33, 100, 128, 512};

TEST_F(SplitRowsGpu, MergeEveryParameterSetTypeKAndDirection) {
  for (const auto& [name, m] : matrices()) {
    for (int32_t k : kWidths) {
      for (bool transpose : {false, true}) {
        for (const auto& params : param_sets()) {
          test::check_spmm_twice<float>(rt(), name, m, k, forced(params, transpose), next_seed());
          test::check_spmm_twice<double>(rt(), name, m, k, forced(params, transpose), next_seed());
        }
      }
    }
  }
}

// Two groups and scalar walks, the most groups with the most vectors per lane, and a middle
// shape with the longest read-ahead, a row a block; then row tiles: the wide-K tile (16 rows),
// 2 rows of 1024 threads, and 4 rows with two vectors a lane (tiles past the last row when
// the row count is not a multiple).
std::vector<nlohmann::json> rowsplit_param_sets() {
  return {nlohmann::json::object(),
          {{"parts", 2}, {"lanes", 8}, {"unroll", 1}},
          {{"parts", 16}, {"lanes", 32}, {"cf", 4}, {"unroll", 2}},
          {{"parts", 4}, {"lanes", 16}, {"cf", 2}, {"unroll", 8}},
          {{"rows", 16}, {"parts", 4}, {"lanes", 16}, {"cf", 1}, {"unroll", 8}},
          {{"rows", 2}, {"parts", 16}, {"lanes", 32}, {"cf", 1}, {"unroll", 2}},
          {{"rows", 4}, {"parts", 2}, {"lanes", 8}, {"cf", 2}, {"unroll", 4}}};
}

TEST_F(SplitRowsGpu, AnInfInBRowZeroReachesOnlyTheRowThatHoldsColumnZero) {
  for (const auto& params : param_sets()) {
    test::check_inf_in_b_row0_stays_in_its_row<float>(rt(), forced(params, false), next_seed());
    test::check_inf_in_b_row0_stays_in_its_row<double>(rt(), forced(params, false), next_seed());
  }
  for (const auto& params : rowsplit_param_sets())
    test::check_inf_in_b_row0_stays_in_its_row<float>(rt(), forced(params, false, "csr_rowsplit"), next_seed());
}

TEST_F(SplitRowsGpu, RowsplitEveryParameterSetTypeAndK) {
  auto shapes = matrices();
  shapes.emplace_back("pruned layer 64 x 576 at 50%", generate::uniform(64, 576, 288, 13));
  // 250 rows: the last of 16 row tiles holds 10 rows.
  shapes.emplace_back("pruned layer 250 x 2304 at 10%", generate::uniform(250, 2304, 230, 17));
  for (const auto& [name, m] : shapes) {
    for (int32_t k : kWidths) {
      for (const auto& params : rowsplit_param_sets()) {
        test::check_spmm_twice<float>(rt(), name, m, k, forced(params, false, "csr_rowsplit"), next_seed());
        test::check_spmm_twice<double>(rt(), name, m, k, forced(params, false, "csr_rowsplit"), next_seed());
      }
    }
  }
}

TEST_F(SplitRowsGpu, PaddedLeadingDimensions) {
  // ld = k + 1 forbids vectors (the planner falls back to scalar); ld = k + 4 keeps them.
  const Csr<double> m = one_huge_row();
  for (int64_t pad : {1, 4}) {
    for (bool transpose : {false, true}) {
      test::check_spmm_twice<float>(rt(), "one huge row", m, 128, forced({{"nnz_per_group", 64}}, transpose), next_seed(), pad);
      test::check_spmm_twice<double>(rt(), "one huge row", m, 100, forced(nlohmann::json::object(), transpose), next_seed(), pad);
    }
    test::check_spmm_twice<float>(rt(), "one huge row", m, 128, forced({{"parts", 8}}, false, "csr_rowsplit"), next_seed(), pad);
    test::check_spmm_twice<double>(rt(), "one huge row", m, 100, forced(nlohmann::json::object(), false, "csr_rowsplit"), next_seed(), pad);
  }
}

TEST_F(SplitRowsGpu, NewValuesAreUsedByTheSamePlan) {
  test::check_new_values_follow(rt(), cast<float>(one_huge_row()), 64, forced({{"nnz_per_group", 16}}, false), 2, next_seed());
}

TEST_F(SplitRowsGpu, MergeEmptyMatrixGivesZeros) {
  for (bool transpose : {false, true}) test::expect_empty_gives_zeros(rt(), forced(nlohmann::json::object(), transpose));
}

TEST_F(SplitRowsGpu, InvalidForcedParametersAreRejected) {
  const Csr<float> a = cast<float>(generate::uniform(64, 64, 4, 1));
  DeviceCsr<float> da(rt().context(), a);
  DeviceDense<float> db(rt().context(), 64, 7), dc(rt().context(), 64, 7);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"vec_width", 4}}, false)), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"nnz_per_group", 0}}, false)), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"lanes", 12}}, false)), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"parts", 3}}, false, "csr_rowsplit")), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"rows", 3}}, false, "csr_rowsplit")), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced({{"rows", 16}, {"parts", 4}, {"lanes", 32}}, false, "csr_rowsplit")), InvalidInputError);
  EXPECT_THROW(rt().spmm(da, db, dc, forced(nlohmann::json::object(), true, "csr_rowsplit")), UnsupportedError);
}

}  // namespace
}  // namespace sparsejit
