#include "formats/spgemm_warp_tasks.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

}  // namespace

void check_warp_task_inputs(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols, int32_t c_rows, int32_t c_cols,
                            int64_t task_products, int64_t region_entries) {
  if (task_products < 1)
    throw InvalidInputError("build_warp_tasks: task_products = " + std::to_string(task_products) + " must be at least 1");
  if (region_entries < 1 || region_entries > kMaxRegionEntries)
    throw InvalidInputError("build_warp_tasks: region_entries = " + std::to_string(region_entries) + " must be 1 to " +
                            std::to_string(kMaxRegionEntries));
  if (a_cols != b_rows)
    throw InvalidInputError("build_warp_tasks: A has " + std::to_string(a_cols) + " columns but B has " + std::to_string(b_rows) +
                            " rows");
  if (c_rows != a_rows || c_cols != b_cols)
    throw InvalidInputError("build_warp_tasks: C is " + std::to_string(c_rows) + "x" + std::to_string(c_cols) + " but A·B is " +
                            std::to_string(a_rows) + "x" + std::to_string(b_cols));
}

InvalidInputError warp_tasks_row_mismatch(int32_t row, int64_t c_entries, int64_t products) {
  return InvalidInputError("build_warp_tasks: C's row " + std::to_string(row) + " has " + std::to_string(c_entries) +
                           " entries but A·B's has " + std::to_string(products) + " products (C is not A·B's pattern)");
}

namespace {

// A run of one B row's entries times one entry of A, before it is placed in the stream.
struct Run {
  int32_t b_first = 0, e = 0;
  int64_t length = 0;
};

struct Builder {
  PatternView a, b;
  ProductRows c;
  int64_t task_products, region_entries;
  WarpTasks out;
  std::vector<char> b_row_sorted;  // B's row has non-decreasing columns: its slices' runs are found by bisection
  std::vector<int32_t> slice_columns;  // the first column of every slice of every sliced row, in order
  std::size_t next_slice = 0;          // the first of the next sliced row's
  std::vector<int64_t> row_products;   // A·B's products of each row

  // A row that is a task alone: sliced by its C entries.
  bool alone(int64_t entries, int64_t products) const { return entries > region_entries || products > task_products; }
  int64_t slices_of(int64_t entries) const { return (entries + region_entries - 1) / region_entries; }
  int32_t slice_start(int32_t r, int64_t slices, int64_t i) const {
    return int32_t(c.row_ptr[r] + i * c_entries(r) / slices);
  }

  // Every slice's first place in C, row by row, for columns_at to read at once.
  std::vector<int32_t> slice_places() const {
    std::vector<int32_t> places;
    for (int32_t r = 0; r < a.rows; ++r) {
      const int64_t products = row_products[std::size_t(r)], entries = c_entries(r);
      if (products == 0 || !alone(entries, products)) continue;
      const int64_t slices = slices_of(entries);
      for (int64_t i = 0; i < slices; ++i) places.push_back(slice_start(r, slices, i));
    }
    return places;
  }

  int64_t b_length(int32_t k) const { return int64_t(b.row_ptr[k + 1]) - b.row_ptr[k]; }
  int64_t c_entries(int32_t r) const { return int64_t(c.row_ptr[r + 1]) - c.row_ptr[r]; }

  // Each row's products, counted once for the slices' places and the tasks.
  void count_row_products() {
    row_products.assign(std::size_t(a.rows), 0);
    for (int32_t r = 0; r < a.rows; ++r)
      for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) row_products[std::size_t(r)] += b_length(a.col_idx[e]);
  }

  void sort_flags() {
    b_row_sorted.assign(std::size_t(b.rows), 1);
    for (int32_t k = 0; k < b.rows; ++k)
      for (int32_t f = b.row_ptr[k] + 1; f < b.row_ptr[k + 1]; ++f)
        if (b.col_idx[f] < b.col_idx[f - 1]) {
          b_row_sorted[std::size_t(k)] = 0;
          break;
        }
  }

  void place(const Run& run) {
    const int64_t at = out.segment_at.back();
    if (at + run.length > kInt32Max)
      throw InvalidInputError("build_warp_tasks: A·B has more than 2^31 - 1 products (" + std::to_string(at + run.length) +
                              " by entry " + std::to_string(run.e) + " of A)");
    if (out.segments() >= kInt32Max) throw InvalidInputError("build_warp_tasks: more than 2^31 - 1 segments");
    out.segment_b.push_back(run.b_first);
    out.segment_e.push_back(run.e);
    out.segment_at.push_back(int32_t(at + run.length));
  }

