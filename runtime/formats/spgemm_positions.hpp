// The task list of SpGEMM's numeric phase by positions (templates/spgemm_positions.cu,
// runtime/ops/spgemm_reuse): the work of C = A·B cut into blocks' tasks, built on the host from
// the patterns of A, B and C once per C, kept with the positions on C's handle.
//
// Products are numbered in A's order: entry e of A (row i, column k) owns products
// product_at[e] .. product_at[e + 1] - 1, one per entry of B's row k.
// A task multiplies A's entries [e0, e1) and writes C's entries [c0, c0 + c_count). A row's run
// is max(task_products, 4 x its C entries) products: a task that clears, stores or adds a row's
// entries has at least four products per entry to pay for it.
//   Store      whole rows: rows of at most shared_entries C entries grouped while their
//              products stay within task_products and their entries within shared_entries
//              (a row alone may hold up to 2 runs); a row of more entries (up to wide_entries)
//              alone. Summed in shared memory, then stored.
//   SharedAdd  a part of one row of at most wide_entries C entries whose products pass 2 runs:
//              the row's entries of A cut into runs, each summed in shared memory and added.
//   GlobalAdd  a part of one row of more than wide_entries C entries (runs of task_products):
//              added to C entry by entry.
// Tasks of rows of at most shared_entries C entries, and GlobalAdd tasks, come first (`narrow`
// of them: blocks of the smaller shared sums); the tasks of wider rows follow (blocks of
// wide_entries sums). The rows of SharedAdd and GlobalAdd tasks are listed in zero_ranges
// (c0, count): their C entries are zeroed before the tasks add. Rows without products join a
// Store task (they have no C entries).
//
// Example: rows with products 3, 0, 225, 4 (C entries 3, 0, 25, 4; row 2 is nine entries of A
// on one row of B of 25), task_products 8, shared_entries and wide_entries 32: row 2's run is
// 100 products, so it is cut into SharedAdd tasks of 4, 4 and 1 entries of A:
// Store{rows 0-1}, SharedAdd x 3, Store{row 3}; zero_ranges {3, 25}.
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

enum class ReuseMode : int32_t { Store = 0, SharedAdd = 1, GlobalAdd = 2 };

struct ReuseTask {
  int32_t e0 = 0, e1 = 0;       // A's entries
  int32_t c0 = 0, c_count = 0;  // C's entries
  int32_t r0 = 0, r1 = 0;       // A's rows holding e0 .. e1 - 1
  ReuseMode mode = ReuseMode::Store;
  int32_t unused = 0;           // pads a task to 8 ints (the template reads 8 per task)
};
static_assert(sizeof(ReuseTask) == 8 * sizeof(int32_t), "a task is 8 ints on the device");

struct ReuseTasks {
  std::vector<ReuseTask> tasks;
  int64_t narrow = 0;                // tasks[0, narrow) use the smaller shared sums
  std::vector<int32_t> product_at;   // nnz(A) + 1
  std::vector<int32_t> zero_ranges;  // (c0, count) pairs
  int64_t widest = 0;                // the most C entries of one task: positions are below it
  int64_t products = 0;
};

// The argument checks of both builders (this one and spgemm_positions_gpu.hpp's).
void check_reuse_task_inputs(int32_t a_cols, int32_t b_rows, int64_t task_products, int64_t shared_entries, int64_t wide_entries);

// c_row_ptr: C's row offsets (m + 1). Throws InvalidInputError naming the value when
// task_products or shared_entries is < 1 or wide_entries < shared_entries, when the shapes do
// not chain, or when the products pass 2^31 - 1 (int32 positions).
ReuseTasks build_reuse_tasks(PatternView a, PatternView b, const int32_t* c_row_ptr, int64_t task_products,
                             int64_t shared_entries, int64_t wide_entries);

}  // namespace sparsejit::formats
