// The work list of SpGEMM's numeric phase by positions a warp a task (templates/
// spgemm_warp_positions.cu, runtime/ops/spgemm_reuse_warps; the planner takes it for large
// products, plan/spgemm_reuse.hpp): C = A·B cut into warps' tasks, built on the host from the
// patterns of A, B and C once per C, kept with the positions on C's handle.
//
// A task is one warp's: a contiguous range of C's entries, [c0, c0 + c_count) with c_count at
// most region_entries (the warp's sums in shared memory), that no other task writes, and the
// products that land in it as a list of segments. A segment is a run of consecutive entries of
// one B row times one entry of A: (segment_b, segment_e) = (B's first entry, A's entry), its
// products numbered segment_at[s] .. segment_at[s + 1] - 1 (at least one; segment_at has one
// more element than there are segments, and a task's segments are consecutive). Positions are
// stored in that numbering: the product stream.
//   rows    rows of at most region_entries C entries grouped while their entries stay within
//           region_entries and their products within task_products: one segment per entry of
//           A (the whole of its B row), the task's C range their rows'.
//   slices  a row of more entries, or of more products: its C entries cut into
//           ceil(entries / region_entries) slices of equal width (within one), each a task; an
//           entry of A contributes the run of its B row whose columns fall in the slice (none:
//           no segment). Its C range is the slice.
//   parts   a task of more than 2 x task_products products is cut into parts of about
//           max(task_products, c_count) each (a segment may be cut in two), so that no warp's
//           chain of loads is much longer than another's; the parts of a group add their sums (atomically)
//           into the group's c_count sums in scratch, from group_scratch[group], and the last
//           to finish stores those in C and zeroes them and the group's counter for the next
//           call.
// Every C entry is in exactly one task's range (or group's), and the tasks are sorted by their
// products, most first, so that the longest start first and the warps of a block have about
// the same work.
// The warp's schedule (templates/spgemm_warp_positions.cu): its segments in rounds of 32 (a lane
// each), a round's products in steps of 32 (a lane each). Steps are numbered task by task in
// task order, round by round: task t's first is step_base, and a round of p products has
// ceil(p / 32) steps; the build pass writes a step's schedule there (which lanes start a
// segment, how many began before it, how many lanes share one C entry at most).
//
// Example: A row of 3 entries (B rows of 40 products each) with 100 C entries and
// region_entries 64: two slices of 50 entries; each entry's B row splits at the 51st C
// entry's column, so each slice task has three segments.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "sparsejit/error.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit::formats {

constexpr int64_t kRoundSegments = 32, kStepProducts = 32;
// A position holds a place in its task's range in 11 bits (and a rank above them).
constexpr int64_t kMaxRegionEntries = 2048;

struct WarpTask {
  int32_t s0 = 0, s1 = 0;       // segments [s0, s1)
  int32_t c0 = 0, c_count = 0;  // C's entries
  int32_t parts = 1;            // 1: stores its sums; more: one of a group's parts
  int32_t part = 0;             // which part
  int32_t group = 0;            // a parted task's group: its counter and group_scratch entry
  int32_t step_base = 0;        // the task's first step
};
static_assert(sizeof(WarpTask) == 8 * sizeof(int32_t), "a task is 8 ints on the device");

struct WarpTasks {
  std::vector<WarpTask> tasks;
  std::vector<int32_t> segment_b, segment_e;  // one per segment
  std::vector<int32_t> segment_at;            // segments + 1 offsets into the product stream
  std::vector<int32_t> group_scratch;         // a group's first sum in scratch
  int64_t products = 0;
  int64_t steps = 0;            // of every task
  int64_t scratch_entries = 0;  // the groups' sums
  int64_t widest = 0;           // the most C entries of one task

  int64_t segments() const { return int64_t(segment_b.size()); }
  int64_t groups() const { return int64_t(group_scratch.size()); }
  int64_t task_products(const WarpTask& t) const { return int64_t(segment_at[std::size_t(t.s1)]) - segment_at[std::size_t(t.s0)]; }
  // Steps of a task: its rounds' products over kStepProducts, rounded up, summed.
  int64_t task_steps(const WarpTask& t) const;
};

// Throws InvalidInputError naming the value when task_products < 1 or region_entries is not 1
// to kMaxRegionEntries, when the shapes do not chain, when C's pattern is not A·B's shape, or
// when the products, segments or steps pass 2^31 - 1 (int32 offsets).
WarpTasks build_warp_tasks(PatternView a, PatternView b, PatternView c, int64_t task_products, int64_t region_entries);

// C as the builder reads it: its shape and row offsets, and its columns at the few places that
// begin a slice of a wide row, asked for all at once (the runtime gathers them from the
// device, formats/device_gather.hpp, so that C's columns are never copied to the host).
struct ProductRows {
  int32_t rows = 0, cols = 0;
  const int32_t* row_ptr = nullptr;
};
using ColumnsAt = std::function<std::vector<int32_t>(const std::vector<int32_t>& places)>;

// The argument checks of both builders (this one and spgemm_warp_tasks_gpu.hpp's), and the
// error where C's row r has entries but A·B's no products, or the other way round.
void check_warp_task_inputs(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols, int32_t c_rows, int32_t c_cols,
                            int64_t task_products, int64_t region_entries);
InvalidInputError warp_tasks_row_mismatch(int32_t row, int64_t c_entries, int64_t products);

// The same tasks from C's rows and the columns that columns_at returns for the places asked.
WarpTasks build_warp_tasks(PatternView a, PatternView b, ProductRows c, const ColumnsAt& columns_at, int64_t task_products,
                           int64_t region_entries);

}  // namespace sparsejit::formats
