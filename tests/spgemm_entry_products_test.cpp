// SpGEMM's numeric phase by entries, without a GPU: the work list (formats/spgemm_entry_products)
// on the header's example and on generated pairs — every product of A·B listed once, under the
// C entry of its row and B's column, entries in C's order and each entry's products in A's
// order, a head on each entry's first product, ranges covering the list in order (whole
// entries grouped greedily within range_products, longer entries cut into parts of one slot)
// — then each
// entry's listed products summed on the host against the reference product; C patterns the
// list cannot serve, and refusals naming the value; the plan's choice of it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "formats/spgemm_entry_products.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using formats::EntryProducts;
using formats::EntryRange;
using formats::kEntryHead;
using formats::kEntryIndexMask;

int32_t row_of(const Csr<double>& m, int64_t entry) {
  return int32_t(std::upper_bound(m.row_ptr.begin(), m.row_ptr.end(), int32_t(entry)) - m.row_ptr.begin()) - 1;
}

bool padding(const EntryProducts& t, int64_t p) { return t.product_a[std::size_t(p)] < 0; }

// The entry each place of the list is under: heads counted (padding: the entry before it).
std::vector<int64_t> entries_of(const EntryProducts& t) {
  std::vector<int64_t> entry(std::size_t(t.places()));
  int64_t at = -1;
  for (int64_t p = 0; p < t.places(); ++p) {
    if (t.product_b[std::size_t(p)] & kEntryHead) ++at;
    entry[std::size_t(p)] = at;
  }
  return entry;
}

