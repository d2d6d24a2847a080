// formats/spgemm_warp_tasks_gpu against the host builder it follows (the specification): every
// array identical on the header's example and on generated pairs (rows grouped, rows cut into
// slices, slices cut into parts with runs cut between them, one-entry regions, empty rows,
// rectangular, no products, hot entries, an R-MAT over many blocks); an unsorted B row is left
// to the host with its row named; a C whose rows are not A·B's gets the host builder's error;
// a product count other than the pair's is a CudaError naming both.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/spgemm_warp_tasks_gpu.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class WarpTasksGpu : public test::GpuSuite {};

constexpr int64_t kAmpleMemory = int64_t(1) << 40;

formats::DeviceWarpTasks built_on_device(const Context& context, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c,
                                         int64_t products, int64_t task_products, int64_t region_entries) {
  const DeviceCsr<double> da(context, a), db(context, b), dc(context, c);
  CUstream stream = nullptr;  // the legacy stream: the blocking downloads are ordered after the build
  return formats::build_warp_tasks_gpu(context, formats::device_pattern(da), formats::device_pattern(db), formats::device_pattern(dc),
                                       products, task_products, region_entries, kAmpleMemory, stream);
}

std::vector<int32_t> fields(const formats::WarpTask& t) { return {t.s0, t.s1, t.c0, t.c_count, t.parts, t.part, t.group, t.step_base}; }

void expect_same_tasks(const Context& context, const std::string& name, const Csr<double>& a, const Csr<double>& b,
                       int64_t task_products, int64_t region_entries) {
  SCOPED_TRACE(name);
  const Csr<double> c = reference::spgemm(a, b);
  const formats::WarpTasks want = formats::build_warp_tasks(a.pattern(), b.pattern(), c.pattern(), task_products, region_entries);
  const formats::DeviceWarpTasks built = built_on_device(context, a, b, c, want.products, task_products, region_entries);
  ASSERT_EQ(built.host_only, "");
  EXPECT_GE(built.max_steps, want.steps);
  const formats::WarpTasks got = formats::download(built);
  EXPECT_EQ(got.products, want.products);
  EXPECT_EQ(got.segment_b, want.segment_b);
  EXPECT_EQ(got.segment_e, want.segment_e);
  EXPECT_EQ(got.segment_at, want.segment_at);
  EXPECT_EQ(got.group_scratch, want.group_scratch);
  EXPECT_EQ(got.steps, want.steps);
  EXPECT_EQ(got.scratch_entries, want.scratch_entries);
  EXPECT_EQ(got.widest, want.widest);
  ASSERT_EQ(got.tasks.size(), want.tasks.size());
  for (std::size_t i = 0; i < want.tasks.size(); ++i) EXPECT_EQ(fields(got.tasks[i]), fields(want.tasks[i])) << "task " << i;
}

// B rows of 40 columns, [0, 40), [30, 70), [60, 100): A's one row of three entries has 100 C entries.
std::pair<Csr<double>, Csr<double>> header_example() {
  std::vector<std::vector<int32_t>> rows(3);
  for (int32_t k = 0; k < 3; ++k)
    for (int32_t j = 0; j < 40; ++j) rows[std::size_t(k)].push_back(30 * k + j);
  return {test::csr_of_rows(1, 3, {{0, 1, 2}}), test::csr_of_rows(3, 100, rows)};
}

