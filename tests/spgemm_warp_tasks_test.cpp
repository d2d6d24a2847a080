// SpGEMM's numeric phase by positions a warp a task, without a GPU: the work list
// (formats/spgemm_warp_tasks) on hand-built and generated pairs — every product of A·B in
// exactly one segment, every C entry in exactly one task's range (or one group's), ranges
// within the region, slices and parts as the header says, tasks sorted by products, steps
// numbered — then the tasks carried out on the host as the template does (positions by
// bisection, sums per task, parts added into their group's sums) against the reference
// product; the plan's choice of it (plan/spgemm_reuse), its regions, task sizes and memory
// checks; refusals naming the value.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "formats/spgemm_warp_tasks.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using formats::WarpTask;
using formats::WarpTasks;

Csr<double> csr(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& columns, uint64_t seed) {
  Csr<double> m = test::csr_of_rows(rows, cols, columns);
  generate::fill_random(m.values, seed);
  return m;
}

int32_t row_of(const Csr<double>& m, int32_t entry) {
  return int32_t(std::upper_bound(m.row_ptr.begin(), m.row_ptr.end(), entry) - m.row_ptr.begin()) - 1;
}

// The header's promises, checked on any pair.
void expect_well_formed(const WarpTasks& t, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c,
                        int64_t task_products, int64_t region_entries) {
  ASSERT_EQ(t.segment_at.size(), t.segment_b.size() + 1);
  ASSERT_EQ(t.segment_e.size(), t.segment_b.size());
  EXPECT_EQ(t.segment_at.front(), 0);
  EXPECT_EQ(t.products, t.segment_at.back());
  // Every product (entry e of A, entry f of B's row a_col[e]) in exactly one segment: product
  // first[e] + f - (the row's first entry) counted.
  std::vector<int64_t> first(a.col_idx.size() + 1, 0);
  for (std::size_t e = 0; e < a.col_idx.size(); ++e) {
    const int32_t k = a.col_idx[e];
    first[e + 1] = first[e] + b.row_ptr[std::size_t(k) + 1] - b.row_ptr[std::size_t(k)];
  }
  const int64_t products = first.back();
  std::vector<int> covered(std::size_t(products), 0);
  for (int64_t s = 0; s < t.segments(); ++s) {
    const int32_t e = t.segment_e[std::size_t(s)], length = t.segment_at[std::size_t(s) + 1] - t.segment_at[std::size_t(s)];
    ASSERT_GE(length, 1) << "segment " << s;
    const int32_t k = a.col_idx[std::size_t(e)];
    ASSERT_GE(t.segment_b[std::size_t(s)], b.row_ptr[std::size_t(k)]);
    ASSERT_LE(t.segment_b[std::size_t(s)] + length, b.row_ptr[std::size_t(k) + 1]) << "segment " << s << " past B's row " << k;
    for (int32_t f = t.segment_b[std::size_t(s)]; f < t.segment_b[std::size_t(s)] + length; ++f)
      ++covered[std::size_t(first[std::size_t(e)] + f - b.row_ptr[std::size_t(k)])];
  }
  for (std::size_t p = 0; p < covered.size(); ++p) ASSERT_EQ(covered[p], 1) << "product " << p;
  EXPECT_EQ(t.products, products);
  // Tasks: consecutive segments of one task's rows, sorted by products; each C entry in one
  // range (a group's parts share theirs).
  std::vector<int> owner(c.col_idx.size(), 0);
  std::map<int32_t, std::vector<const WarpTask*>> groups;
  int64_t widest = 0, previous = t.products;
  for (std::size_t i = 0; i < t.tasks.size(); ++i) {
    const WarpTask& task = t.tasks[i];
    SCOPED_TRACE("task " + std::to_string(i));
    ASSERT_LT(task.s0, task.s1);
    ASSERT_GE(task.c_count, 1);
    EXPECT_LE(task.c_count, region_entries);
    widest = std::max<int64_t>(widest, task.c_count);
    EXPECT_LE(t.task_products(task), previous) << "tasks are sorted by products, most first";
    previous = t.task_products(task);
    const int32_t first_row = row_of(c, task.c0), last_row = row_of(c, task.c0 + task.c_count - 1);
    for (int32_t s = task.s0; s < task.s1; ++s) {
      const int32_t r = row_of(a, t.segment_e[std::size_t(s)]);
      EXPECT_TRUE(r >= first_row && r <= last_row) << "segment " << s << " of row " << r;
    }
    if (first_row != last_row) {
      EXPECT_EQ(task.c0, c.row_ptr[std::size_t(first_row)]) << "a task of several rows holds them whole";
      EXPECT_EQ(task.c0 + task.c_count, c.row_ptr[std::size_t(last_row) + 1]);
    }
    if (task.parts == 1) {
      EXPECT_TRUE(t.task_products(task) <= 2 * task_products || t.task_products(task) <= 2 * task.c_count) << t.task_products(task);
      for (int32_t j = task.c0; j < task.c0 + task.c_count; ++j) ++owner[std::size_t(j)];
    } else {
      groups[task.group].push_back(&task);
    }
  }
  EXPECT_EQ(t.widest, widest);
  EXPECT_EQ(int64_t(groups.size()), t.groups());
  int64_t scratch = 0;
  for (const auto& [group, parts] : groups) {
    SCOPED_TRACE("group " + std::to_string(group));
    ASSERT_EQ(int64_t(parts.size()), parts.front()->parts);
    std::vector<int> part_seen(parts.size(), 0);
    int64_t group_products = 0;
    for (const WarpTask* part : parts) {
      EXPECT_EQ(part->c0, parts.front()->c0);
      EXPECT_EQ(part->c_count, parts.front()->c_count);
      ++part_seen[std::size_t(part->part)];
      group_products += t.task_products(*part);
    }
    EXPECT_EQ(part_seen, std::vector<int>(parts.size(), 1));
    EXPECT_GT(group_products, 2 * task_products) << "only a task of more than two tasks' products is parted";
    const int64_t part_products = std::max<int64_t>(task_products, parts.front()->c_count);
    EXPECT_EQ(int64_t(parts.size()), (group_products + part_products - 1) / part_products);
    for (const WarpTask* part : parts) EXPECT_LE(t.task_products(*part), (group_products + int64_t(parts.size()) - 1) / int64_t(parts.size()));
    for (int32_t j = parts.front()->c0; j < parts.front()->c0 + parts.front()->c_count; ++j) ++owner[std::size_t(j)];
    scratch += parts.front()->c_count;
  }
  EXPECT_EQ(t.scratch_entries, scratch);
  std::vector<int32_t> firsts;  // each group's partials follow the one before
  for (const auto& [group, parts] : groups) firsts.push_back(t.group_scratch[std::size_t(group)]);
  for (std::size_t g = 0; g + 1 < firsts.size(); ++g) EXPECT_EQ(firsts[g + 1] - firsts[g], groups[int32_t(g)].front()->c_count);
  for (std::size_t j = 0; j < owner.size(); ++j) ASSERT_EQ(owner[j], 1) << "C entry " << j;
  // Steps: numbered in task order, a round of p products ceil(p / 32) of them.
  int64_t steps = 0;
  for (const WarpTask& task : t.tasks) {
    EXPECT_EQ(task.step_base, steps);
    for (int32_t s = task.s0; s < task.s1; s += 32) {
      const int32_t end = std::min(s + 32, task.s1);
      steps += (t.segment_at[std::size_t(end)] - t.segment_at[std::size_t(s)] + 31) / 32;
    }
    EXPECT_EQ(t.task_steps(task), steps - task.step_base);
  }
  EXPECT_EQ(t.steps, steps);
}

