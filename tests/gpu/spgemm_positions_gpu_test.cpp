// formats/spgemm_positions_gpu against the host builder it follows (the specification): every
// array identical on the header's example and on generated pairs (rows grouped, rows alone in
// one task, rows cut into runs in shared and in global memory, wide rows in the wide list,
// empty rows, rectangular, no products, hot entries, an R-MAT over many blocks); a product
// count other than the pair's is a CudaError naming both; bad arguments get the host
// builder's error.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "formats/spgemm_positions_gpu.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class ReuseTasksGpu : public test::GpuSuite {};

struct Sizes {
  int64_t task_products, shared_entries, wide_entries;
};

formats::DeviceReuseTasks built_on_device(const Context& context, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c,
                                          int64_t products, Sizes z) {
  const DeviceCsr<double> da(context, a), db(context, b), dc(context, c);
  CUstream stream = nullptr;  // the legacy stream: the blocking downloads are ordered after the build
  return formats::build_reuse_tasks_gpu(context, formats::device_pattern(da), formats::device_pattern(db), formats::device_pattern(dc),
                                        products, z.task_products, z.shared_entries, z.wide_entries, stream);
}

std::vector<int32_t> fields(const formats::ReuseTask& t) { return {t.e0, t.e1, t.c0, t.c_count, t.r0, t.r1, int32_t(t.mode), t.unused}; }

void expect_same_tasks(const Context& context, const std::string& name, const Csr<double>& a, const Csr<double>& b, Sizes z) {
  SCOPED_TRACE(name);
  const Csr<double> c = reference::spgemm(a, b);
  const formats::ReuseTasks want =
      formats::build_reuse_tasks(a.pattern(), b.pattern(), c.row_ptr.data(), z.task_products, z.shared_entries, z.wide_entries);
  const formats::DeviceReuseTasks built = built_on_device(context, a, b, c, want.products, z);
  int64_t widest_wide = 0;
  for (std::size_t i = std::size_t(want.narrow); i < want.tasks.size(); ++i)
    widest_wide = std::max<int64_t>(widest_wide, want.tasks[i].c_count);
  EXPECT_EQ(built.widest_wide, widest_wide);
  const formats::ReuseTasks got = formats::download(built);
  EXPECT_EQ(got.products, want.products);
  EXPECT_EQ(got.narrow, want.narrow);
  EXPECT_EQ(got.widest, want.widest);
  EXPECT_EQ(got.product_at, want.product_at);
  EXPECT_EQ(got.zero_ranges, want.zero_ranges);
  ASSERT_EQ(got.tasks.size(), want.tasks.size());
  for (std::size_t i = 0; i < want.tasks.size(); ++i) EXPECT_EQ(fields(got.tasks[i]), fields(want.tasks[i])) << "task " << i;
}

// The header's example: rows of 3, 0, 225 and 4 products on 3, 0, 25 and 4 C entries (row 2 is
// nine entries of A on B rows of the same 25 columns).
std::pair<Csr<double>, Csr<double>> header_example() {
  std::vector<std::vector<int32_t>> b_rows{{0, 1, 2}};
  for (int k = 1; k <= 9; ++k) {
    b_rows.emplace_back();
    for (int32_t j = 0; j < 25; ++j) b_rows.back().push_back(j);
  }
  b_rows.push_back({0, 1, 2, 3});
  return {test::csr_of_rows(4, 11, {{0}, {}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}}), test::csr_of_rows(11, 25, b_rows)};
}

TEST_F(ReuseTasksGpu, EveryArrayIsTheHostBuildersArray) {
  const Context& context = rt().context();
  const uint64_t seed = next_seed();
  const auto [a, b] = header_example();
  expect_same_tasks(context, "the header's example", a, b, {8, 32, 32});
  const Csr<double> uniform = generate::uniform(400, 400, 6, seed);
  expect_same_tasks(context, "uniform: rows grouped", uniform, uniform, {256, 512, 1024});
  expect_same_tasks(context, "uniform: rows alone, wide and in runs", uniform, uniform, {16, 16, 32});
  expect_same_tasks(context, "uniform: every row in runs of one entry", uniform, uniform, {1, 1, 1});
  const Csr<double> power = generate::chung_lu(2000, 16000, 2.1, seed + 1);
  expect_same_tasks(context, "power-law: hubs in runs, in shared and global memory", power, power, {64, 16, 64});
  expect_same_tasks(context, "rectangular", generate::uniform(300, 700, 5, seed + 2), generate::uniform(700, 90, 4, seed + 3),
                    {30, 8, 16});
  const Csr<double> gaps = test::csr_of_rows(6, 6, {{}, {1, 2}, {}, {0, 5}, {3}, {}});
  expect_same_tasks(context, "empty rows", gaps, gaps, {2, 2, 4});
  const Csr<double> none = test::csr_of_rows(3, 3, {{}, {}, {}});
  expect_same_tasks(context, "no products", none, none, {8, 8, 8});
  const auto [hot_a, hot_b] = test::hot_entries(50, 300);
  expect_same_tasks(context, "hot entries", hot_a, hot_b, {32, 4, 8});
  const Csr<double> rmat = generate::from_spec("rmat:20000:200000", seed + 4);
  expect_same_tasks(context, "rmat: many blocks of the grid", rmat, rmat, {1024, 128, 512});
}

TEST_F(ReuseTasksGpu, AProductCountOtherThanThePairsIsRefusedNamingBoth) {
  const Csr<double> a = generate::uniform(64, 64, 4, next_seed());
  const Csr<double> c = reference::spgemm(a, a);
  const int64_t products = formats::build_reuse_tasks(a.pattern(), a.pattern(), c.row_ptr.data(), 8, 8, 8).products;
  try {
    built_on_device(rt().context(), a, a, c, products + 1, {8, 8, 8});
    ADD_FAILURE() << "a wrong product count was accepted";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("counted " + std::to_string(products) + " products"), std::string::npos) << what;
    EXPECT_NE(what.find("count " + std::to_string(products + 1)), std::string::npos) << what;
  }
  const std::string want =
      test::invalid_input_message([&] { formats::build_reuse_tasks(a.pattern(), a.pattern(), c.row_ptr.data(), 8, 16, 8); });
  ASSERT_NE(want.find("wide_entries = 8"), std::string::npos) << want;
  EXPECT_EQ(test::invalid_input_message([&] { built_on_device(rt().context(), a, a, c, products, {8, 16, 8}); }), want);
}

}  // namespace
}  // namespace sparsejit
