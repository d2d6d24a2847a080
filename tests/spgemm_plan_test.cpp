// SpGEMM without a GPU: the pair's features on hand-built patterns, the planner over the
// registered variants (model choice, forced choice, refused parameters naming the value, the
// int32 overflow refusal, unsorted operands, memory: peaks, budgets, row panels and refusals),
// the kernels a decision lists, and explain.
#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/test_support.hpp"
#include "sparsejit/runtime.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit {
namespace {

Csr<double> csr(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& columns) {
  return test::csr_of_rows(rows, cols, columns);
}

// A 3x4 with rows {0, 1}, {}, {1, 2, 3}; B 4x5 with rows of 2, 3, 0 and 1 entries.
const Csr<double>& small_a() {
  static const Csr<double> a = csr(3, 4, {{0, 1}, {}, {1, 2, 3}});
  return a;
}
const Csr<double>& small_b() {
  static const Csr<double> b = csr(4, 5, {{0, 4}, {1, 2, 3}, {}, {2}});
  return b;
}

plan::SpgemmProblem problem_of(const Csr<double>& a, const Csr<double>& b, DType dtype = DType::F32) {
  return {dtype, a.rows, a.cols, b.cols};
}

Decision plan(const Csr<double>& a, const Csr<double>& b, const Options& o = {}, DType dtype = DType::F32) {
  return plan::plan_spgemm(spgemm_features(a.pattern(), b.pattern()), problem_of(a, b, dtype), {}, o);
}

template <class E, class F>
void expect_error_naming(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming '" << needle << "'";
  } catch (const E& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

const Candidate* candidate(const Decision& d, const std::string& variant) {
  for (const Candidate& c : d.candidates)
    if (c.variant == variant) return &c;
  return nullptr;
}

TEST(SpgemmFeatures, CountsProductsPerRowAndBucketsThem) {
  const SpgemmFeatures f = spgemm_features(small_a().pattern(), small_b().pattern());
  EXPECT_EQ(f.a.nnz, 5);
  EXPECT_DOUBLE_EQ(f.a.row_mean, 5.0 / 3.0);  // RowA
  EXPECT_EQ(f.b.nnz, 6);
  EXPECT_EQ(f.products, 9);  // row 0: 2 + 3, row 2: 3 + 0 + 1
  EXPECT_EQ(f.max_row_products, 5);
  EXPECT_EQ(f.product_rows, 2);
  EXPECT_EQ(f.max_row_span, 5);  // row 0 reaches columns 0 to 4 (row 2: 1 to 3)
  EXPECT_EQ(f.rows_by_products[0], 1);  // row 1
  EXPECT_EQ(f.rows_by_products[3], 1);  // p = 4: 1 + ceil(log2 4)
  EXPECT_EQ(f.rows_by_products[4], 1);  // p = 5: 1 + ceil(log2 5)
  EXPECT_EQ(f.products_by_bucket[4], 5);
  EXPECT_EQ(rows_with_products_up_to(f, 4), 1);
  EXPECT_EQ(rows_with_products_up_to(f, 8), 2);
  EXPECT_EQ(products_of_rows_up_to(f, 4), 4);
  EXPECT_EQ(products_of_rows_up_to(f, 1 << 20), 9);
  EXPECT_TRUE(f.a_sorted);
  EXPECT_TRUE(f.b_sorted);
  EXPECT_EQ(element_products(small_a().pattern(), small_b().pattern()), f.products);

  const nlohmann::json j = to_json(f);
  EXPECT_EQ(j.at("products"), 9);
  EXPECT_EQ(j.at("nnz_a"), 5);
  EXPECT_EQ(j.at("max_row_products"), 5);
  EXPECT_EQ(j.at("rows_by_products"), (std::vector<int64_t>{1, 0, 0, 1, 1}));
}

TEST(SpgemmFeatures, UnsortedAndDuplicateEntriesCountAsStored) {
  const Csr<double> a = csr(2, 4, {{3, 1, 3}, {2}});  // row 0 unsorted, column 3 twice
  const SpgemmFeatures f = spgemm_features(a.pattern(), small_b().pattern());
  EXPECT_FALSE(f.a_sorted);
  EXPECT_TRUE(f.b_sorted);
  EXPECT_EQ(f.products, 1 + 3 + 1 + 0);
  EXPECT_EQ(f.max_row_products, 5);
  EXPECT_EQ(f.max_row_span, 3);  // columns 1 to 3, whatever the order
}

TEST(SpgemmFeatures, MismatchedShapesAreRefusedNamingBoth) {
  expect_error_naming<InvalidInputError>([] { spgemm_features(small_b().pattern(), small_a().pattern()); }, "A is 4x5 but B has 3 rows");
}

TEST(SpgemmPlan, TheModelChoosesRowHashForASmallProductAndPricesEveryVariant) {
  const Csr<double> a = generate::from_spec("rmat:2048:16000", 3);
  const Decision d = plan(a, a);
  EXPECT_EQ(d.op, Op::SpGEMM);
  EXPECT_EQ(d.variant, "row_hash");
  EXPECT_EQ(d.source, DecisionSource::Model);
  EXPECT_EQ(d.model_id, "spgemm-default");
  EXPECT_EQ(d.params.at("max_shared_row"), 4096);
  ASSERT_NE(candidate(d, "cusparse"), nullptr);
  EXPECT_GT(candidate(d, "cusparse")->predicted_ms, candidate(d, "row_hash")->predicted_ms);
  for (const char* key : {"products", "nnz_a", "row_a", "max_row_products", "rows_by_products", "value_bytes"})
    EXPECT_TRUE(d.features.contains(key)) << key;
  EXPECT_EQ(d.features.at("products"), element_products(a.pattern(), a.pattern()));
  EXPECT_EQ(describe(d).find("spgemm: row_hash"), 0u) << describe(d);
}

TEST(SpgemmPlan, CusparseIsChosenWhenMostProductsLieInVeryLongRows) {
  // 100 rows of a million products each, B 2^20 columns wide: all in global-memory tables.
  SpgemmFeatures f;
  f.a.rows = 100;
  f.a.cols = 1000;
  f.a.nnz = 100000;
  f.b.rows = 1000;
  f.b.cols = 1 << 20;
  f.products = 100 * 1000000LL;
  f.max_row_products = 1000000;
  f.product_rows = 100;
  f.rows_by_products[21] = 100;  // 1 + ceil(log2 1e6)
  f.products_by_bucket[21] = f.products;
  f.max_row_span = 1 << 20;  // wider than a dense accumulator holds
  f.a_sorted = f.b_sorted = true;
  f.a_tiles = f.a.nnz;  // scattered entries: a tile each, a tile product per scalar product
  f.b_tiles = 1000000;
  f.tile_products = f.products;
  const Decision d = plan::plan_spgemm(f, {DType::F64, 100, 1000, 1 << 20}, {}, {});
  EXPECT_EQ(d.variant, "cusparse") << describe(d);
  EXPECT_EQ(candidate(d, "row_hash")->terms.at("global_products"), double(f.products));
}

TEST(SpgemmPlan, AForcedVariantRunsWithItsParameters) {
  Options o;
  o.variant = "cusparse";
  Decision d = plan(small_a(), small_b(), o);
  EXPECT_EQ(d.variant, "cusparse");
  EXPECT_EQ(d.source, DecisionSource::Forced);
  EXPECT_EQ(d.params, nlohmann::json({{"alg", 0}}));
  o.variant = "row_hash";
  o.params = {{"max_shared_row", 256}, {"global_blocks", 3}};
  d = plan(small_a(), small_b(), o, DType::F64);
  EXPECT_EQ(d.variant, "row_hash");
  EXPECT_EQ(d.params.at("max_shared_row"), 256);
  EXPECT_EQ(d.params.at("global_blocks"), 3);
}

TEST(SpgemmPlan, BadForcedChoicesAreRefusedNamingTheValue) {
  Options o;
  o.variant = "no_such";
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "unknown spgemm variant 'no_such'");
  o.variant = "row_hash";
  o.params = {{"max_shared_row", 100}};
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "max_shared_row = 100");
  o.params = {{"global_blocks", 0}};
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "global_blocks = 0");
  o.params = {{"tile", 8}};
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "no parameter 'tile'");
  o.params = {{"panels", 0}};
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "panels = 0");
  o.params = {{"panels", 4}};  // A has 3 rows
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "panels = 4 must be in [1, 3]");
  o.variant = "cusparse";
  o.params = {{"alg", 4}};
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "alg = 4");
}