// What templates/spgemm_warp_positions.cu computes, on the host: each product's place in its task's
// range (bisection in C's sorted row), the task's sums stored, or a part's added into its
// group's, which are stored once every part has added.
std::vector<double> run_tasks(const WarpTasks& t, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c) {
  std::vector<double> values(c.col_idx.size(), std::nan(""));
  std::vector<double> scratch(std::size_t(t.scratch_entries), 0.0);  // zero, as the device's start
  int64_t misplaced = 0;  // products whose column is not in their row, or outside their task's range
  for (const WarpTask& task : t.tasks) {
    std::vector<double> sums(std::size_t(task.c_count), 0.0);
    for (int32_t s = task.s0; s < task.s1; ++s) {
      const int32_t e = t.segment_e[std::size_t(s)], row = row_of(a, e);
      const auto lo = c.col_idx.begin() + c.row_ptr[std::size_t(row)], hi = c.col_idx.begin() + c.row_ptr[std::size_t(row) + 1];
      for (int32_t f = t.segment_b[std::size_t(s)]; f < t.segment_b[std::size_t(s)] + t.segment_at[std::size_t(s) + 1] - t.segment_at[std::size_t(s)]; ++f) {
        const auto at = std::lower_bound(lo, hi, b.col_idx[std::size_t(f)]);
        const int64_t place = (at - c.col_idx.begin()) - task.c0;
        if (at == hi || *at != b.col_idx[std::size_t(f)] || place < 0 || place >= task.c_count) {
          ++misplaced;
          continue;
        }
        sums[std::size_t(place)] += a.values[std::size_t(e)] * b.values[std::size_t(f)];
      }
    }
    if (task.parts == 1) {
      std::copy(sums.begin(), sums.end(), values.begin() + task.c0);
    } else {
      for (int32_t i = 0; i < task.c_count; ++i) scratch[std::size_t(t.group_scratch[std::size_t(task.group)] + i)] += sums[std::size_t(i)];
    }
  }
  for (const WarpTask& task : t.tasks)
    if (task.parts > 1 && task.part == 0)
      std::copy_n(scratch.begin() + t.group_scratch[std::size_t(task.group)], task.c_count, values.begin() + task.c0);
  EXPECT_EQ(misplaced, 0);
  return values;
}