// The header's promises, checked on any pair.
void expect_well_formed(const EntryProducts& t, const Csr<double>& a, const Csr<double>& b, const Csr<double>& c,
                        int64_t range_products) {
  ASSERT_TRUE(t.unusable.empty()) << t.unusable;
  ASSERT_EQ(t.product_b.size(), t.product_a.size());
  EXPECT_EQ(t.places() % formats::kRangeAlignment, 0);
  // Every product (entry e of A, entry f of B's row a_col[e]) listed once, under its C entry.
  std::vector<int64_t> first(a.col_idx.size() + 1, 0);
  for (std::size_t e = 0; e < a.col_idx.size(); ++e)
    first[e + 1] = first[e] + b.row_ptr[std::size_t(a.col_idx[e]) + 1] - b.row_ptr[std::size_t(a.col_idx[e])];
  ASSERT_EQ(t.products, first.back());
  std::vector<int> listed(std::size_t(t.products), 0);
  const std::vector<int64_t> entry = entries_of(t);
  ASSERT_TRUE(t.products == 0 || (t.product_b[0] & kEntryHead)) << "the list starts with a head";
  EXPECT_EQ(t.products == 0 ? 0 : entry.back() + 1, int64_t(c.col_idx.size())) << "a head for every entry of C";
  std::vector<char> in_range(std::size_t(t.places()), 0);
  for (const EntryRange& r : t.ranges) std::fill_n(in_range.begin() + r.p0, r.count, 1);
  int64_t padded = 0;
  for (int64_t p = 0; p < t.places(); ++p) {
    if (padding(t, p)) {
      EXPECT_EQ(t.product_b[std::size_t(p)], 0u) << "padding at " << p;
      EXPECT_FALSE(in_range[std::size_t(p)]) << "padding at " << p;
      ++padded;
      continue;
    }
    ASSERT_TRUE(in_range[std::size_t(p)]) << "product at " << p;
    const int32_t e = t.product_a[std::size_t(p)], f = int32_t(t.product_b[std::size_t(p)] & kEntryIndexMask);
    const int32_t k = a.col_idx[std::size_t(e)];
    ASSERT_GE(f, b.row_ptr[std::size_t(k)]) << "product " << p;
    ASSERT_LT(f, b.row_ptr[std::size_t(k) + 1]) << "product " << p;
    ++listed[std::size_t(first[std::size_t(e)] + f - b.row_ptr[std::size_t(k)])];
    const int64_t at = entry[std::size_t(p)];
    EXPECT_EQ(row_of(c, at), row_of(a, e)) << "product " << p;
    EXPECT_EQ(c.col_idx[std::size_t(at)], b.col_idx[std::size_t(f)]) << "product " << p;
    if (p > 0 && !padding(t, p - 1) && entry[std::size_t(p) - 1] == at) {
      EXPECT_LT(t.product_a[std::size_t(p) - 1], e) << "A's order within an entry";
    }
  }
  EXPECT_EQ(padded + t.products, t.places());
  EXPECT_LT(padded, int64_t(formats::kRangeAlignment) * (int64_t(t.ranges.size()) + 1));
  for (int64_t q = 0; q < t.products; ++q) ASSERT_EQ(listed[std::size_t(q)], 1) << "product " << q;
  // Ranges in order over the whole list, each of at most range_products products; whole entries
  // grouped greedily (a range and the next hold more than range_products between them, but
  // around a long entry); parts of one entry each, adding up to it.
  int64_t next = 0, previous_entry = -1, previous_slot = -1, previous_whole = -1;  // the count of a whole range just before
  std::vector<int64_t> slot_products(std::size_t(t.slots()), 0), slot_ranges(std::size_t(t.slots()), 0);
  for (const EntryRange& r : t.ranges) {
    if (r.slot < 0 || r.slot != previous_slot) {  // whole entries and a long one's first part start aligned
      EXPECT_EQ(r.p0 % formats::kRangeAlignment, 0) << "range at " << r.p0;
      ASSERT_GE(r.p0, next);
      ASSERT_LT(r.p0, next + formats::kRangeAlignment);
    } else {  // the next parts follow
      ASSERT_EQ(r.p0, next);
    }
    previous_slot = r.slot;
    ASSERT_GE(r.count, 1);
    ASSERT_LE(r.count, range_products);
    next = r.p0 + r.count;
    const int64_t last = r.p0 + r.count - 1;
    EXPECT_GE(entry[std::size_t(r.p0)], previous_entry) << "ranges in C's order";
    previous_entry = entry[std::size_t(last)];
    if (r.slot < 0) {
      EXPECT_TRUE(t.product_b[std::size_t(r.p0)] & kEntryHead) << "a range of whole entries starts one";
      EXPECT_EQ(r.c0, entry[std::size_t(r.p0)]);
      EXPECT_TRUE(last + 1 == t.places() || padding(t, last + 1) || (t.product_b[std::size_t(last) + 1] & kEntryHead)) << "and ends one";
      int64_t first_entry = 1;  // the products of the range's first entry
      while (first_entry < r.count && !(t.product_b[std::size_t(r.p0 + first_entry)] & kEntryHead)) ++first_entry;
      if (previous_whole >= 0) {
        EXPECT_GT(previous_whole + first_entry, range_products) << "greedy: range at " << r.p0;
      }
      previous_whole = r.count;
    } else {
      previous_whole = -1;
      ASSERT_LT(r.slot, t.slots());
      EXPECT_EQ(entry[std::size_t(r.p0)], r.c0);
      EXPECT_EQ(entry[std::size_t(last)], r.c0);
      slot_products[std::size_t(r.slot)] += r.count;
      ++slot_ranges[std::size_t(r.slot)];
    }
  }
  for (int64_t s = 0; s < t.slots(); ++s) {
    EXPECT_EQ(slot_ranges[std::size_t(s)], t.slot_parts[std::size_t(s)]) << "slot " << s;
    EXPECT_GT(slot_products[std::size_t(s)], range_products) << "only longer entries are cut";
  }
}

// C's values from the list: each entry's products summed in the listed order.
std::vector<double> sums_of(const EntryProducts& t, const Csr<double>& a, const Csr<double>& b, int64_t entries) {
  std::vector<double> sums(std::size_t(entries), 0.0);
  const std::vector<int64_t> entry = entries_of(t);
  for (int64_t p = 0; p < t.places(); ++p)
    if (!padding(t, p))
      sums[std::size_t(entry[std::size_t(p)])] +=
        a.values[std::size_t(t.product_a[std::size_t(p)])] * b.values[std::size_t(t.product_b[std::size_t(p)] & kEntryIndexMask)];
  return sums;
}

