// The work list of SpGEMM's numeric phase by entries (templates/spgemm_entry_sums.cu,
// runtime/ops/spgemm_reuse_entries; the planner takes it for small products,
// plan/spgemm_reuse.hpp): every product of C = A·B listed under the C entry it lands on, so
// that a call only gathers, multiplies and sums runs of consecutive products, with no shared
// memory and no atomics but for entries cut into parts. Built on the host from the patterns of
// A, B and C once per C, kept on C's handle.
//
// The product list is in C's entry order (CSR order of C), and within an entry in A's order of
// its row (so each entry is summed in one fixed order: the same result every call). Product p
// is A's entry product_a[p] times B's entry product_b[p] & kEntryIndexMask; the top bit of
// product_b (kEntryHead) marks the first product of each entry. Every entry of C has at least
// one product (C is A·B's pattern), so the heads number C's entries.
// The list is cut into warp ranges of at most range_products products:
//   whole entries  consecutive entries grouped while their products stay within
//                  range_products: range {p0, count, c0, -1}, its entries c0, c0 + 1, ... one
//                  per head. The groups are the greedy ones (a group closes where the next
//                  entry would pass range_products), which the device finds in parallel by
//                  pointer doubling (spgemm_entry_products_gpu.hpp).
//   parts          an entry of more products is cut into ceil(products / range_products) parts
//                  of about equal length: {p0, count, c0 = the entry, slot}; the parts add
//                  their sums atomically into slot_sums[slot], and the last to finish (a
//                  counter per slot) stores the entry and zeroes both for the next call.
//                  slot_parts[slot] is the entry's part count.
// Every range of whole entries, and every long entry's first part, starts at a multiple of
// kRangeAlignment places (16 bytes of each list), so that a lane loads its products four at a
// time; the parts of a long entry follow one another, so an entry's products are always
// contiguous. The places after a range (or a long entry's last part) up to the next multiple of
// kRangeAlignment are padding (product_a -1, product_b 0) that no range holds.
// Example: entries of 3, 1, 9 and 2 products and range_products 4: ranges {0, 4, 0, -1}
// (entries 0 and 1), parts {4, 3, 2, 0}, {7, 3, 2, 0}, {10, 3, 2, 0} (slot_parts {3}), then
// {16, 2, 3, -1}; 20 places, padding at 13-15 and 18-19.
//
// This host builder is the specification: the runtime builds the same arrays on the device
// (spgemm_entry_products_gpu.hpp), tested against it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

constexpr uint32_t kEntryHead = 0x80000000u;
constexpr int64_t kRangeAlignment = 4;
constexpr uint32_t kEntryIndexMask = 0x7fffffffu;

struct EntryRange {
  int32_t p0 = 0, count = 0;  // products [p0, p0 + count)
  int32_t c0 = 0;             // the first entry (a part: its entry)
  int32_t slot = -1;          // -1: whole entries; else the part's entry's slot
};
static_assert(sizeof(EntryRange) == 4 * sizeof(int32_t), "a range is an int4 on the device");

struct EntryProducts {
  std::vector<int32_t> product_a;   // A's entry (-1: padding)
  std::vector<uint32_t> product_b;  // B's entry, kEntryHead on each entry's first product
  std::vector<EntryRange> ranges;
  std::vector<int32_t> slot_parts;
  int64_t products = 0;  // A·B's, without the padding

  int64_t places() const { return int64_t(product_a.size()); }
  // Empty when usable; else why not (a product whose column is not in C's row, or an entry
  // of C no product lands on: C is not A·B's pattern).
  std::string unusable;

  int64_t slots() const { return int64_t(slot_parts.size()); }
};

// InvalidInputError naming the value when range_products < 1, when the shapes do not chain, or
// when C is not A·B's shape (both builders' checks).
void check_entry_product_shapes(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols, int32_t c_rows, int32_t c_cols,
                                int64_t range_products);

// Throws InvalidInputError naming the value when range_products < 1, when the shapes do not
// chain, when C is not A·B's shape, or when the products or the list's places pass 2^31 - 1
// (int32 offsets).
EntryProducts build_entry_products(PatternView a, PatternView b, PatternView c, int64_t range_products);

}  // namespace sparsejit::formats