  void add_task(int32_t s0, int32_t c0, int64_t c_count, int32_t parts, int32_t part, int32_t group) {
    WarpTask t;
    t.s0 = s0;
    t.s1 = int32_t(out.segments());
    t.c0 = c0;
    t.c_count = int32_t(c_count);
    t.parts = parts;
    t.part = part;
    t.group = group;
    out.tasks.push_back(t);
    out.widest = std::max(out.widest, c_count);
  }

  // One task of C entries [c0, c0 + c_count) over `runs`, or, when it has more than two tasks'
  // products, its parts of about max(task_products, c_count) (a part clears and adds all of
  // the group's sums: at most one for each of its products): cut at every part's share,
  // within a run if need be.
  void flush(std::vector<Run>& runs, int32_t c0, int64_t c_count) {
    int64_t products = 0;
    for (const Run& r : runs) products += r.length;
    if (products == 0) {
      runs.clear();
      return;
    }
    const int32_t s0 = int32_t(out.segments());
    if (products <= 2 * task_products) {
      for (const Run& r : runs) place(r);
      add_task(s0, c0, c_count, 1, 0, 0);
      runs.clear();
      return;
    }
    const int64_t part_products = std::max(task_products, c_count);
    const int64_t parts = (products + part_products - 1) / part_products;
    if (parts == 1) {
      for (const Run& r : runs) place(r);
      add_task(s0, c0, c_count, 1, 0, 0);
      runs.clear();
      return;
    }
    if (out.scratch_entries + c_count > kInt32Max)
      throw InvalidInputError("build_warp_tasks: the sums of rows cut into parts pass 2^31 - 1 entries");
    const int32_t group = int32_t(out.groups());
    out.group_scratch.push_back(int32_t(out.scratch_entries));
    out.scratch_entries += c_count;
    int64_t done = 0;  // products placed
    std::size_t next = 0;
    Run rest = runs.front();
    for (int64_t p = 0; p < parts; ++p) {
      const int64_t end = (p + 1) * products / parts;
      const int32_t first = int32_t(out.segments());
      while (done < end) {
        Run piece = rest;
        piece.length = std::min(rest.length, end - done);
        place(piece);
        done += piece.length;
        rest.b_first += int32_t(piece.length);
        rest.length -= piece.length;
        if (rest.length == 0 && ++next < runs.size()) rest = runs[next];
      }
      add_task(first, c0, c_count, int32_t(parts), int32_t(p), group);
    }
    runs.clear();
  }

