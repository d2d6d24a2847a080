// SpGEMM's numeric phase by positions without a GPU: the task list (formats/spgemm_positions)
// on hand-built and generated pairs — every entry of A in exactly one task, in order, each
// task's C entries its rows', the modes and the zeroed rows as the header says — then the
// tasks carried out on the host as the template does (positions by binary search, sums per
// task) against the reference product; the plan (plan/spgemm_reuse): lanes, task sizes,
// position bytes and the memory checks; refusals naming the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "formats/spgemm_positions.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using formats::ReuseMode;
using formats::ReuseTask;
using formats::ReuseTasks;

Csr<double> csr(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& columns) {
  return test::csr_of_rows(rows, cols, columns);
}

// The header's promises, checked on any pair.
void expect_well_formed(const ReuseTasks& t, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c,
                        int64_t task_products, int64_t shared_entries, int64_t wide_entries) {
  ASSERT_EQ(t.product_at.size(), a.col_idx.size() + 1);
  EXPECT_EQ(t.product_at.front(), 0);
  for (std::size_t e = 0; e < a.col_idx.size(); ++e) {
    const int32_t k = a.col_idx[e];
    EXPECT_EQ(t.product_at[e + 1] - t.product_at[e], b.row_ptr[std::size_t(k) + 1] - b.row_ptr[std::size_t(k)]) << "entry " << e;
  }
  EXPECT_EQ(t.products, t.product_at.back());
  // Every entry of A in exactly one task; narrow tasks first, then those of wide rows.
  std::vector<int> owner(a.col_idx.size(), 0);
  int64_t widest = 0;
  std::vector<int32_t> zeroed;
  for (std::size_t i = 0; i < t.tasks.size(); ++i) {
    const ReuseTask& task = t.tasks[i];
    SCOPED_TRACE("task " + std::to_string(i));
    ASSERT_GE(task.e1, task.e0);
    ASSERT_LT(task.r0, task.r1);
    for (int32_t e = task.e0; e < task.e1; ++e) ++owner[std::size_t(e)];
    EXPECT_GE(task.e0, a.row_ptr[std::size_t(task.r0)]);
    EXPECT_LE(task.e1, a.row_ptr[std::size_t(task.r1)]);
    EXPECT_EQ(task.c0, c.row_ptr[std::size_t(task.r0)]);
    EXPECT_EQ(task.c_count, c.row_ptr[std::size_t(task.r1)] - c.row_ptr[std::size_t(task.r0)]);
    widest = std::max<int64_t>(widest, task.c_count);
    const bool narrow = int64_t(i) < t.narrow;
    const int64_t products = int64_t(t.product_at[std::size_t(task.e1)]) - t.product_at[std::size_t(task.e0)];
    const int64_t run = std::max<int64_t>(task_products, 4 * int64_t(task.c_count));
    if (task.mode == ReuseMode::Store) {
      EXPECT_EQ(task.e0, a.row_ptr[std::size_t(task.r0)]) << "a Store task holds whole rows";
      EXPECT_EQ(task.e1, a.row_ptr[std::size_t(task.r1)]);
      EXPECT_LE(task.c_count, narrow ? shared_entries : wide_entries);
      EXPECT_LE(products, task.r1 - task.r0 > 1 ? task_products : 2 * run);
    } else {
      EXPECT_EQ(task.r1, task.r0 + 1) << "an adding task is part of one row";
      EXPECT_EQ(task.mode == ReuseMode::GlobalAdd, task.c_count > wide_entries);
      EXPECT_TRUE(task.mode != ReuseMode::GlobalAdd || narrow) << "GlobalAdd takes no shared sums";
      if (zeroed.empty() || zeroed.back() != task.c0) zeroed.push_back(task.c0);
    }
    EXPECT_TRUE(narrow || task.c_count > shared_entries) << "only rows wider than the narrow sums take the wide blocks";
  }
  for (std::size_t e = 0; e < owner.size(); ++e) ASSERT_EQ(owner[e], 1) << "entry " << e;
  EXPECT_EQ(t.widest, widest);
  std::vector<int32_t> listed;
  for (std::size_t i = 0; i < t.zero_ranges.size(); i += 2) listed.push_back(t.zero_ranges[i]);
  std::sort(listed.begin(), listed.end());
  std::sort(zeroed.begin(), zeroed.end());
  EXPECT_EQ(listed, zeroed);
}