WarpTasks expect_product(const Csr<double>& a, const Csr<double>& b, const Csr<double>& c, int64_t task_products,
                          int64_t region_entries) {
  WarpTasks t = formats::build_warp_tasks(a.pattern(), b.pattern(), c.pattern(), task_products, region_entries);
  expect_well_formed(t, a, b, c, task_products, region_entries);
  const std::vector<double> got = run_tasks(t, a, b, c);
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], c.values[i], 1e-9 * (1 + std::abs(c.values[i]))) << "entry " << i;
  return t;
}

WarpTasks expect_product(const Csr<double>& a, const Csr<double>& b, int64_t task_products, int64_t region_entries) {
  return expect_product(a, b, reference::spgemm(a, b), task_products, region_entries);
}

// The header's example: B's rows are the even columns 0-78, the odd columns 1-79 and the
// columns 60-99; A's one row takes each once, so C's row has 100 entries.
Csr<double> example_b(uint64_t seed) {
  std::vector<int32_t> even, odd, high;
  for (int32_t j = 0; j < 80; j += 2) even.push_back(j);
  for (int32_t j = 1; j < 80; j += 2) odd.push_back(j);
  for (int32_t j = 60; j < 100; ++j) high.push_back(j);
  return csr(3, 100, {even, odd, high}, seed);
}