TEST_F(WarpTasksGpu, EveryArrayIsTheHostBuildersArray) {
  const Context& context = rt().context();
  const uint64_t seed = next_seed();
  const auto [row, rows_of_b] = header_example();
  expect_same_tasks(context, "the header's example: two slices of 50 entries", row, rows_of_b, 1000, 64);
  expect_same_tasks(context, "the header's example in parts", row, rows_of_b, 7, 64);
  const Csr<double> uniform = generate::uniform(400, 400, 6, seed);
  expect_same_tasks(context, "uniform: rows grouped", uniform, uniform, 256, 128);
  expect_same_tasks(context, "uniform: groups and rows alone", uniform, uniform, 40, 32);
  expect_same_tasks(context, "uniform: every row alone, in parts", uniform, uniform, 1, 2048);
  expect_same_tasks(context, "uniform: one-entry regions", uniform, uniform, 8192, 1);
  const Csr<double> power = generate::chung_lu(2000, 16000, 2.1, seed + 1);
  expect_same_tasks(context, "power-law: hubs sliced and in parts", power, power, 64, 16);
  expect_same_tasks(context, "rectangular", generate::uniform(300, 700, 5, seed + 2), generate::uniform(700, 90, 4, seed + 3), 30, 8);
  const Csr<double> gaps = test::csr_of_rows(6, 6, {{}, {1, 2}, {}, {0, 5}, {3}, {}});
  expect_same_tasks(context, "empty rows", gaps, gaps, 2, 2);
  const Csr<double> none = test::csr_of_rows(3, 3, {{}, {}, {}});
  expect_same_tasks(context, "no products", none, none, 8, 8);
  const auto [hot_a, hot_b] = test::hot_entries(50, 300);
  expect_same_tasks(context, "hot entries", hot_a, hot_b, 32, 4);
  const Csr<double> rmat = generate::from_spec("rmat:20000:200000", seed + 4);
  expect_same_tasks(context, "rmat: many blocks of the grid", rmat, rmat, 256, 128);
}

TEST_F(WarpTasksGpu, AnUnsortedRowOfBIsLeftToTheHostNamed) {
  const Csr<double> a = test::csr_of_rows(2, 3, {{0, 1}, {2}});
  const Csr<double> b = test::csr_of_rows(3, 3, {{0}, {2, 1}, {1}});
  const Csr<double> c = reference::spgemm(a, b);
  const formats::DeviceWarpTasks built = built_on_device(rt().context(), a, b, c, 4, 8, 8);
  EXPECT_NE(built.host_only.find("B's row 1 is not sorted"), std::string::npos) << built.host_only;
}

TEST_F(WarpTasksGpu, ACWhoseRowsAreNotTheProductsGetsTheHostBuildersError) {
  const Csr<double> a = test::csr_of_rows(2, 3, {{0, 1}, {}});
  const Csr<double> b = test::csr_of_rows(3, 3, {{0}, {1}, {2}});
  const Csr<double> c = test::csr_of_rows(2, 3, {{0, 1}, {2}});  // row 1 of A·B has no products
  const std::string want =
      test::invalid_input_message([&] { formats::build_warp_tasks(a.pattern(), b.pattern(), c.pattern(), 8, 8); });
  ASSERT_NE(want.find("C's row 1"), std::string::npos) << want;
  EXPECT_EQ(test::invalid_input_message([&] { built_on_device(rt().context(), a, b, c, 2, 8, 8); }), want);
}

TEST_F(WarpTasksGpu, AProductCountOtherThanThePairsIsRefusedNamingBoth) {
  const Csr<double> a = generate::uniform(64, 64, 4, next_seed());
  const Csr<double> c = reference::spgemm(a, a);
  const int64_t products = formats::build_warp_tasks(a.pattern(), a.pattern(), c.pattern(), 8, 8).products;
  try {
    built_on_device(rt().context(), a, a, c, products - 1, 8, 8);
    ADD_FAILURE() << "a wrong product count was accepted";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("counted " + std::to_string(products) + " products"), std::string::npos) << what;
    EXPECT_NE(what.find("count " + std::to_string(products - 1)), std::string::npos) << what;
  }
  EXPECT_NE(test::invalid_input_message([&] { built_on_device(rt().context(), a, a, c, products, 8, 0); }).find("region_entries = 0"),
            std::string::npos);
}

}  // namespace
}  // namespace sparsejit