TEST(SpgemmPlan, TheLargestSharedBinMustFitTheDevicesSharedMemory) {
  plan::DeviceTarget small_device;
  small_device.name = "small part";
  small_device.shared_per_block_optin = 48 * 1024;
  const SpgemmFeatures f = spgemm_features(small_a().pattern(), small_b().pattern());
  const Decision d = plan::plan_spgemm(f, problem_of(small_a(), small_b(), DType::F64), small_device, {});
  EXPECT_EQ(d.params.at("max_shared_row"), 1024);  // 4096's f64 tables need 115 KB
  Options o;
  o.variant = "row_hash";
  o.params = {{"max_shared_row", 4096}};
  expect_error_naming<InvalidInputError>(
      [&] { plan::plan_spgemm(f, problem_of(small_a(), small_b(), DType::F64), small_device, o); }, "more than the 49152 of small part");
}

TEST(SpgemmPlan, MoreThanInt32ProductsAreRefusedBeforeAnythingRuns) {
  // A: one row holding column 0 50000 times; B: row 0 with 50000 entries: 2.5e9 products.
  Csr<double> a = csr(1, 1, {std::vector<int32_t>(50000, 0)});
  std::vector<int32_t> all(50000);
  for (int32_t i = 0; i < 50000; ++i) all[std::size_t(i)] = i;
  const Csr<double> b = csr(1, 50000, {all});
  expect_error_naming<InvalidInputError>([&] { plan(a, b); }, "2500000000 scalar products");
  expect_error_naming<InvalidInputError>([&] { explain_spgemm(a.pattern(), b.pattern(), DType::F32); }, "more than 2^31-1");
}