TEST(SpgemmWarpTasks, TheHeadersExample) {
  const uint64_t seed = test::fresh_seed();
  const Csr<double> a = csr(1, 3, {{0, 1, 2}}, seed), b = example_b(seed + 1);
  // A region of 64: two slices of 50 entries (columns 0-49 and 50-99).
  WarpTasks t = expect_product(a, b, 1000, 64);
  ASSERT_EQ(t.tasks.size(), 2u);
  const WarpTask& high = t.tasks[0];  // 70 products: sorted first
  const WarpTask& low = t.tasks[1];
  EXPECT_EQ(high.c0, 50);
  EXPECT_EQ(low.c0, 0);
  EXPECT_EQ(low.c_count, 50);
  EXPECT_EQ(high.c_count, 50);
  EXPECT_EQ(low.s1 - low.s0, 2);    // the evens' and the odds' first 25 each
  EXPECT_EQ(high.s1 - high.s0, 3);  // 15, 15 and 40
  EXPECT_EQ(t.task_products(low), 50);
  EXPECT_EQ(t.task_products(high), 70);
  EXPECT_EQ(t.groups(), 0);
  // A region of 128: the row is one task of 120 products over three whole B rows.
  t = expect_product(a, b, 1000, 128);
  ASSERT_EQ(t.tasks.size(), 1u);
  EXPECT_EQ(t.tasks[0].s1 - t.tasks[0].s0, 3);
  // Tasks of 20 products: both slices have more than 40, but a part takes at least its 50
  // sums' products: the first slice (50) stays whole, the second (70) is cut into two parts of
  // 35 over one group's 50 sums.
  t = expect_product(a, b, 20, 64);
  EXPECT_EQ(t.groups(), 1);
  ASSERT_EQ(t.tasks.size(), 3u);
  EXPECT_EQ(t.task_products(t.tasks[0]), 50);
  EXPECT_EQ(t.task_products(t.tasks[1]), 35);
  EXPECT_EQ(t.tasks[1].parts, 2);
  EXPECT_EQ(t.scratch_entries, 50);
}

// The runtime's form (C's row offsets and a gatherer of columns): it asks once, for the first
// place of every slice of every sliced row, and builds what the pattern form builds; a
// gatherer that answers with another count is refused naming both.
TEST(SpgemmWarpTasks, CsColumnsAreAskedOnlyWhereSlicesBegin) {
  const uint64_t seed = test::fresh_seed();
  const Csr<double> a = csr(3, 3, {{0, 1, 2}, {0}, {0, 1, 2}}, seed), b = example_b(seed + 1);
  const Csr<double> c = reference::spgemm(a, b);  // rows of 100, 40 and 100 entries
  std::vector<std::vector<int32_t>> asked;
  const auto columns_at = [&](const std::vector<int32_t>& places) {
    asked.push_back(places);
    std::vector<int32_t> columns;
    for (int32_t p : places) columns.push_back(c.col_idx[std::size_t(p)]);
    return columns;
  };
  const WarpTasks t = formats::build_warp_tasks(a.pattern(), b.pattern(), {c.rows, c.cols, c.row_ptr.data()}, columns_at, 1000, 64);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0], (std::vector<int32_t>{0, 50, 140, 190}));  // row 1 (40 entries) is not sliced
  const WarpTasks want = formats::build_warp_tasks(a.pattern(), b.pattern(), c.pattern(), 1000, 64);
  EXPECT_EQ(t.segment_b, want.segment_b);
  EXPECT_EQ(t.segment_e, want.segment_e);
  EXPECT_EQ(t.segment_at, want.segment_at);
  ASSERT_EQ(t.tasks.size(), want.tasks.size());
  for (std::size_t i = 0; i < t.tasks.size(); ++i) EXPECT_EQ(t.tasks[i].c0, want.tasks[i].c0) << "task " << i;
  const std::string refused = test::invalid_input_message([&] {
    formats::build_warp_tasks(a.pattern(), b.pattern(), {c.rows, c.cols, c.row_ptr.data()},
                              [](const std::vector<int32_t>&) { return std::vector<int32_t>{7}; }, 1000, 64);
  });
  EXPECT_NE(refused.find("1 columns for 4 places"), std::string::npos) << refused;
}

