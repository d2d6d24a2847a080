#include "formats/spgemm_entry_products.hpp"

#include <algorithm>
#include <limits>

#include "reference/parallel.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::formats {

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// The products before each row of A (rows + 1 of them).
std::vector<int64_t> products_before_rows(PatternView a, PatternView b) {
  std::vector<int64_t> before(std::size_t(a.rows) + 1, 0);
  for (int32_t r = 0; r < a.rows; ++r) {
    int64_t products = before[std::size_t(r)];
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) products += int64_t(b.row_ptr[a.col_idx[e] + 1]) - b.row_ptr[a.col_idx[e]];
    before[std::size_t(r) + 1] = products;
  }
  if (before.back() > kInt32Max)
    throw InvalidInputError("build_entry_products: A·B has " + std::to_string(before.back()) + " products, more than 2^31 - 1");
  return before;
}

int64_t aligned(int64_t place) { return (place + kRangeAlignment - 1) / kRangeAlignment * kRangeAlignment; }

// Two passes over the products, each over parts of the rows on threads of their own (a row
// writes only its own entries): each entry's count (and whether C's rows hold them all), then,
// once the ranges have placed every entry, each product written at its place.
struct Builder {
  PatternView a, b, c;
  std::vector<int64_t> row_bounds;  // the threads' parts of A's rows, by products
  EntryProducts out;
  std::vector<int32_t> start;  // per entry of C: its count, then its first place

  // Runs visit(r, e, f, q) for every product of rows [r0, r1): row, A's entry, B's entry and
  // its entry of C (-1 if the row of C has none).
  template <class Visit>
  void for_each_product(int64_t r0, int64_t r1, const Visit& visit) const {
    std::vector<int32_t> place_of(std::size_t(c.cols), -1);  // a column's entry in the row of C
    for (int64_t r = r0; r < r1; ++r) {
      for (int32_t q = c.row_ptr[r]; q < c.row_ptr[r + 1]; ++q) place_of[std::size_t(c.col_idx[q])] = q;
      for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e)
        for (int32_t f = b.row_ptr[a.col_idx[e]]; f < b.row_ptr[a.col_idx[e] + 1]; ++f)
          visit(int32_t(r), e, f, place_of[std::size_t(b.col_idx[f])]);
      for (int32_t q = c.row_ptr[r]; q < c.row_ptr[r + 1]; ++q) place_of[std::size_t(c.col_idx[q])] = -1;
    }
  }

  // start[q] = entry q's products; false when a product has no entry in its row of C or an
  // entry no product (out.unusable: the reason the first part of rows that has one found).
  bool count_entries() {
    start.assign(std::size_t(c.nnz()), 0);
    std::vector<std::string> refused(row_bounds.size() - 1);
    detail::run_parts(row_bounds, [&](int part, int64_t r0, int64_t r1) {
      std::string& why = refused[std::size_t(part)];
      for_each_product(r0, r1, [&](int32_t r, int32_t e, int32_t f, int32_t q) {
        if (q >= 0) {
          ++start[std::size_t(q)];
        } else if (why.empty()) {
          why = "entries: the product of A's entry " + std::to_string(e) + " and B's entry " + std::to_string(f) +
                " has no entry in C's row " + std::to_string(r);
        }
      });
      for (int64_t q = c.row_ptr[r0]; q < c.row_ptr[r1] && why.empty(); ++q)
        if (start[std::size_t(q)] == 0)
          why = "entries: no product lands on C's entry " + std::to_string(q) + " (row " +
                std::to_string(std::upper_bound(c.row_ptr + r0, c.row_ptr + r1 + 1, int32_t(q)) - c.row_ptr - 1) + ")";
    });
    for (const std::string& why : refused)
      if (!why.empty()) {
        out.unusable = why;
        return false;
      }
    return true;
  }

  // The ranges over the entries in C's order (the header's rule); start[q] becomes entry q's
  // first place.
  void cut_ranges(int64_t range_products) {
    int64_t end = 0;  // places taken, the open range's included
    EntryRange open;  // whole entries gathered so far (count 0: none)
    const auto close = [&] {
      if (open.count > 0) out.ranges.push_back(open);
      open = EntryRange{};
    };
    for (int64_t q = 0; q < c.nnz(); ++q) {
      const int64_t length = start[std::size_t(q)];
      const bool is_long = length > range_products;
      if (is_long || open.count + length > range_products) {
        close();
        end = aligned(end);
      }
      if (end + length > kInt32Max) throw InvalidInputError("build_entry_products: the list's places pass 2^31 - 1");
      if (is_long) {
        const int32_t slot = int32_t(out.slot_parts.size());
        const int64_t parts = (length + range_products - 1) / range_products;
        for (int64_t part = 0; part < parts; ++part) {
          const int64_t lo = length * part / parts, hi = length * (part + 1) / parts;
          out.ranges.push_back({int32_t(end + lo), int32_t(hi - lo), int32_t(q), slot});
        }
        out.slot_parts.push_back(int32_t(parts));
      } else {
        if (open.count == 0) {
          end = aligned(end);
          open = {int32_t(end), 0, int32_t(q), -1};
        }
        open.count += int32_t(length);
      }
      start[std::size_t(q)] = int32_t(end);
      end += length;
    }
    close();
    out.product_a.assign(std::size_t(aligned(end)), -1);
    out.product_b.assign(std::size_t(aligned(end)), 0u);
  }

  // Each product at its entry's next place (a row's cursors are the part's own: the host's
  // memory is touched once, which in a virtual machine costs about 1 ms a megabyte).
  void list_products() {
    detail::run_parts(row_bounds, [&](int, int64_t r0, int64_t r1) {
      std::vector<int32_t> cursor;  // the current row's entries' next places
      int32_t row = -1, row_first = 0;
      for_each_product(r0, r1, [&](int32_t r, int32_t e, int32_t f, int32_t q) {
        if (r != row) {
          row = r;
          row_first = c.row_ptr[r];
          cursor.assign(start.begin() + row_first, start.begin() + c.row_ptr[r + 1]);
        }
        const int32_t at = cursor[std::size_t(q - row_first)]++;
        out.product_a[std::size_t(at)] = e;
        out.product_b[std::size_t(at)] = uint32_t(f) | (at == start[std::size_t(q)] ? kEntryHead : 0u);
      });
    });
  }
};

}  // namespace