TEST(SpgemmPlan, ProblemAndFeaturesMustDescribeTheSamePair) {
  const SpgemmFeatures f = spgemm_features(small_a().pattern(), small_b().pattern());
  expect_error_naming<InvalidInputError>([&] { plan::plan_spgemm(f, {DType::F32, 3, 4, 6}, {}, {}); }, "B 4x5");
}

TEST(SpgemmPlan, OtherValueTypesAndTransposeAreUnsupported) {
  EXPECT_THROW(plan(small_a(), small_b(), {}, DType::F16), UnsupportedError);
  Options o;
  o.transpose_a = true;
  EXPECT_THROW(explain_spgemm(small_a().pattern(), small_b().pattern(), DType::F32, o), UnsupportedError);
}

TEST(SpgemmPlan, UnsortedOperandsGoToRowHashOnly) {
  const Csr<double> a = csr(2, 4, {{3, 1}, {2}});
  const Decision d = plan(a, small_b());
  EXPECT_EQ(d.variant, "row_hash");
  EXPECT_NE(candidate(d, "cusparse")->rejected_because.find("sorted"), std::string::npos);
  Options o;
  o.variant = "cusparse";
  EXPECT_THROW(plan(a, small_b(), o), UnsupportedError);
}

TEST(SpgemmPlan, EverySearchSpaceEntryRunsForced) {
  const Csr<double> a = generate::from_spec("band:3000:12:40", 2);
  const SpgemmFeatures f = spgemm_features(a.pattern(), a.pattern());
  const plan::SpgemmProblem problem = problem_of(a, a, DType::F64);
  const auto space = plan::spgemm_search_space(f, problem, {});
  std::set<std::string> seen;
  for (const auto& [variant, params] : space) {
    Options o;
    o.variant = variant;
    o.params = params;
    EXPECT_EQ(plan::plan_spgemm(f, problem, {}, o).params, params) << variant;
    seen.insert(variant);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"bitmap_tc", "cusparse", "row_hash"}));
}

// The kernels a decision lists follow its rows' bins: 64x64 with 4 of 64 columns per row
// gives 16 products per row, all in the first bin.
TEST(SpgemmPlan, RowHashListsTheKernelsOfTheBinsItsRowsUse) {
  const Csr<double> a = generate::uniform(64, 64, 4, 1);
  const Decision d = plan(a, a);
  ASSERT_EQ(d.variant, "row_hash");
  const auto specs = variants::SpgemmRegistry::find("row_hash")->kernel_specs(d, problem_of(a, a));
  std::vector<std::string> names;
  for (const jit::KernelSpec& s : specs) names.push_back(s.kernel_name);
  EXPECT_EQ(names, (std::vector<std::string>{"sj_spgemm_hash_bin_symbolic", "sj_spgemm_hash_bin_numeric",
                                             "sj_spgemm_hash_symbolic_16", "sj_spgemm_hash_numeric_16"}));
}