// 3000 entries of A on one row of C of 8 entries (B's rows {0} or {0, j}): 4500 products, cut
// into 225 parts of 20 over one group of 8 sums.
TEST(SpgemmWarpTasks, ManyProductsOnFewEntriesAreCutIntoParts) {
  const uint64_t seed = test::fresh_seed();
  auto [a, b] = test::hot_entries(1, 3000);
  generate::fill_random(a.values, seed);
  generate::fill_random(b.values, seed + 1);
  const WarpTasks t = expect_product(a, b, 20, 1024);
  EXPECT_EQ(t.groups(), 1);
  EXPECT_EQ(t.tasks.size(), 225u);
  EXPECT_EQ(t.scratch_entries, 8);
}

TEST(SpgemmWarpTasks, RowsAreGroupedWithinTheRegionAndTheTaskProducts) {
  const uint64_t seed = test::fresh_seed();
  // Rows of 2 entries and 4 products (columns 0-3), then an empty row, then the same: grouped
  // while both bounds hold.
  const Csr<double> b = csr(2, 4, {{0, 1}, {2, 3}}, seed);
  const Csr<double> a = csr(5, 2, {{0, 1}, {}, {0, 1}, {0, 1}, {1}}, seed + 1);
  WarpTasks t = expect_product(a, b, 8, 100);  // rows 0 and 2 (8 products), rows 3 and 4 (6)
  ASSERT_EQ(t.tasks.size(), 2u);
  EXPECT_EQ(t.tasks[0].c0, 0);
  EXPECT_EQ(t.tasks[0].c_count, 8);
  t = expect_product(a, b, 100, 8);  // the same cut by entries
  ASSERT_EQ(t.tasks.size(), 2u);
  EXPECT_EQ(t.tasks[1].c_count, 6);
  t = expect_product(a, b, 100, 100);  // everything in one
  ASSERT_EQ(t.tasks.size(), 1u);
  EXPECT_EQ(t.tasks[0].c_count, 14);
}

TEST(SpgemmWarpTasks, GeneratedPairsAreCoveredAndSumToTheProduct) {
  const uint64_t seed = test::fresh_seed();
  Csr<double> power_law = generate::chung_lu(2000, 16000, 2.2, seed);
  Csr<double> band = generate::banded(2000, 9, 40, seed + 1);
  Csr<double> rect_a = generate::uniform(700, 1200, 6, seed + 2), rect_b = generate::uniform(1200, 500, 4, seed + 3);
  for (Csr<double>* m : {&power_law, &band, &rect_a, &rect_b}) generate::fill_random(m->values, seed + 4);
  const Csr<double> power_law_c = reference::spgemm(power_law, power_law), band_c = reference::spgemm(band, band);
  const Csr<double> rect_c = reference::spgemm(rect_a, rect_b);
  for (int64_t task_products : {16, 1024, 8192})
    for (int64_t region_entries : {1, 32, 1024, 2048}) {
      SCOPED_TRACE("task_products " + std::to_string(task_products) + " region_entries " + std::to_string(region_entries));
      // A region of one entry makes a task of each of C's entries: the band's and the
      // rectangle's are enough of those.
      if (region_entries > 1) expect_product(power_law, power_law, power_law_c, task_products, region_entries);
      expect_product(band, band, band_c, task_products, region_entries);
      expect_product(rect_a, rect_b, rect_c, task_products, region_entries);
    }
}

// B's rows shuffled and with repeated columns (summed): a slice's entries of a row are then
// runs of consecutive entries, found one by one.
TEST(SpgemmWarpTasks, UnsortedRowsWithRepeatedColumns) {
  const uint64_t seed = test::fresh_seed();
  Csr<double> b = test::shuffled_with_repeats(generate::uniform(400, 300, 12, seed), seed);
  generate::fill_random(b.values, seed + 1);
  Csr<double> a = generate::uniform(50, 400, 30, seed + 2);
  generate::fill_random(a.values, seed + 3);
  for (int64_t region_entries : {7, 64, 2048}) expect_product(a, b, 64, region_entries);
}