void expect_serves(const Csr<double>& a, const Csr<double>& b, int64_t range_products) {
  const Csr<double> c = reference::spgemm(a, b);
  const EntryProducts t = formats::build_entry_products(a.pattern(), b.pattern(), c.pattern(), range_products);
  expect_well_formed(t, a, b, c, range_products);
  const std::vector<double> sums = sums_of(t, a, b, int64_t(c.col_idx.size()));
  EXPECT_LE(reference::relative_error(sums, c.values), 1e-12);
}

Csr<double> with_values(Csr<double> m, uint64_t seed) {
  generate::fill_random(m.values, seed);
  return m;
}

// Entries of 3, 1, 9 and 2 products (A's row over nine columns; B's rows 0-2 reach column 0,
// row 0 column 1, every row column 2, rows 7 and 8 column 3) and range_products 4: entries 0
// and 1 in one range, entry 2 in three parts of 3 right after it, entry 3 at the next multiple
// of 4.
TEST(SpgemmEntryProducts, TheHeadersExample) {
  const Csr<double> a = test::csr_of_rows(1, 9, {{0, 1, 2, 3, 4, 5, 6, 7, 8}});
  const Csr<double> b = test::csr_of_rows(9, 4, {{0, 1, 2}, {0, 2}, {0, 2}, {2}, {2}, {2}, {2}, {2, 3}, {2, 3}});
  const Csr<double> c = reference::spgemm(a, b);
  const EntryProducts t = formats::build_entry_products(a.pattern(), b.pattern(), c.pattern(), 4);
  expect_well_formed(t, a, b, c, 4);
  ASSERT_EQ(t.ranges.size(), 5u);
  const std::vector<std::vector<int32_t>> want = {{0, 4, 0, -1}, {4, 3, 2, 0}, {7, 3, 2, 0}, {10, 3, 2, 0}, {16, 2, 3, -1}};
  for (std::size_t i = 0; i < want.size(); ++i) {
    const EntryRange& r = t.ranges[i];
    EXPECT_EQ((std::vector<int32_t>{r.p0, r.count, r.c0, r.slot}), want[i]) << "range " << i;
  }
  EXPECT_EQ(t.slot_parts, std::vector<int32_t>{3});
  // Entry 0's products: A's entries 0, 1, 2 times B's rows' first entries (0, 3, 5).
  EXPECT_EQ(std::vector<int32_t>(t.product_a.begin(), t.product_a.begin() + 4), (std::vector<int32_t>{0, 1, 2, 0}));
  EXPECT_EQ(t.product_b[0], kEntryHead | 0u);
  EXPECT_EQ(t.product_b[1], 3u);
  EXPECT_EQ(t.product_b[2], 5u);
  EXPECT_EQ(t.product_b[3], kEntryHead | 1u);
  EXPECT_EQ(t.places(), 20);
  for (int32_t place : {13, 14, 15, 18, 19}) EXPECT_EQ(t.product_a[std::size_t(place)], -1) << place;
}

TEST(SpgemmEntryProducts, GeneratedPairsAreListedWhole) {
  const Csr<double> uniform = with_values(generate::uniform(400, 400, 6, 3), 4);
  expect_serves(uniform, uniform, 64);
  expect_serves(uniform, uniform, 1);  // every entry of more than one product cut into parts
  const Csr<double> power = with_values(generate::chung_lu(2000, 16000, 2.1, 5), 6);
  expect_serves(power, power, 128);  // hubs: entries of hundreds of products, in parts
  const Csr<double> rect = with_values(generate::uniform(300, 700, 5, 7), 8);
  const Csr<double> rect_b = with_values(generate::uniform(700, 90, 4, 9), 10);
  expect_serves(rect, rect_b, 100);
  // Empty rows of A at both ends and inside; an empty product.
  const Csr<double> gaps = with_values(test::csr_of_rows(6, 6, {{}, {1, 2}, {}, {0, 5}, {3}, {}}), 11);
  expect_serves(gaps, gaps, 2);
  const Csr<double> none = test::csr_of_rows(3, 3, {{}, {}, {}});
  expect_serves(none, none, 8);
  const auto [hot_a, hot_b] = test::hot_entries(50, 300);  // 450 products a row on 8 entries
  expect_serves(with_values(hot_a, 12), with_values(hot_b, 13), 32);  // about 56 an entry: in parts
}