// A row's table needs at most min(products, n) slots: with B 4096 columns wide, R-MAT's hub
// rows of up to 24000 products stay in the 4096 bin (8 products per slot at most), so no row
// needs a global-memory table.
TEST(SpgemmPlan, RowsLongerThanBsWidthStayInSharedBinsWhileTheirWorkFits) {
  const Csr<double> a = generate::from_spec("rmat:4096:40000", 3);
  const Decision d = plan(a, a);
  ASSERT_EQ(d.variant, "row_hash");
  EXPECT_GT(d.features.at("max_row_products").get<int64_t>(), 4096);
  EXPECT_EQ(candidate(d, "row_hash")->terms.at("global_products"), 0.0);
  for (const jit::KernelSpec& s : variants::SpgemmRegistry::find("row_hash")->kernel_specs(d, problem_of(a, a)))
    EXPECT_EQ(s.kernel_name.find("global"), std::string::npos) << s.kernel_name;
}

// Dense 32 x 32 blocks with one scattered entry a row: about 60 scalar products a tile
// product, where bitmap_tc's tensor-core tiles beat hashing (H200: 0.34 against 0.99 ms at
// 20,000 rows, 1.18 against 3.49 at 100,000).
TEST(SpgemmPlan, DenseBlocksAmongScatteredEntriesGoToBitmapTc) {
  const Csr<double> a = generate::from_spec("blockdiag:20000:32:1", 3);
  for (DType dtype : {DType::F32, DType::F64}) {
    const Decision d = plan(a, a, {}, dtype);
    EXPECT_EQ(d.variant, "bitmap_tc") << describe(d);
    EXPECT_LT(candidate(d, "bitmap_tc")->predicted_ms, candidate(d, "row_hash")->predicted_ms) << describe(d);
  }
}

// f64 rows of 20,000 products over 200,000 columns: one window of f64 sums holds about 23,500
// columns, so the span takes 9 windows; they stay dense (no global tables), and row_hash is
// priced below cuSPARSE (R-MAT of 2 M nonzeros on the H200: 78 ms in windows, 293 in global
// tables, cuSPARSE 118).
TEST(SpgemmPlan, F64RowsPastEightWindowsStillGoDense) {
  SpgemmFeatures f;
  f.a.rows = f.a.cols = f.b.rows = 2000;
  f.a.nnz = 2000 * 200;
  f.b.cols = 200000;
  f.b.nnz = 2000 * 100;
  f.products = 2000 * 20000LL;
  f.max_row_products = 20000;
  f.product_rows = 2000;
  f.rows_by_products[16] = 2000;  // 1 + ceil(log2 20000)
  f.products_by_bucket[16] = f.products;
  f.max_row_span = 200000;
  f.a_sorted = f.b_sorted = true;
  f.a_tiles = f.a.nnz;
  f.b_tiles = f.b.nnz;
  f.tile_products = f.products;
  const Decision d = plan::plan_spgemm(f, {DType::F64, 2000, 2000, 200000}, {}, {});
  ASSERT_EQ(d.variant, "row_hash") << describe(d);
  const int span = d.params.at("dense_span").get<int>(), window = d.params.at("dense_window").get<int>();
  EXPECT_GE(span, 200000);
  EXPECT_GT((span + window - 1) / window, 8) << describe(d);
  EXPECT_EQ(candidate(d, "row_hash")->terms.at("global_products"), 0.0);
  EXPECT_GT(candidate(d, "row_hash")->terms.at("dense_window_products"), 0.0);
}

TEST(SpgemmPlan, VariantsAreRegisteredInOrderWithOneVendor) {
  EXPECT_EQ(plan::spgemm_variants(), (std::vector<std::string>{"row_hash", "bitmap_tc", "cusparse"}));
  int vendors = 0;
  for (const variants::SpgemmVariant* v : variants::SpgemmRegistry::all()) {
    EXPECT_FALSE(v->summary.empty()) << v->name;
    vendors += v->traits.vendor;
  }
  EXPECT_EQ(vendors, 1);
  EXPECT_EQ(parse_op("spgemm"), Op::SpGEMM);
  EXPECT_STREQ(to_string(Op::SpGEMM), "spgemm");
}