TEST(SpgemmWarpTasks, EmptyRowsAndEmptyOperands) {
  const uint64_t seed = test::fresh_seed();
  const Csr<double> a = csr(5, 3, {{}, {0, 2}, {}, {}, {1}}, seed);
  const Csr<double> b = csr(3, 4, {{1, 3}, {}, {0}}, seed + 1);
  expect_product(a, b, 1, 1);
  const Csr<double> empty = csr(3, 3, {{}, {}, {}}, seed);
  const WarpTasks t = expect_product(empty, empty, 16, 16);
  EXPECT_EQ(t.products, 0);
  EXPECT_TRUE(t.tasks.empty());
}

TEST(SpgemmWarpTasks, BadInputsAreRefusedNamingTheValue) {
  const Csr<double> a = csr(2, 2, {{0}, {1}}, 1);
  const Csr<double> c = reference::spgemm(a, a);
  const auto message = [&](int64_t task_products, int64_t region_entries, const Csr<double>& b, const Csr<double>& product) {
    return test::invalid_input_message(
        [&] { formats::build_warp_tasks(a.pattern(), b.pattern(), product.pattern(), task_products, region_entries); });
  };
  EXPECT_NE(message(0, 8, a, c).find("task_products = 0"), std::string::npos);
  EXPECT_NE(message(8, -1, a, c).find("region_entries = -1 must be 1 to 2048"), std::string::npos);
  EXPECT_NE(message(8, 2049, a, c).find("region_entries = 2049 must be 1 to 2048"), std::string::npos);
  EXPECT_NE(message(8, 8, csr(3, 2, {{0}, {1}, {}}, 1), c).find("B has 3 rows"), std::string::npos);
  EXPECT_NE(message(8, 8, a, csr(2, 3, {{0}, {1}}, 1)).find("C is 2x3 but A·B is 2x2"), std::string::npos);
  EXPECT_NE(message(8, 8, a, csr(2, 2, {{0}, {}}, 1)).find("C's row 1 has 0 entries but A·B's has 1 products"), std::string::npos);
}