TEST(SpgemmEntryProducts, ACThatIsNotTheProductsPatternIsNotServed) {
  const Csr<double> a = test::csr_of_rows(2, 3, {{0, 1}, {2}});
  const Csr<double> b = test::csr_of_rows(3, 3, {{0}, {1}, {2}});
  // C's row 0 lacks column 1.
  EntryProducts t = formats::build_entry_products(a.pattern(), b.pattern(), test::csr_of_rows(2, 3, {{0}, {2}}).pattern(), 8);
  EXPECT_EQ(t.unusable, "entries: the product of A's entry 1 and B's entry 1 has no entry in C's row 0");
  EXPECT_TRUE(t.product_a.empty());
  // C's row 1 has an entry (column 0) that no product lands on.
  t = formats::build_entry_products(a.pattern(), b.pattern(), test::csr_of_rows(2, 3, {{0, 1}, {0, 2}}).pattern(), 8);
  EXPECT_EQ(t.unusable, "entries: no product lands on C's entry 2 (row 1)");
}

TEST(SpgemmEntryProducts, BadInputsAreRefusedNamingTheValue) {
  const Csr<double> a = test::csr_of_rows(2, 2, {{0}, {1}});
  const Csr<double> c = reference::spgemm(a, a);
  const auto message = [&](int64_t range_products, const Csr<double>& b, const Csr<double>& product) {
    return test::invalid_input_message(
        [&] { formats::build_entry_products(a.pattern(), b.pattern(), product.pattern(), range_products); });
  };
  EXPECT_NE(message(0, a, c).find("range_products = 0 must be at least 1"), std::string::npos);
  EXPECT_NE(message(8, test::csr_of_rows(3, 2, {{0}, {1}, {}}), c).find("B has 3 rows"), std::string::npos);
  EXPECT_NE(message(8, a, test::csr_of_rows(2, 3, {{0}, {1}})).find("C is 2x3 but A·B is 2x2"), std::string::npos);
}