// ---- memory ----

Decision plan_with_memory(const Csr<double>& a, const Csr<double>& b, std::optional<int64_t> limit,
                          std::optional<int64_t> free_bytes = std::nullopt, const std::string& variant = "") {
  Options o;
  o.memory_limit_bytes = limit;
  o.variant = variant;
  plan::DeviceTarget device;
  device.free_bytes = free_bytes;
  return plan::plan_spgemm(spgemm_features(a.pattern(), b.pattern()), problem_of(a, b), device, o);
}

int64_t peak(const Decision& d, const std::string& variant) { return d.features.at("memory").at("peak_bytes").at(variant).get<int64_t>(); }
int64_t workspace(const Decision& d, const std::string& variant) {
  return d.features.at("memory").at("workspace_bytes").at(variant).get<int64_t>();
}
int64_t assumed_c_bytes(const Decision& d, const Csr<double>& a) {
  return variants::output_bytes(a.rows, d.features.at("memory").at("c_nnz_assumed").get<int64_t>(), DType::F32);
}

// The power-law pair the memory tests plan: R-MAT A·A, whose products far outnumber C's entries.
const Csr<double>& power_law() {
  static const Csr<double> a = generate::from_spec("rmat:20000:200000", 5);
  return a;
}

TEST(SpgemmMemory, EveryCandidateStatesItsPeakAndCsBounds) {
  const Csr<double>& a = power_law();
  const Decision d = plan_with_memory(a, a, std::nullopt);
  const nlohmann::json& memory = d.features.at("memory");
  EXPECT_TRUE(memory.at("budget_bytes").is_null());
  EXPECT_TRUE(memory.at("free_bytes").is_null());
  EXPECT_TRUE(memory.at("limit_bytes").is_null());
  const int64_t lower = memory.at("c_nnz_bounds")[0], upper = memory.at("c_nnz_bounds")[1];
  const int64_t exact = reference::spgemm(a, a).nnz();
  EXPECT_LE(lower, exact);
  EXPECT_GE(upper, exact);
  EXPECT_LE(upper, d.features.at("products").get<int64_t>());
  EXPECT_EQ(memory.at("c_nnz_assumed"), upper);  // nothing to fit: C at its upper bound
  for (const char* variant : {"row_hash", "cusparse"})
    EXPECT_EQ(peak(d, variant), workspace(d, variant) + variants::output_bytes(a.rows, upper, DType::F32)) << variant;
  // row_hash's scratch holds at least C's row counts; cuSPARSE's buffers are known only when run.
  EXPECT_GT(workspace(d, "row_hash"), 4 * int64_t(a.rows));
  EXPECT_EQ(workspace(d, "cusparse"), 0);
  EXPECT_EQ(d.params.at("panels"), 1);
}

// A limit below one pass's peak but above C's arrays: row_hash cuts C into row panels whose
// scratch fits, and the Decision says how many.
TEST(SpgemmMemory, ALimitBelowOnePassTakesRowPanels) {
  const Csr<double>& a = power_law();
  const Decision one_pass = plan_with_memory(a, a, std::nullopt, std::nullopt, "row_hash");
  const int64_t limit = assumed_c_bytes(one_pass, a) + workspace(one_pass, "row_hash") * 6 / 10;
  const Decision d = plan_with_memory(a, a, limit, std::nullopt, "row_hash");
  EXPECT_EQ(d.variant, "row_hash");
  EXPECT_GT(d.params.at("panels").get<int>(), 1) << describe(d);
  EXPECT_LE(peak(d, "row_hash"), limit);
  EXPECT_EQ(d.features.at("memory").at("budget_bytes"), limit);
  EXPECT_EQ(d.features.at("memory").at("limit_bytes"), limit);
  // The fewest panels that fit: half as many do not.
  Options o;
  o.variant = "row_hash";
  o.params = {{"panels", std::max(1, d.params.at("panels").get<int>() / 2)}, {"global_blocks", d.params.at("global_blocks")}};
  o.memory_limit_bytes = limit;
  expect_error_naming<UnsupportedError>(
      [&] { plan::plan_spgemm(spgemm_features(a.pattern(), a.pattern()), problem_of(a, a), {}, o); },
      "more than the " + std::to_string(limit) + " bytes memory_limit_bytes allows");
  // Auto plans the same panels for its row_hash candidate, and prices them.
  const Decision automatic = plan_with_memory(a, a, limit);
  EXPECT_EQ(candidate(automatic, "row_hash")->params.at("panels"), d.params.at("panels"));
  EXPECT_GT(candidate(automatic, "row_hash")->terms.at("launch").get<double>(),
            candidate(one_pass, "row_hash")->terms.at("launch").get<double>());
}