// What templates/spgemm_positions.cu computes, on the host: each product's position in its
// task (binary search in C's sorted row), then each task's sums stored or added.
std::vector<double> run_tasks(const ReuseTasks& t, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c) {
  std::vector<double> values(c.col_idx.size(), std::nan(""));
  for (std::size_t i = 0; i < t.zero_ranges.size(); i += 2)
    std::fill_n(values.begin() + t.zero_ranges[i], t.zero_ranges[i + 1], 0.0);
  for (const ReuseTask& task : t.tasks) {
    std::vector<double> sums(std::size_t(task.c_count), 0.0);
    for (int32_t e = task.e0; e < task.e1; ++e) {
      const int32_t row = int32_t(std::upper_bound(a.row_ptr.begin() + task.r0, a.row_ptr.begin() + task.r1 + 1, e) -
                                  a.row_ptr.begin()) - 1;
      const auto lo = c.col_idx.begin() + c.row_ptr[std::size_t(row)], hi = c.col_idx.begin() + c.row_ptr[std::size_t(row) + 1];
      const int32_t k = a.col_idx[std::size_t(e)];
      for (int32_t f = b.row_ptr[std::size_t(k)]; f < b.row_ptr[std::size_t(k) + 1]; ++f) {
        const auto at = std::lower_bound(lo, hi, b.col_idx[std::size_t(f)]);
        EXPECT_TRUE(at != hi && *at == b.col_idx[std::size_t(f)]);
        sums[std::size_t((at - c.col_idx.begin()) - task.c0)] += a.values[std::size_t(e)] * b.values[std::size_t(f)];
      }
    }
    for (int32_t i = 0; i < task.c_count; ++i) {
      double& out = values[std::size_t(task.c0 + i)];
      out = task.mode == ReuseMode::Store ? sums[std::size_t(i)] : out + sums[std::size_t(i)];
    }
  }
  return values;
}

void expect_product(const Csr<double>& a, const Csr<double>& b, int64_t task_products, int64_t shared_entries,
                    int64_t wide_entries) {
  const Csr<double> c = reference::spgemm(a, b);
  const ReuseTasks t =
      formats::build_reuse_tasks(a.pattern(), b.pattern(), c.row_ptr.data(), task_products, shared_entries, wide_entries);
  expect_well_formed(t, a, b, c, task_products, shared_entries, wide_entries);
  const std::vector<double> got = run_tasks(t, a, b, c);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], c.values[i], 1e-9 * (1 + std::abs(c.values[i]))) << "entry " << i;
}