void check_entry_product_shapes(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols, int32_t c_rows, int32_t c_cols,
                                int64_t range_products) {
  if (range_products < 1)
    throw InvalidInputError("build_entry_products: range_products = " + std::to_string(range_products) + " must be at least 1");
  if (a_cols != b_rows)
    throw InvalidInputError("build_entry_products: A has " + std::to_string(a_cols) + " columns but B has " + std::to_string(b_rows) +
                            " rows");
  if (c_rows != a_rows || c_cols != b_cols)
    throw InvalidInputError("build_entry_products: C is " + std::to_string(c_rows) + "x" + std::to_string(c_cols) + " but A·B is " +
                            std::to_string(a_rows) + "x" + std::to_string(b_cols));
}

EntryProducts build_entry_products(PatternView a, PatternView b, PatternView c, int64_t range_products) {
  check_entry_product_shapes(a.rows, a.cols, b.rows, b.cols, c.rows, c.cols, range_products);
  const std::vector<int64_t> before = products_before_rows(a, b);
  const int parts = std::min(detail::part_count(before.back()), std::max(a.rows, 1));
  Builder builder{a, b, c, detail::balanced_row_bounds(before.data(), a.rows, parts, 1, 1), {}, {}};
  builder.out.products = before.back();
  if (!builder.count_entries()) return builder.out;
  builder.cut_ranges(range_products);
  builder.list_products();
  return builder.out;
}

}  // namespace sparsejit::formats