// The device's free memory bounds the plan as a limit does; the smaller of the two is the budget.
TEST(SpgemmMemory, TheDevicesFreeMemoryIsABudgetToo) {
  const Csr<double>& a = power_law();
  const Decision one_pass = plan_with_memory(a, a, std::nullopt, std::nullopt, "row_hash");
  const int64_t tight = assumed_c_bytes(one_pass, a) + workspace(one_pass, "row_hash") * 6 / 10;
  const Decision by_free = plan_with_memory(a, a, std::nullopt, tight, "row_hash");
  EXPECT_GT(by_free.params.at("panels").get<int>(), 1);
  EXPECT_EQ(by_free.features.at("memory").at("free_bytes"), tight);
  const Decision both = plan_with_memory(a, a, tight * 4, tight, "row_hash");
  EXPECT_EQ(both.features.at("memory").at("budget_bytes"), tight);
  EXPECT_EQ(both.params, by_free.params);
}

// Room for C's arrays but not for row_hash's smallest scratch: row_hash is rejected naming the
// bytes and cuSPARSE (whose buffers are sized when run) is chosen.
TEST(SpgemmMemory, ACandidateThatDoesNotFitIsRejectedNamingTheBytes) {
  const Csr<double>& a = power_law();
  const Decision unbounded = plan_with_memory(a, a, std::nullopt);
  const int64_t limit = assumed_c_bytes(unbounded, a) + 1000;
  const Decision d = plan_with_memory(a, a, limit);
  EXPECT_EQ(d.variant, "cusparse") << describe(d);
  const std::string& why = candidate(d, "row_hash")->rejected_because;
  EXPECT_NE(why.find("bytes of device memory at its peak"), std::string::npos) << why;
  EXPECT_NE(why.find("more than the " + std::to_string(limit) + " bytes memory_limit_bytes allows"), std::string::npos) << why;
  expect_error_naming<UnsupportedError>([&] { plan_with_memory(a, a, limit, std::nullopt, "row_hash"); },
                                        "spgemm variant row_hash cannot run this problem: row_hash needs");
}

// NNZ(C) is known only after counting: when nothing fits with C at its upper bound, the plan
// sizes C at its lower one (the execution checks the exact size before allocating C).
TEST(SpgemmMemory, CIsSizedAtItsLowerBoundWhenNothingFitsAtItsUpper) {
  const Csr<double>& a = power_law();
  const Decision unbounded = plan_with_memory(a, a, std::nullopt);
  const nlohmann::json& bounds = unbounded.features.at("memory").at("c_nnz_bounds");
  ASSERT_LT(bounds[0].get<int64_t>(), bounds[1].get<int64_t>());
  const int64_t lower_c = variants::output_bytes(a.rows, bounds[0].get<int64_t>(), DType::F32);
  const int64_t upper_c = variants::output_bytes(a.rows, bounds[1].get<int64_t>(), DType::F32);
  const int64_t limit = (lower_c + upper_c) / 2;
  const Decision d = plan_with_memory(a, a, limit);
  EXPECT_EQ(d.features.at("memory").at("c_nnz_assumed"), bounds[0]);
  EXPECT_LE(peak(d, d.variant), limit);
}