TEST(SpgemmPositions, TheHeadersExample) {
  // Rows of 3, 0, 225 and 4 products: B's rows 0-3 have 1, 2, 25 and 4 entries in distinct columns.
  const Csr<double> b = csr(4, 40, {{0}, {1, 2}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24},
                                    {30, 31, 32, 33}});
  const Csr<double> a = csr(4, 4, {{0, 1}, {}, {2, 2, 2, 2, 2, 2, 2, 2, 2}, {3}});
  const Csr<double> c = reference::spgemm(a, b);
  const ReuseTasks t = formats::build_reuse_tasks(a.pattern(), b.pattern(), c.row_ptr.data(), 8, 32, 32);
  ASSERT_EQ(t.tasks.size(), 5u);
  EXPECT_EQ(t.narrow, 5);
  EXPECT_EQ(t.tasks[0].mode, ReuseMode::Store);
  EXPECT_EQ(t.tasks[0].r0, 0);
  EXPECT_EQ(t.tasks[0].r1, 2);
  const int entries[] = {4, 4, 1};
  for (int i : {1, 2, 3}) {
    EXPECT_EQ(t.tasks[std::size_t(i)].mode, ReuseMode::SharedAdd);
    EXPECT_EQ(t.tasks[std::size_t(i)].e1 - t.tasks[std::size_t(i)].e0, entries[i - 1]);  // runs of 100 products
  }
  EXPECT_EQ(t.tasks[4].mode, ReuseMode::Store);
  EXPECT_EQ(t.zero_ranges, (std::vector<int32_t>{3, 25}));
  expect_product(a, b, 8, 32, 32);
  // Narrow sums of 16: row 2 takes the wide blocks, after the narrow tasks.
  const ReuseTasks wide = formats::build_reuse_tasks(a.pattern(), b.pattern(), c.row_ptr.data(), 8, 16, 32);
  EXPECT_EQ(wide.narrow, 2);
  EXPECT_EQ(wide.tasks.size(), 5u);
  EXPECT_EQ(wide.tasks[4].mode, ReuseMode::SharedAdd);
  expect_product(a, b, 8, 16, 32);
  // No shared sums hold its 25: runs of 8 products (an entry each) added to C directly.
  const ReuseTasks global = formats::build_reuse_tasks(a.pattern(), b.pattern(), c.row_ptr.data(), 8, 16, 16);
  EXPECT_EQ(global.tasks.size(), 11u);
  EXPECT_EQ(global.tasks[1].mode, ReuseMode::GlobalAdd);
  expect_product(a, b, 8, 16, 16);
}

TEST(SpgemmPositions, GeneratedPairsAreCoveredAndSumToTheProduct) {
  const Csr<double> power_law = generate::chung_lu(3000, 30000, 2.2, 7);
  const Csr<double> band = generate::banded(2000, 9, 40, 8);
  const Csr<double> rect_a = generate::uniform(700, 1200, 6, 9), rect_b = generate::uniform(1200, 500, 4, 10);
  for (int64_t task_products : {64, 1024})
    for (const auto& [shared_entries, wide_entries] : {std::pair<int64_t, int64_t>{32, 32}, {32, 256}, {8192, 54272}}) {
      SCOPED_TRACE("task_products " + std::to_string(task_products) + " shared_entries " + std::to_string(shared_entries) +
                   " wide_entries " + std::to_string(wide_entries));
      expect_product(power_law, power_law, task_products, shared_entries, wide_entries);
      expect_product(band, band, task_products, shared_entries, wide_entries);
      expect_product(rect_a, rect_b, task_products, shared_entries, wide_entries);
    }
}

TEST(SpgemmPositions, EmptyRowsAndEmptyOperands) {
  const Csr<double> a = csr(5, 3, {{}, {0, 2}, {}, {}, {1}});
  const Csr<double> b = csr(3, 4, {{1, 3}, {}, {0}});
  expect_product(a, b, 1, 1, 1);
  const Csr<double> empty = csr(3, 3, {{}, {}, {}});
  const Csr<double> c = reference::spgemm(empty, empty);
  const ReuseTasks t = formats::build_reuse_tasks(empty.pattern(), empty.pattern(), c.row_ptr.data(), 16, 16, 16);
  EXPECT_EQ(t.products, 0);
  expect_well_formed(t, empty, empty, c, 16, 16, 16);
}