TEST(SpgemmEntryPlan, EntriesBelowEightMillionProductsWhereTheyFit) {
  const plan::DeviceTarget h100;  // 132 multiprocessors
  // 5.4 M products: ranges of a 48th of a multiprocessor's share; 8 bytes a product.
  plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(test::spgemm_features_of(5'373'531, 43'250, 6'833), DType::F32, h100, {}, {});
  EXPECT_TRUE(p.by_positions) << p.why;
  EXPECT_EQ(p.kernel, PositionsKernel::Entries);
  EXPECT_EQ(p.entries.range_products, 5'373'531 / (48 * 132));
  const int64_t blocks = 5'373'531 / p.entries.range_products;
  EXPECT_EQ(p.bytes, plan::entry_sums_bytes(5'373'531 + 3 * (2 * blocks + 1), 3 * blocks + 1, blocks, DType::F32));
  EXPECT_EQ(plan::entry_sums_bytes(1000, 10, 2, DType::F64), 8000 + 160 + 2 * 16);
  // The device build's scratch: 16 bytes a product, 48 an entry of C (at most one a product), 8
  // an entry of A, 32 MiB for CUB.
  EXPECT_EQ(p.build_bytes, 16 * 5'373'531 + 48 * (5'373'531 + 1) + 8 * (43'250 + 1) + (int64_t(32) << 20));
  EXPECT_EQ(p.why, "positions: entries, 8 bytes a product, at most " + std::to_string(p.bytes) + " bytes kept on C and " +
                       std::to_string(p.build_bytes) + " more while they are built");
  // Small products: the shortest ranges; large ones in f64 alike (8 bytes of indices either way).
  EXPECT_EQ(plan::plan_spgemm_reuse(test::spgemm_features_of(100'000, 10'000, 2'000), DType::F64, h100, {}, {}).entries.range_products, 64);
  // Where 8 bytes a product do not fit but the blocks' 2 do: the blocks' kernel.
  const plan::SpgemmReusePlan tight = plan::plan_spgemm_reuse(test::spgemm_features_of(5'000'000, 43'250, 6'833), DType::F32, h100, {}, 30'000'000);
  EXPECT_TRUE(tight.by_positions) << tight.why;
  EXPECT_EQ(tight.kernel, PositionsKernel::Blocks);
  // Forced entries that do not fit: declined, not swapped.
  const plan::SpgemmReusePlan forced =
      plan::plan_spgemm_reuse(test::spgemm_features_of(5'000'000, 43'250, 6'833), DType::F32, h100, {}, 30'000'000, PositionsKernel::Entries);
  EXPECT_FALSE(forced.by_positions);
  EXPECT_EQ(forced.why.rfind("recompute: positions take at most ", 0), 0u) << forced.why;
  // The build's scratch counts: kept bytes that fit beside it, but not with it, go to blocks.
  const int64_t kept = plan::plan_spgemm_reuse(test::spgemm_features_of(2'000'000, 43'250, 6'833), DType::F32, h100, {}, {}).bytes;
  EXPECT_EQ(plan::plan_spgemm_reuse(test::spgemm_features_of(2'000'000, 43'250, 6'833), DType::F32, h100, {}, kept + 1).kernel,
            PositionsKernel::Blocks);
  // Forced kernels are taken at any size.
  EXPECT_EQ(plan::plan_spgemm_reuse(test::spgemm_features_of(50'000'000, 1'000'000, 100'000), DType::F32, h100, {}, {}, PositionsKernel::Entries).kernel,
            PositionsKernel::Entries);
  EXPECT_EQ(plan::plan_spgemm_reuse(test::spgemm_features_of(5'000, 1'000, 100), DType::F32, h100, {}, {}, PositionsKernel::Warps).kernel,
            PositionsKernel::Warps);
}

TEST(SpgemmEntryPlan, EntriesFromTwoMillionProductsAreTimedAgainstAWarpATask) {
  const plan::DeviceTarget h100;
  const SpgemmFeatures f = test::spgemm_features_of(5'000'000, 43'250, 6'833);
  const plan::SpgemmReusePlan p = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, {});
  EXPECT_EQ(p.kernel, PositionsKernel::Entries);  // the plan's kernel and reason stay the entries'
  EXPECT_TRUE(p.time_against_warps);
  EXPECT_EQ(p.why.rfind("positions: entries, ", 0), 0u) << p.why;
  const plan::SpgemmReusePlan warps = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, {}, PositionsKernel::Warps);
  EXPECT_EQ(p.warp.task_products, warps.warp.task_products);
  EXPECT_EQ(p.warp.region_entries, warps.warp.region_entries);
  const plan::SpgemmReusePlan entries = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, {}, PositionsKernel::Entries);
  EXPECT_FALSE(entries.time_against_warps);  // forced: never timed
  EXPECT_EQ(p.bytes, entries.bytes);
  // The builds one after the other: the larger scratch beside both kept lists.
  EXPECT_EQ(p.build_bytes, std::max(entries.build_bytes, warps.build_bytes));
  const int64_t both = p.bytes + warps.bytes + p.build_bytes;
  EXPECT_TRUE(plan::plan_spgemm_reuse(f, DType::F64, h100, {}, both).time_against_warps);
  const plan::SpgemmReusePlan tight = plan::plan_spgemm_reuse(f, DType::F64, h100, {}, both - 1);
  EXPECT_EQ(tight.kernel, PositionsKernel::Entries);
  EXPECT_FALSE(tight.time_against_warps);
  // Below kTimedEntriesProducts: entries alone.
  EXPECT_FALSE(plan::plan_spgemm_reuse(test::spgemm_features_of(plan::kTimedEntriesProducts - 1, 43'250, 6'833), DType::F64, h100, {}, {})
                   .time_against_warps);
  EXPECT_TRUE(plan::plan_spgemm_reuse(test::spgemm_features_of(plan::kTimedEntriesProducts, 43'250, 6'833), DType::F32, h100, {}, {})
                  .time_against_warps);
}

TEST(SpgemmEntryPlan, PositionsKernelsAreNamed) {
  EXPECT_STREQ(to_string(PositionsKernel::Auto), "auto");
  EXPECT_STREQ(to_string(PositionsKernel::Entries), "entries");
  EXPECT_STREQ(to_string(PositionsKernel::Warps), "warps");
  EXPECT_STREQ(to_string(PositionsKernel::Blocks), "blocks");
}

}  // namespace
}  // namespace sparsejit
