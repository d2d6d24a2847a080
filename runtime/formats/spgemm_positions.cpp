#include "formats/spgemm_positions.hpp"

#include <algorithm>
#include <limits>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

void check_reuse_task_inputs(int32_t a_cols, int32_t b_rows, int64_t task_products, int64_t shared_entries, int64_t wide_entries) {
  if (task_products < 1)
    throw InvalidInputError("build_reuse_tasks: task_products = " + std::to_string(task_products) + " must be at least 1");
  if (shared_entries < 1)
    throw InvalidInputError("build_reuse_tasks: shared_entries = " + std::to_string(shared_entries) + " must be at least 1");
  if (wide_entries < shared_entries)
    throw InvalidInputError("build_reuse_tasks: wide_entries = " + std::to_string(wide_entries) + " is below shared_entries = " +
                            std::to_string(shared_entries));
  if (a_cols != b_rows)
    throw InvalidInputError("build_reuse_tasks: A has " + std::to_string(a_cols) + " columns but B has " + std::to_string(b_rows) +
                            " rows");
}

namespace {

// product_at of every entry of A: the running count of B's row lengths.
std::vector<int32_t> product_offsets(PatternView a, PatternView b) {
  const int64_t nnz = a.nnz();
  std::vector<int32_t> at(std::size_t(nnz) + 1);
  int64_t sum = 0;
  for (int64_t e = 0; e < nnz; ++e) {
    at[std::size_t(e)] = int32_t(sum);
    const int32_t k = a.col_idx[e];
    sum += b.row_ptr[k + 1] - b.row_ptr[k];
    if (sum > std::numeric_limits<int32_t>::max())
      throw InvalidInputError("build_reuse_tasks: A·B has more than 2^31 - 1 products (" + std::to_string(sum) +
                              " by entry " + std::to_string(e) + " of A)");
  }
  at[std::size_t(nnz)] = int32_t(sum);
  return at;
}

struct Builder {
  PatternView a;
  const int32_t* c_row_ptr;
  int64_t task_products, shared_entries, wide_entries;
  ReuseTasks out;
  std::vector<ReuseTask> wide;  // appended after the narrow tasks

  int64_t row_products(int32_t r) const {
    return int64_t(out.product_at[std::size_t(a.row_ptr[r + 1])]) - out.product_at[std::size_t(a.row_ptr[r])];
  }
  int64_t row_entries(int32_t r) const { return int64_t(c_row_ptr[r + 1]) - c_row_ptr[r]; }
  int64_t run(int32_t r) const { return std::max(task_products, 4 * row_entries(r)); }
  // A row that is not grouped with others: wider than the narrow sums, or more than two runs.
  bool alone(int32_t r) const { return row_entries(r) > shared_entries || row_products(r) > 2 * run(r); }

  void add(std::vector<ReuseTask>& to, int32_t e0, int32_t e1, int32_t r0, int32_t r1, ReuseMode mode) {
    ReuseTask t;
    t.e0 = e0;
    t.e1 = e1;
    t.r0 = r0;
    t.r1 = r1;
    t.c0 = c_row_ptr[r0];
    t.c_count = c_row_ptr[r1] - c_row_ptr[r0];
    t.mode = mode;
    to.push_back(t);
    if (t.c_count > out.widest) out.widest = t.c_count;
  }

  // A row of its own: one Store task when it fits the wide sums and two runs, else its entries
  // of A cut into runs that add into C's zeroed entries.
  void split_row(int32_t r) {
    const int64_t entries = row_entries(r);
    std::vector<ReuseTask>& to = entries > shared_entries && entries <= wide_entries ? wide : out.tasks;
    if (entries <= wide_entries && row_products(r) <= 2 * run(r)) {
      add(to, a.row_ptr[r], a.row_ptr[r + 1], r, r + 1, ReuseMode::Store);
      return;
    }
    const bool global = entries > wide_entries;
    const ReuseMode mode = global ? ReuseMode::GlobalAdd : ReuseMode::SharedAdd;
    const int64_t products_per_task = global ? task_products : run(r);
    out.zero_ranges.push_back(c_row_ptr[r]);
    out.zero_ranges.push_back(int32_t(entries));
    int32_t first = a.row_ptr[r];
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e)
      if (int64_t(out.product_at[std::size_t(e) + 1]) - out.product_at[std::size_t(first)] >= products_per_task) {
        add(to, first, e + 1, r, r + 1, mode);
        first = e + 1;
      }
    if (first < a.row_ptr[r + 1]) add(to, first, a.row_ptr[r + 1], r, r + 1, mode);
  }

  void build() {
    int32_t r = 0;
    while (r < a.rows) {
      if (alone(r)) {
        split_row(r++);
        continue;
      }
      const int32_t first = r;
      int64_t products = 0, entries = 0;
      while (r < a.rows && !alone(r) && (r == first || (products + row_products(r) <= task_products &&
                                                        entries + row_entries(r) <= shared_entries))) {
        products += row_products(r);
        entries += row_entries(r);
        ++r;
      }
      add(out.tasks, a.row_ptr[first], a.row_ptr[r], first, r, ReuseMode::Store);
    }
    out.narrow = int64_t(out.tasks.size());
    out.tasks.insert(out.tasks.end(), wide.begin(), wide.end());
  }
};

}  // namespace

ReuseTasks build_reuse_tasks(PatternView a, PatternView b, const int32_t* c_row_ptr, int64_t task_products,
                             int64_t shared_entries, int64_t wide_entries) {
  check_reuse_task_inputs(a.cols, b.rows, task_products, shared_entries, wide_entries);
  Builder builder{a, c_row_ptr, task_products, shared_entries, wide_entries, {}, {}};
  builder.out.product_at = product_offsets(a, b);
  builder.out.products = builder.out.product_at.back();
  builder.build();
  return std::move(builder.out);
}

}  // namespace sparsejit::formats
