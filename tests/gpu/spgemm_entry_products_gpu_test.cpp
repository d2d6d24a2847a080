// formats/spgemm_entry_products_gpu against the host builder it follows (the specification):
// every array identical on the header's example and on generated pairs (long entries in
// parts, every entry in parts, empty rows, rectangular, an empty product, a product of
// hundreds of thousands of products over many blocks); a C the list cannot serve gets the host
// builder's reason; a product count other than the pair's is a CudaError naming both.
#include <gtest/gtest.h>

#include <string>

#include "formats/spgemm_entry_products_gpu.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/gpu_suite.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

class EntryProductsGpu : public test::GpuSuite {};

formats::EntryProducts built_on_device(const Context& context, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c,
                                       int64_t products, int64_t range_products) {
  const DeviceCsr<double> da(context, a), db(context, b), dc(context, c);
  CUstream stream = nullptr;
  return formats::download(
      formats::build_entry_products_gpu(context, formats::device_pattern(da), formats::device_pattern(db), formats::device_pattern(dc),
                                         products, range_products, stream));
}

void expect_same_list(const Context& context, const std::string& name, const Csr<double>& a, const Csr<double>& b,
                      int64_t range_products) {
  SCOPED_TRACE(name);
  const Csr<double> c = reference::spgemm(a, b);
  const formats::EntryProducts want = formats::build_entry_products(a.pattern(), b.pattern(), c.pattern(), range_products);
  ASSERT_TRUE(want.unusable.empty()) << want.unusable;
  const formats::EntryProducts got = built_on_device(context, a, b, c, want.products, range_products);
  EXPECT_EQ(got.unusable, "");
  EXPECT_EQ(got.products, want.products);
  EXPECT_EQ(got.product_a, want.product_a);
  EXPECT_EQ(got.product_b, want.product_b);
  ASSERT_EQ(got.ranges.size(), want.ranges.size());
  for (std::size_t i = 0; i < want.ranges.size(); ++i) {
    const formats::EntryRange &g = got.ranges[i], &w = want.ranges[i];
    EXPECT_EQ((std::vector<int32_t>{g.p0, g.count, g.c0, g.slot}), (std::vector<int32_t>{w.p0, w.count, w.c0, w.slot})) << "range " << i;
  }
  EXPECT_EQ(got.slot_parts, want.slot_parts);
}

TEST_F(EntryProductsGpu, EveryArrayIsTheHostBuildersArray) {
  const Context& context = rt().context();
  const uint64_t seed = next_seed();
  // The header's example: entries of 3, 1, 9 and 2 products.
  const Csr<double> row = test::csr_of_rows(1, 9, {{0, 1, 2, 3, 4, 5, 6, 7, 8}});
  const Csr<double> rows_of_b = test::csr_of_rows(9, 4, {{0, 1, 2}, {0, 2}, {0, 2}, {2}, {2}, {2}, {2}, {2, 3}, {2, 3}});
  expect_same_list(context, "the header's example", row, rows_of_b, 4);
  const Csr<double> uniform = generate::uniform(400, 400, 6, seed);
  expect_same_list(context, "uniform", uniform, uniform, 64);
  expect_same_list(context, "uniform, every entry of two products or more in parts", uniform, uniform, 1);
  const Csr<double> power = generate::chung_lu(2000, 16000, 2.1, seed + 1);
  expect_same_list(context, "power-law: hubs' entries in parts", power, power, 128);
  expect_same_list(context, "rectangular", generate::uniform(300, 700, 5, seed + 2), generate::uniform(700, 90, 4, seed + 3), 100);
  const Csr<double> gaps = test::csr_of_rows(6, 6, {{}, {1, 2}, {}, {0, 5}, {3}, {}});
  expect_same_list(context, "empty rows", gaps, gaps, 2);
  const Csr<double> none = test::csr_of_rows(3, 3, {{}, {}, {}});
  expect_same_list(context, "no products", none, none, 8);
  const auto [hot_a, hot_b] = test::hot_entries(50, 300);
  expect_same_list(context, "hot entries", hot_a, hot_b, 32);
  const Csr<double> rmat = generate::from_spec("rmat:20000:200000", seed + 4);
  expect_same_list(context, "rmat: many blocks of the grid, entries in parts", rmat, rmat, 256);
}

TEST_F(EntryProductsGpu, ACThatIsNotTheProductsPatternGetsTheHostBuildersReason) {
  const Context& context = rt().context();
  const Csr<double> a = test::csr_of_rows(2, 3, {{0, 1}, {2}});
  const Csr<double> b = test::csr_of_rows(3, 3, {{0}, {1}, {2}});
  for (const Csr<double>& c : {test::csr_of_rows(2, 3, {{0}, {2}}), test::csr_of_rows(2, 3, {{0, 1}, {0, 2}})}) {
    const formats::EntryProducts want = formats::build_entry_products(a.pattern(), b.pattern(), c.pattern(), 8);
    ASSERT_FALSE(want.unusable.empty());
    const formats::EntryProducts got = built_on_device(context, a, b, c, 3, 8);
    EXPECT_EQ(got.unusable, want.unusable);
    EXPECT_TRUE(got.product_a.empty());
    EXPECT_TRUE(got.ranges.empty());
  }
}

TEST_F(EntryProductsGpu, AProductCountOtherThanThePairsIsRefusedNamingBoth) {
  const Csr<double> a = generate::uniform(64, 64, 4, next_seed());
  const Csr<double> c = reference::spgemm(a, a);
  const int64_t products = formats::build_entry_products(a.pattern(), a.pattern(), c.pattern(), 8).products;
  try {
    built_on_device(rt().context(), a, a, c, products - 1, 8);
    ADD_FAILURE() << "a wrong product count was accepted";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("counted " + std::to_string(products) + " products"), std::string::npos) << what;
    EXPECT_NE(what.find("count " + std::to_string(products - 1)), std::string::npos) << what;
  }
  EXPECT_NE(test::invalid_input_message([&] { built_on_device(rt().context(), a, a, c, products, 0); }).find("range_products = 0"),
            std::string::npos);
}

}  // namespace
}  // namespace sparsejit