TEST(SpgemmWarpPlan, AWarpATaskFromEightMillionProducts) {
  const plan::DeviceTarget h100;  // 132 multiprocessors
  // Below: entries.
  plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(test::spgemm_features_of(plan::kWarpTaskProducts - 1, 367'662, 36'692), DType::F32, h100, {}, {});
  EXPECT_EQ(p.kernel, PositionsKernel::Entries);
  EXPECT_EQ(p.why.find("a warp a task"), std::string::npos) << p.why;
  // 300 M products: the largest tasks; 4 KiB of sums a warp; positions, segments (one an entry
  // of A at least), tasks, steps of 32.
  p = plan::plan_spgemm_reuse(test::spgemm_features_of(300'000'000, 367'662, 36'692), DType::F32, h100, {}, {});
  EXPECT_TRUE(p.by_positions) << p.why;
  EXPECT_EQ(p.kernel, PositionsKernel::Warps);
  EXPECT_EQ(p.warp.task_products, 8192);
  EXPECT_EQ(p.warp.region_entries, 1024);
  EXPECT_EQ(p.warp.warps, 4);
  EXPECT_EQ(p.bytes, 2 * 300'000'000LL + 12 * 367'662LL + 4 + 32 * (300'000'000LL / 8192 + 1) + 8 * (300'000'000LL / 32));
  EXPECT_NE(p.why.find("positions: 2 bytes a product, a warp a task, at least"), std::string::npos) << p.why;
  // 20 M products: tasks of a 40th of a multiprocessor's share; f64 halves the region.
  p = plan::plan_spgemm_reuse(test::spgemm_features_of(20'000'000, 367'662, 36'692), DType::F64, h100, {}, {});
  EXPECT_EQ(p.warp.task_products, 20'000'000 / (40 * 132));
  EXPECT_EQ(p.warp.region_entries, 512);
  EXPECT_EQ(plan::warp_positions_bytes({1000, 10, 3, 40, 100, 2}, DType::F64), 2000 + 120 + 4 + 96 + 320 + 800 + 16);
  // The device builds' scratch beside: ints an entry of A and a row, a task's sort, CUB's storage.
  EXPECT_EQ(plan::warp_build_bytes(1000, 10, 7), 16 * 1001 + 120 * 11 + 84 * 7 + (int64_t(1) << 20));
  EXPECT_EQ(plan::blocks_build_bytes(1000, 10), 28 * 1001 + 68 * 11 + (int64_t(1) << 20));
}

TEST(SpgemmWarpPlan, AWarpATaskIsTimedAgainstTheBlocksKernelWhereBothFit) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = test::spgemm_features_of(20'000'000, 367'662, 36'692);
  const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, {});
  EXPECT_EQ(p.kernel, PositionsKernel::Warps);
  EXPECT_TRUE(p.time_against_blocks);
  EXPECT_EQ(p.why.find("positions: 2 bytes a product, a warp a task"), 0u) << p.why;
  EXPECT_EQ(p.task_products, 20'000'000 / (16 * 132));  // the blocks' tasks, planned beside
  const plan::SpgemmReusePlan blocks = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, {}, PositionsKernel::Blocks);
  // Forced, past kTimedPositionsProducts, or where both do not fit: the warps' alone.
  EXPECT_FALSE(plan::plan_spgemm_reuse(f, DType::F32, h100, {}, {}, PositionsKernel::Warps).time_against_blocks);
  EXPECT_FALSE(plan::plan_spgemm_reuse(test::spgemm_features_of(plan::kTimedPositionsProducts + 1, 367'662, 36'692), DType::F32,
                                       h100, {}, {})
                   .time_against_blocks);
  // The builds' scratch: one after the other, so the larger of the two counts beside both lists.
  const plan::SpgemmReusePlan warps = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, {}, PositionsKernel::Warps);
  EXPECT_EQ(warps.build_bytes, plan::warp_build_bytes(367'662, 36'692, 36'692 + 20'000'000 / (20'000'000 / (40 * 132)) + 1));
  EXPECT_EQ(blocks.build_bytes, plan::blocks_build_bytes(367'662, 36'692));
  EXPECT_EQ(p.build_bytes, std::max(warps.build_bytes, blocks.build_bytes));
  const int64_t both = p.bytes + blocks.bytes + p.build_bytes;
  const plan::SpgemmReusePlan tight = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, both - 1);
  EXPECT_TRUE(tight.by_positions) << tight.why;
  EXPECT_FALSE(tight.time_against_blocks);
  EXPECT_EQ(tight.build_bytes, warps.build_bytes);
  EXPECT_TRUE(plan::plan_spgemm_reuse(f, DType::F32, h100, {}, both).time_against_blocks);
}

TEST(SpgemmWarpPlan, ForcedWarpPositionsThatDoNotFitLeaveTheRecompute) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = test::spgemm_features_of(100'000'000, 1'000'000, 100'000);
  // Forced (in auto, rows would be taken instead: spgemm_positions_test).
  const plan::SpgemmReusePlan limited = plan::plan_spgemm_reuse(f, DType::F32, h100, {}, int64_t(100) << 20, PositionsKernel::Warps);
  EXPECT_FALSE(limited.by_positions);
  EXPECT_EQ(limited.why, "recompute: positions take at least " + std::to_string(limited.bytes + limited.build_bytes) +
                             " bytes, more than the memory limit of 104857600");
  EXPECT_GT(limited.bytes, 2 * 100'000'000LL);
  // The executor's test on the counted work list says how many bytes, without "at least".
  EXPECT_EQ(plan::positions_do_not_fit(500, {}, 400), "recompute: positions take 500 bytes, more than the memory limit of 400");
  EXPECT_EQ(plan::positions_do_not_fit(500, 1000, {}), "");
  EXPECT_EQ(plan::positions_do_not_fit(600, 1000, {}), "recompute: positions take 600 bytes, more than half of the 1000 free");
}

}  // namespace
}  // namespace sparsejit
