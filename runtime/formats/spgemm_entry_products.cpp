#include "formats/spgemm_entry_products.hpp"

#include <algorithm>
#include <limits>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

void check_inputs(PatternView a, PatternView b, PatternView c, int64_t range_products) {
  if (range_products < 1)
    throw InvalidInputError("build_entry_products: range_products = " + std::to_string(range_products) + " must be at least 1");
  if (a.cols != b.rows)
    throw InvalidInputError("build_entry_products: A has " + std::to_string(a.cols) + " columns but B has " +
                            std::to_string(b.rows) + " rows");
  if (c.rows != a.rows || c.cols != b.cols)
    throw InvalidInputError("build_entry_products: C is " + std::to_string(c.rows) + "x" + std::to_string(c.cols) +
                            " but A·B is " + std::to_string(a.rows) + "x" + std::to_string(b.cols));
}

int64_t count_products(PatternView a, PatternView b) {
  int64_t products = 0;
  for (int64_t e = 0; e < a.nnz(); ++e) {
    const int32_t k = a.col_idx[e];
    products += int64_t(b.row_ptr[k + 1]) - b.row_ptr[k];
  }
  if (products > kInt32Max)
    throw InvalidInputError("build_entry_products: A·B has " + std::to_string(products) + " products, more than 2^31 - 1");
  return products;
}

struct Builder {
  PatternView a, b, c;
  EntryProducts out;
  std::vector<int32_t> place_of;  // a column's place in the current row of C, -1 elsewhere
  std::vector<int32_t> start;     // per entry of the current row: its first product, from the row's first
  std::vector<int32_t> cursor;    // where the entry's next product goes

  // Counts row r's products per entry of C into start[q + 1]; false (with out.unusable) when
  // C's row does not hold them all or one of its entries has none.
  bool count_row(int32_t r) {
    const int32_t c_lo = c.row_ptr[r], entries = c.row_ptr[r + 1] - c_lo;
    start.assign(std::size_t(entries) + 1, 0);
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e)
      for (int32_t f = b.row_ptr[a.col_idx[e]]; f < b.row_ptr[a.col_idx[e] + 1]; ++f) {
        const int32_t q = place_of[std::size_t(b.col_idx[f])];
        if (q < 0) {
          out.unusable = "entries: the product of A's entry " + std::to_string(e) + " and B's entry " + std::to_string(f) +
                         " has no entry in C's row " + std::to_string(r);
          return false;
        }
        ++start[std::size_t(q) + 1];
      }
    for (int32_t q = 0; q < entries; ++q)
      if (start[std::size_t(q) + 1] == 0) {
        out.unusable = "entries: no product lands on C's entry " + std::to_string(c_lo + q) + " (row " + std::to_string(r) + ")";
        return false;
      }
    return true;
  }

  // Lists row r's products from `first` on, entry by entry, each entry's in A's order.
  bool list_row(int32_t r, int64_t first) {
    const int32_t c_lo = c.row_ptr[r], entries = c.row_ptr[r + 1] - c_lo;
    for (int32_t q = 0; q < entries; ++q) place_of[std::size_t(c.col_idx[c_lo + q])] = q;
    const bool fits = count_row(r);
    if (fits) {
      for (int32_t q = 0; q < entries; ++q) start[std::size_t(q) + 1] += start[std::size_t(q)];
      cursor.assign(start.begin(), start.end() - 1);
      for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e)
        for (int32_t f = b.row_ptr[a.col_idx[e]]; f < b.row_ptr[a.col_idx[e] + 1]; ++f) {
          const std::size_t p = std::size_t(first + cursor[std::size_t(place_of[std::size_t(b.col_idx[f])])]++);
          out.product_a[p] = e;
          out.product_b[p] = uint32_t(f);
        }
      for (int32_t q = 0; q < entries; ++q) out.product_b[std::size_t(first + start[std::size_t(q)])] |= kEntryHead;
    }
    for (int32_t q = 0; q < entries; ++q) place_of[std::size_t(c.col_idx[c_lo + q])] = -1;
    return fits;
  }

  // The warp ranges over the listed products, entry by entry, each then moved to the next
  // aligned place (the list padded between them).
  void cut_ranges(int64_t range_products) {
    EntryRange open;  // whole entries gathered so far (count 0: none)
    const auto close = [&] {
      if (open.count > 0) out.ranges.push_back(open);
      open = EntryRange{};
    };
    int64_t p = 0;
    const int64_t entries = c.nnz();
    for (int64_t entry = 0; entry < entries; ++entry) {
      int64_t next = p + 1;  // the entry's products run to the next head
      while (next < out.products && (out.product_b[std::size_t(next)] & kEntryHead) == 0) ++next;
      const int64_t length = next - p;
      if (length > range_products) {
        close();
        const int32_t slot = int32_t(out.slot_parts.size());
        const int64_t parts = (length + range_products - 1) / range_products;
        for (int64_t part = 0; part < parts; ++part) {
          const int64_t lo = p + length * part / parts, hi = p + length * (part + 1) / parts;
          out.ranges.push_back({int32_t(lo), int32_t(hi - lo), int32_t(entry), slot});
        }
        out.slot_parts.push_back(int32_t(parts));
      } else {
        if (open.count + length > range_products) close();
        if (open.count == 0) open = {int32_t(p), 0, int32_t(entry), -1};
        open.count += int32_t(length);
      }
      p = next;
    }
    close();
    align_ranges();
  }

  void align_ranges() {
    const auto aligned = [](int64_t at) { return (at + kRangeAlignment - 1) / kRangeAlignment * kRangeAlignment; };
    int64_t places = 0;
    for (const EntryRange& r : out.ranges) places = aligned(places) + r.count;
    places = aligned(places);
    if (places > kInt32Max)
      throw InvalidInputError("build_entry_products: the list's " + std::to_string(places) + " places pass 2^31 - 1");
    std::vector<int32_t> product_a(std::size_t(places), -1);
    std::vector<uint32_t> product_b(std::size_t(places), 0u);
    int64_t at = 0;
    for (EntryRange& r : out.ranges) {
      at = aligned(at);
      std::copy_n(out.product_a.begin() + r.p0, r.count, product_a.begin() + at);
      std::copy_n(out.product_b.begin() + r.p0, r.count, product_b.begin() + at);
      r.p0 = int32_t(at);
      at += r.count;
    }
    out.product_a = std::move(product_a);
    out.product_b = std::move(product_b);
  }
};

}  // namespace

EntryProducts build_entry_products(PatternView a, PatternView b, PatternView c, int64_t range_products) {
  check_inputs(a, b, c, range_products);
  Builder builder{a, b, c, {}, std::vector<int32_t>(std::size_t(c.cols), -1), {}, {}};
  EntryProducts& out = builder.out;
  out.products = count_products(a, b);
  out.product_a.resize(std::size_t(out.products));
  out.product_b.resize(std::size_t(out.products));
  int64_t first = 0;
  for (int32_t r = 0; r < a.rows; ++r) {
    if (!builder.list_row(r, first)) {
      out.product_a.clear();
      out.product_b.clear();
      return out;
    }
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) first += int64_t(b.row_ptr[a.col_idx[e] + 1]) - b.row_ptr[a.col_idx[e]];
  }
  builder.cut_ranges(range_products);
  return out;
}

}  // namespace sparsejit::formats