TEST(SpgemmMemory, ALimitTooSmallForAnythingIsRefusedNamingTheBytes) {
  const Csr<double>& a = power_law();
  expect_error_naming<UnsupportedError>([&] { plan_with_memory(a, a, 1000); }, "more than the 1000 bytes memory_limit_bytes allows");
  expect_error_naming<UnsupportedError>([&] { plan_with_memory(a, a, 1000); }, "no spgemm variant can run this problem: row_hash needs");
  expect_error_naming<UnsupportedError>([&] { plan_with_memory(a, a, std::nullopt, 1000); }, "more than the 1000 bytes the device has free");
}

TEST(SpgemmMemory, ANonPositiveLimitIsRefusedNamingIt) {
  expect_error_naming<InvalidInputError>([] { plan_with_memory(small_a(), small_b(), 0); }, "memory_limit_bytes = 0 must be positive");
  expect_error_naming<InvalidInputError>([] { plan_with_memory(small_a(), small_b(), -5); }, "memory_limit_bytes = -5");
  Options o;
  o.memory_limit_bytes = -1;
  expect_error_naming<InvalidInputError>([&] { explain_spgemm(small_a().pattern(), small_b().pattern(), DType::F32, o); },
                                         "memory_limit_bytes = -1");
}

// explain compiles the chosen kernels without a GPU (NVRTC for the nominal sm_90) and an empty
// product plans without compiling.
TEST(SpgemmExplain, CompilesTheChosenKernelsWithoutAGpu) {
  const Csr<double> a = generate::uniform(200, 200, 6, 4);
  const Decision d = explain_spgemm(a.pattern(), a.pattern(), DType::F32);
  EXPECT_EQ(d.variant, "row_hash");
  EXPECT_NE(d.kernel_origin, KernelOrigin::None);
  Csr<double> empty = a;
  empty.row_ptr.assign(201, 0);
  empty.col_idx.clear();
  empty.values.clear();
  const Decision none = explain_spgemm(empty.pattern(), a.pattern(), DType::F64);
  EXPECT_EQ(none.features.at("products"), 0);
  EXPECT_EQ(none.kernel_origin, KernelOrigin::None);
}

// bitmap_tc: full precision unless a caller asks for TF32, fp16 or bf16 (f32 only), never searched at
// reduced precision, priced by its tile products, and passed over on parts without f64 and
// TF32 mma.
TEST(SpgemmPlan, BitmapTcRunsAtFullPrecisionUnlessReducedIsAskedFor) {
  Options o;
  o.variant = "bitmap_tc";
  Decision d = plan(small_a(), small_b(), o);
  EXPECT_EQ(d.params, nlohmann::json({{"precision", "full"}}));
  const SpgemmFeatures f = spgemm_features(small_a().pattern(), small_b().pattern());
  EXPECT_EQ(candidate(d, "bitmap_tc")->terms.at("tile_products"), double(f.tile_products));
  o.params = {{"precision", "tf32"}};
  EXPECT_EQ(plan(small_a(), small_b(), o).params.at("precision"), "tf32");
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o, DType::F64); }, "precision = \"tf32\" applies to f32");
  o.params = {{"precision", "int8"}};
  expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o); }, "precision = \"int8\" must be");
  for (const char* reduced : {"fp16", "bf16"}) {
    o.params = {{"precision", reduced}};
    EXPECT_EQ(plan(small_a(), small_b(), o).params.at("precision"), reduced);
    expect_error_naming<InvalidInputError>([&] { plan(small_a(), small_b(), o, DType::F64); }, "applies to f32 values");
  }
  for (const auto& [variant, params] : plan::spgemm_search_space(f, problem_of(small_a(), small_b(), DType::F32), {}))
    if (variant == "bitmap_tc") {
      EXPECT_EQ(params.at("precision"), "full");
    }
  plan::DeviceTarget turing;
  turing.sm = 75;
  const Decision old = plan::plan_spgemm(f, problem_of(small_a(), small_b(), DType::F32), turing, {});
  EXPECT_NE(candidate(old, "bitmap_tc")->rejected_because.find("sm_80 or later"), std::string::npos);
  SpgemmFeatures huge = f;  // more tile products than its int32 indices address
  huge.tile_products = 3000000000LL;
  const Decision d64 = plan::plan_spgemm(huge, problem_of(small_a(), small_b(), DType::F32), {}, {});
  EXPECT_NE(candidate(d64, "bitmap_tc")->rejected_because.find("3000000000 tile products"), std::string::npos);
}

}  // namespace
}  // namespace sparsejit