TEST(SpgemmPositions, BadInputsAreRefusedNamingTheValue) {
  const Csr<double> a = csr(2, 2, {{0}, {1}});
  const Csr<double> c = reference::spgemm(a, a);
  const auto message = [&](int64_t task_products, int64_t shared_entries, const Csr<double>& b, int64_t wide_entries = 64) {
    try {
      formats::build_reuse_tasks(a.pattern(), b.pattern(), c.row_ptr.data(), task_products, shared_entries, wide_entries);
    } catch (const InvalidInputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(0, 8, a).find("task_products = 0"), std::string::npos);
  EXPECT_NE(message(8, -1, a).find("shared_entries = -1"), std::string::npos);
  EXPECT_NE(message(8, 8, csr(3, 2, {{0}, {1}, {}})).find("B has 3 rows"), std::string::npos);
  EXPECT_NE(message(8, 16, a, 8).find("wide_entries = 8 is below shared_entries = 16"), std::string::npos);
}

TEST(SpgemmReusePlan, LanesTaskSizesAndPositionBytes) {
  const plan::DeviceTarget h100;  // 132 multiprocessors
  // The blocks' kernel, forced (the plan takes it where entries do not fit).
  // 140 products per entry of A: a warp each; 51.5 M products: the largest tasks.
  plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(test::spgemm_features_of(51'500'000, 367'662, 36'692, 30'000), DType::F32, h100, {}, {},
                                                    PositionsKernel::Blocks);
  EXPECT_TRUE(p.by_positions) << p.why;
  EXPECT_EQ(p.group_lanes, 32);
  EXPECT_EQ(p.task_products, 16384);
  EXPECT_EQ(p.shared_entries, 8192);
  EXPECT_EQ(p.wide_entries, 54272);  // 227 KiB less 1024 staged entries of 12 bytes, in 1024s
  EXPECT_GE(p.bytes, 2 * 51'500'000LL);
  EXPECT_NE(p.why.find("2 bytes a product"), std::string::npos) << p.why;
  // 3 products per entry: groups of 4 lanes; a small product: the smallest tasks; f64 halves
  // the shared entries; a row of more than 65536 products takes 4-byte positions.
  p = plan::plan_spgemm_reuse(test::spgemm_features_of(30'000, 10'000, 2'000, 100'000), DType::F64, h100, {}, {}, PositionsKernel::Blocks);
  EXPECT_EQ(p.group_lanes, 4);
  EXPECT_EQ(p.task_products, 1024);
  EXPECT_EQ(p.shared_entries, 4096);
  EXPECT_EQ(p.wide_entries, 26624);
  EXPECT_GE(p.bytes, 4 * 30'000LL);
}

// Where no positions fit, the plan takes rows (4 bytes a row) and says why; a forced kernel of
// positions is declined instead (the variant again).
TEST(SpgemmReusePlan, PositionsThatDoNotFitLeaveRowsOrTheRecompute) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = test::spgemm_features_of(100'000'000, 1'000'000, 100'000, 1'000);
  const plan::SpgemmReusePlan fits = plan::plan_spgemm_reuse(f, DType::F32, h100, int64_t(80) << 30, int64_t(1) << 30);
  EXPECT_TRUE(fits.by_positions) << fits.why;
  EXPECT_EQ(fits.kernel, PositionsKernel::Warps);
  const plan::SpgemmReusePlan limited = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, int64_t(100) << 20);
  EXPECT_TRUE(limited.by_positions) << limited.why;
  EXPECT_EQ(limited.kernel, PositionsKernel::Rows);
  EXPECT_NE(limited.why.find("more than the memory limit of 104857600)"), std::string::npos) << limited.why;
  const plan::SpgemmReusePlan short_of_memory = plan::plan_spgemm_reuse(f, DType::F32, h100, int64_t(300) << 20, {});
  EXPECT_EQ(short_of_memory.kernel, PositionsKernel::Rows);
  EXPECT_NE(short_of_memory.why.find("more than half of the 314572800 free)"), std::string::npos) << short_of_memory.why;
  const plan::SpgemmReusePlan forced = plan::plan_spgemm_reuse(f, DType::F32, h100, int64_t(300) << 20, {}, PositionsKernel::Blocks);
  EXPECT_FALSE(forced.by_positions);
  EXPECT_EQ(forced.why.rfind("recompute: positions take up to ", 0), 0u) << forced.why;
}

}  // namespace
}  // namespace sparsejit