  // Row r's C entries cut into slices of at most region_entries, each entry's B row into the
  // runs whose columns fall in each slice.
  void slice_row(int32_t r) {
    const int64_t slices = slices_of(c_entries(r));
    std::vector<std::vector<Run>> runs(static_cast<std::size_t>(slices));
    const auto first_slice = slice_columns.begin() + std::ptrdiff_t(next_slice);
    const std::vector<int32_t> first_column(first_slice, first_slice + slices);  // the first column of each slice
    next_slice += std::size_t(slices);
    const auto slice_of = [&](int32_t column) {
      return int64_t(std::upper_bound(first_column.begin() + 1, first_column.end(), column) - first_column.begin()) - 1;
    };
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
      const int32_t k = a.col_idx[e];
      const int32_t* lo = b.col_idx + b.row_ptr[k];
      const int32_t* hi = b.col_idx + b.row_ptr[k + 1];
      if (b_row_sorted[std::size_t(k)]) {
        const int32_t* from = lo;
        for (int64_t i = 0; i < slices && from < hi; ++i) {
          const int32_t* to = i + 1 < slices ? std::lower_bound(from, hi, first_column[std::size_t(i) + 1]) : hi;
          if (to > from) runs[std::size_t(i)].push_back({int32_t(from - b.col_idx), e, int64_t(to - from)});
          from = to;
        }
        continue;
      }
      // An unsorted row: its maximal runs of consecutive entries in one slice.
      for (const int32_t* f = lo; f < hi;) {
        const int64_t i = slice_of(*f);
        const int32_t* g = f + 1;
        while (g < hi && slice_of(*g) == i) ++g;
        runs[std::size_t(i)].push_back({int32_t(f - b.col_idx), e, int64_t(g - f)});
        f = g;
      }
    }
    for (int64_t i = 0; i < slices; ++i)
      flush(runs[std::size_t(i)], slice_start(r, slices, i), slice_start(r, slices, i + 1) - slice_start(r, slices, i));
  }

  void check_row(int32_t r, int64_t products) const {
    if ((products == 0) != (c_entries(r) == 0)) throw warp_tasks_row_mismatch(r, c_entries(r), products);
  }

  void build() {
    sort_flags();
    // About a segment an entry of A (more where rows are sliced): reserved, so that the lists
    // are written once and not copied as they grow.
    out.segment_b.reserve(std::size_t(a.nnz()));
    out.segment_e.reserve(std::size_t(a.nnz()));
    out.segment_at.reserve(std::size_t(a.nnz()) + 1);
    out.segment_at.assign(1, 0);
    std::vector<Run> group;
    int32_t group_c0 = 0;
    int64_t group_entries = 0, group_products = 0;
    for (int32_t r = 0; r < a.rows; ++r) {
      const int64_t products = row_products[std::size_t(r)];
      check_row(r, products);
      if (products == 0) continue;
      const int64_t entries = c_entries(r);
      const bool by_itself = alone(entries, products);
      if (by_itself || group_entries + entries > region_entries || group_products + products > task_products) {
        flush(group, group_c0, group_entries);
        group_entries = group_products = 0;
      }
      if (by_itself) {
        slice_row(r);
        continue;
      }
      if (group_entries == 0) group_c0 = c.row_ptr[r];
      for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) {
        const int32_t k = a.col_idx[e];
        if (b_length(k) > 0) group.push_back({b.row_ptr[k], e, b_length(k)});
      }
      group_entries += entries;
      group_products += products;
    }
    flush(group, group_c0, group_entries);
    out.products = out.segment_at.back();
    std::stable_sort(out.tasks.begin(), out.tasks.end(),
                     [&](const WarpTask& x, const WarpTask& y) { return out.task_products(x) > out.task_products(y); });
    for (WarpTask& t : out.tasks) {
      if (out.steps > kInt32Max) throw InvalidInputError("build_warp_tasks: more than 2^31 - 1 steps");
      t.step_base = int32_t(out.steps);
      out.steps += out.task_steps(t);
    }
  }
};

}  // namespace

int64_t WarpTasks::task_steps(const WarpTask& t) const {
  int64_t steps = 0;
  for (int64_t s = t.s0; s < t.s1; s += kRoundSegments) {
    const int64_t end = std::min<int64_t>(s + kRoundSegments, t.s1);
    steps += (int64_t(segment_at[std::size_t(end)]) - segment_at[std::size_t(s)] + kStepProducts - 1) / kStepProducts;
  }
  return steps;
}

WarpTasks build_warp_tasks(PatternView a, PatternView b, ProductRows c, const ColumnsAt& columns_at, int64_t task_products,
                           int64_t region_entries) {
  check_warp_task_inputs(a.rows, a.cols, b.rows, b.cols, c.rows, c.cols, task_products, region_entries);
  Builder builder{a, b, c, task_products, region_entries, {}, {}, {}, 0, {}};
  builder.count_row_products();
  const std::vector<int32_t> places = builder.slice_places();
  builder.slice_columns = columns_at(places);
  if (builder.slice_columns.size() != places.size())
    throw InvalidInputError("build_warp_tasks: " + std::to_string(builder.slice_columns.size()) + " columns for " +
                            std::to_string(places.size()) + " places");
  builder.build();
  return std::move(builder.out);
}

WarpTasks build_warp_tasks(PatternView a, PatternView b, PatternView c, int64_t task_products, int64_t region_entries) {
  const auto columns_at = [&](const std::vector<int32_t>& places) {
    std::vector<int32_t> columns;
    columns.reserve(places.size());
    for (int32_t place : places) columns.push_back(c.col_idx[place]);
    return columns;
  };
  return build_warp_tasks(a, b, ProductRows{c.rows, c.cols, c.row_ptr}, columns_at, task_products, region_entries);
}

}  // namespace sparsejit::formats
