#include "formats/spgemm_warp_tasks_gpu.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <limits>
#include <string>

#include "cuda/runtime_check.hpp"
#include "formats/gpu_build.cuh"
#include "sparsejit/error.hpp"

namespace sparsejit::formats {
namespace {

using namespace gpu_build;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int32_t kNoRow = 0x7F7F7F7F;  // a byte fill of 0x7F: no row found (rows are fewer)
// The cells' scratch: start, length and two scans of 4 bytes each.
constexpr int64_t kCellBytes = 16;

struct Operands {
  int32_t rows;  // of A and C
  int64_t a_nnz, b_nnz;
  int32_t b_rows;
  const int32_t *a_row_ptr, *a_col, *b_row_ptr, *b_col, *c_row_ptr, *c_col;
  int64_t task_products, region_entries;
};

// A row's (or a slice's) share of the lists.
struct Share {
  int64_t segments, tasks, groups, scratch;
};
struct AddShares {
  __host__ __device__ Share operator()(const Share& x, const Share& y) const {
    return {x.segments + y.segments, x.tasks + y.tasks, x.groups + y.groups, x.scratch + y.scratch};
  }
};

// What the first synchronization reads.
struct RowCounts {
  int64_t products, cells, slices;
  int32_t bad_row;       // the first row whose C entries and products disagree (kNoRow: none)
  int32_t unsorted_row;  // the first B row whose columns decrease (kNoRow: none)
  int64_t bad_entries, bad_products;
};

__device__ int64_t c_entries(const Operands& o, int32_t r) { return o.c_row_ptr[r + 1] - o.c_row_ptr[r]; }
__device__ int64_t row_products(const Operands& o, const int32_t* a_first, int32_t r) {
  return int64_t(a_first[o.a_row_ptr[r + 1]]) - a_first[o.a_row_ptr[r]];
}
__device__ bool alone(const Operands& o, int64_t entries, int64_t products) {
  return products > 0 && (entries > o.region_entries || products > o.task_products);
}
__device__ int64_t slices_of(const Operands& o, int64_t entries) { return (entries + o.region_entries - 1) / o.region_entries; }
__device__ int32_t slice_start(const Operands& o, int32_t r, int64_t slices, int64_t i) {
  return int32_t(o.c_row_ptr[r] + i * c_entries(o, r) / slices);
}

// The first f in [lo, hi) with b_col[f] >= column (hi when none): a sorted B row.
__device__ int32_t lower_bound(const int32_t* b_col, int32_t lo, int32_t hi, int32_t column) {
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (b_col[mid] < column) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

__global__ void entries_with_products(int64_t a_nnz, const int32_t* a_first, int32_t* nonempty) {
  for (int64_t e = first_index(); e < a_nnz; e += grid_stride()) nonempty[e] = a_first[e + 1] > a_first[e];
}

__global__ void unsorted_b_rows(Operands o, int32_t* unsorted_row) {
  for (int64_t f = first_index() + 1; f < o.b_nnz; f += grid_stride()) {
    if (o.b_col[f] >= o.b_col[f - 1]) continue;
    const int32_t k = last_at_most(o.b_row_ptr, o.b_rows + 1, f);
    if (o.b_row_ptr[k] < f) atomicMin(unsorted_row, k);  // f - 1 is in the same row
  }
}

// Per row: whether it is a task alone, its slices and cells, and the chain's jump: a row alone
// to the next row, any other to the row its greedy group ends before (the last r1 with the
// C entries and products of rows r .. r1 - 1 within region_entries and task_products: a row
// alone passes one of them by itself, so no group reaches past it). jump[rows] = rows.
__global__ void plan_rows(Operands o, const int32_t* a_first, int32_t* jump, int32_t* is_alone, int64_t* slices, int64_t* cells,
                          int32_t* bad_row) {
  for (int64_t q = first_index(); q <= o.rows; q += grid_stride()) {
    const int32_t r = int32_t(q);
    if (r == o.rows) {
      jump[r] = r;
      is_alone[r] = 0;
      slices[r] = cells[r] = 0;
      continue;
    }
    const int64_t entries = c_entries(o, r), products = row_products(o, a_first, r);
    if ((entries == 0) != (products == 0)) atomicMin(bad_row, r);
    const bool by_itself = alone(o, entries, products);
    is_alone[r] = by_itself;
    slices[r] = by_itself ? slices_of(o, entries) : 0;
    cells[r] = by_itself ? slices[r] * (o.a_row_ptr[r + 1] - o.a_row_ptr[r]) : 0;
    if (by_itself) {
      jump[r] = r + 1;
      continue;
    }
    jump[r] = greedy_group_end(o.c_row_ptr, o.a_row_ptr, a_first, o.rows, r, o.region_entries, o.task_products);
  }
}

__global__ void row_counts(Operands o, const int32_t* a_first, const int64_t* slice_at, const int64_t* cell_at, const int32_t* markers,
                           RowCounts* counts) {
  if (first_index() != 0) return;
  RowCounts k{a_first[o.a_nnz], cell_at[o.rows], slice_at[o.rows], markers[0], markers[1], 0, 0};
  if (k.bad_row != kNoRow) {
    k.bad_entries = c_entries(o, k.bad_row);
    k.bad_products = row_products(o, a_first, k.bad_row);
  }
  *counts = k;
}

// Where the rows alone are: a cell's row and slice, a slice's row.
struct Layout {
  const int32_t* is_alone;
  const int64_t *slice_at, *cell_at;  // rows + 1 exclusive scans
};

// Each entry of a row alone walks the row's slices as the host does, writing its run in each:
// cell slice_at x E + the entry's place in its row (E: the row's entries of A).
__global__ void fill_cells(Operands o, Layout l, int32_t* cell_start, int32_t* cell_length) {
  for (int64_t e = first_index(); e < o.a_nnz; e += grid_stride()) {
    const int32_t r = last_at_most(o.a_row_ptr, o.rows + 1, e);
    if (!l.is_alone[r]) continue;
    const int64_t slices = l.slice_at[r + 1] - l.slice_at[r], row_entries = o.a_row_ptr[r + 1] - o.a_row_ptr[r];
    const int64_t cell0 = l.cell_at[r] + (e - o.a_row_ptr[r]);
    const int32_t k = o.a_col[e], hi = o.b_row_ptr[k + 1];
    int32_t from = o.b_row_ptr[k];
    for (int64_t i = 0; i < slices; ++i) {
      int32_t to = from;
      if (from < hi) to = i + 1 < slices ? lower_bound(o.b_col, from, hi, o.c_col[slice_start(o, r, slices, i + 1)]) : hi;
      cell_start[cell0 + i * row_entries] = from;
      cell_length[cell0 + i * row_entries] = to - from;
      from = to;
    }
  }
}

// A slice of a row alone: its row, place and cells [cell0, cell1).
struct Slice {
  int32_t r;
  int64_t i, slices, cell0, cell1;
};
__device__ Slice slice_at_index(const Operands& o, const Layout& l, int64_t s) {
  Slice x;
  x.r = last_at_most(l.slice_at, o.rows + 1, s);
  x.i = s - l.slice_at[x.r];
  x.slices = l.slice_at[x.r + 1] - l.slice_at[x.r];
  const int64_t row_entries = o.a_row_ptr[x.r + 1] - o.a_row_ptr[x.r];
  x.cell0 = l.cell_at[x.r] + x.i * row_entries;
  x.cell1 = x.cell0 + row_entries;
  return x;
}

// The host's flush: 0 (no task), 1 (one task) or the parts of a slice of `products` products.
__device__ int64_t parts_of(const Operands& o, int64_t products, int64_t c_count) {
  if (products == 0) return 0;
  if (products <= 2 * o.task_products) return 1;
  const int64_t part_products = max(o.task_products, c_count);
  return (products + part_products - 1) / part_products;
}

// How many of the parts' cuts j x P / N (j = 1 .. N - 1) are at most x (x >= 0).
__device__ int64_t cuts_at_most(int64_t x, int64_t parts, int64_t products) {
  const int64_t below = ((x + 1) * parts + products - 1) / products - 1;
  return min(max(below, int64_t(0)), parts - 1);
}

__global__ void slice_shares(Operands o, Layout l, int64_t slice_count, const int32_t* cell_before, int64_t* slice_parts,
                             Share* shares) {
  for (int64_t s = first_index(); s <= slice_count; s += grid_stride()) {
    if (s == slice_count) {
      shares[s] = {0, 0, 0, 0};
      continue;
    }
    const Slice x = slice_at_index(o, l, s);
    const int64_t products = cell_before[x.cell1] - cell_before[x.cell0];
    const int64_t c_count = slice_start(o, x.r, x.slices, x.i + 1) - slice_start(o, x.r, x.slices, x.i);
    const int64_t parts = parts_of(o, products, c_count);
    slice_parts[s] = parts;
    shares[s] = {0, parts, parts > 1 ? 1 : 0, parts > 1 ? c_count : 0};
  }
}

// A cell's slice, and its run's products before it in the slice.
struct Cell {
  int32_t r;
  int64_t slice, row_entries, i, offset, parts, products;
};
__device__ Cell cell_at_index(const Operands& o, const Layout& l, const int32_t* cell_before, const int64_t* slice_parts, int64_t c) {
  Cell x;
  x.r = last_at_most(l.cell_at, o.rows + 1, c);
  x.row_entries = o.a_row_ptr[x.r + 1] - o.a_row_ptr[x.r];
  x.i = (c - l.cell_at[x.r]) / x.row_entries;
  x.slice = l.slice_at[x.r] + x.i;
  const int64_t cell0 = l.cell_at[x.r] + x.i * x.row_entries;
  x.offset = cell_before[c] - cell_before[cell0];
  x.products = cell_before[cell0 + x.row_entries] - cell_before[cell0];
  x.parts = slice_parts[x.slice];
  return x;
}

// A cell's segments: its run (none when empty), cut once more at each of its slice's cuts inside it.
__global__ void cell_segments(Operands o, Layout l, int64_t cell_count, const int32_t* cell_before, const int32_t* cell_length,
                              const int64_t* slice_parts, int32_t* segments) {
  for (int64_t c = first_index(); c < cell_count; c += grid_stride()) {
    const int64_t length = cell_length[c];
    if (length == 0) {
      segments[c] = 0;
      continue;
    }
    const Cell x = cell_at_index(o, l, cell_before, slice_parts, c);
    int64_t inside = 0;
    if (x.parts > 1)
      inside = cuts_at_most(x.offset + length - 1, x.parts, x.products) - cuts_at_most(x.offset, x.parts, x.products);
    segments[c] = int32_t(1 + inside);
  }
}

// Each row's share: a row alone its cells' segments and its slices' tasks; a row of a group
// its entries with products, and the group's task on the row that begins it.
__global__ void row_shares(Operands o, Layout l, const int32_t* a_first, const int32_t* nonempty_before, const int32_t* jump,
                           const int32_t* begins, const int32_t* cell_segments_before, const Share* slice_before, Share* shares) {
  for (int64_t q = first_index(); q <= o.rows; q += grid_stride()) {
    const int32_t r = int32_t(q);
    if (r == o.rows) {
      shares[r] = {0, 0, 0, 0};
      continue;
    }
    if (l.is_alone[r]) {
      const Share& first = slice_before[l.slice_at[r]];
      const Share& end = slice_before[l.slice_at[r + 1]];
      shares[r] = {int64_t(cell_segments_before[l.cell_at[r + 1]]) - cell_segments_before[l.cell_at[r]], end.tasks - first.tasks,
                   end.groups - first.groups, end.scratch - first.scratch};
      continue;
    }
    const int64_t group_products = int64_t(a_first[o.a_row_ptr[jump[r]]]) - a_first[o.a_row_ptr[r]];
    shares[r] = {int64_t(nonempty_before[o.a_row_ptr[r + 1]]) - nonempty_before[o.a_row_ptr[r]], begins[r] && group_products > 0 ? 1 : 0,
                 0, 0};
  }
}

struct Lists {
  int32_t *segment_b, *segment_e, *segment_at;
  WarpTask* tasks;  // in build order
  int32_t *part_first, *group_scratch;
};

// The segments of the rows of groups: one an entry of A with products, at its first product.
__global__ void write_group_segments(Operands o, Layout l, const int32_t* a_first, const int32_t* nonempty_before,
                                     const Share* row_before, Lists out) {
  for (int64_t e = first_index(); e < o.a_nnz; e += grid_stride()) {
    if (a_first[e + 1] == a_first[e]) continue;
    const int32_t r = last_at_most(o.a_row_ptr, o.rows + 1, e);
    if (l.is_alone[r]) continue;
    const int64_t s = row_before[r].segments + (nonempty_before[e] - nonempty_before[o.a_row_ptr[r]]);
    out.segment_b[s] = o.b_row_ptr[o.a_col[e]];
    out.segment_e[s] = int32_t(e);
    out.segment_at[s] = a_first[e];
  }
}

__global__ void write_group_tasks(Operands o, const int32_t* a_first, const int32_t* jump, const int32_t* begins, const int32_t* is_alone,
                                  const Share* row_before, Lists out) {
  for (int64_t q = first_index(); q < o.rows; q += grid_stride()) {
    const int32_t r = int32_t(q), end = jump[r];
    if (is_alone[r] || !begins[r] || a_first[o.a_row_ptr[end]] == a_first[o.a_row_ptr[r]]) continue;
    WarpTask t;
    t.s0 = int32_t(row_before[r].segments);
    t.s1 = int32_t(row_before[end].segments);
    t.c0 = o.c_row_ptr[r];
    t.c_count = o.c_row_ptr[end] - o.c_row_ptr[r];
    out.tasks[row_before[r].tasks] = t;
  }
}

// A cell's pieces (its run cut at its slice's cuts inside it), and for each cut in it the
// first segment of the part that begins there.
__global__ void write_cell_segments(Operands o, Layout l, int64_t cell_count, const int32_t* a_first, const int32_t* cell_start,
                                    const int32_t* cell_length, const int32_t* cell_before, const int32_t* cell_segments_before,
                                    const int64_t* slice_parts, const Share* slice_before, const Share* row_before, Lists out) {
  for (int64_t c = first_index(); c < cell_count; c += grid_stride()) {
    const int64_t length = cell_length[c];
    if (length == 0) continue;
    const Cell x = cell_at_index(o, l, cell_before, slice_parts, c);
    const int64_t row_cell0 = l.cell_at[x.r];
    const int64_t s0 = row_before[x.r].segments + (cell_segments_before[c] - cell_segments_before[row_cell0]);
    const int64_t at = a_first[o.a_row_ptr[x.r]] + (cell_before[c] - cell_before[row_cell0]);
    const int32_t e = o.a_row_ptr[x.r] + int32_t((c - row_cell0) - x.i * x.row_entries);
    int64_t piece = 0, from = 0;  // the piece and its first product in the run
    const int64_t j0 = x.parts > 1 ? cuts_at_most(x.offset - 1, x.parts, x.products) + 1 : 1;  // the first cut at or after the run
    for (int64_t j = j0; x.parts > 1 && j < x.parts; ++j) {
      const int64_t cut = j * x.products / x.parts - x.offset;  // in the run's products
      if (cut >= length) break;
      if (cut > 0) {
        out.segment_b[s0 + piece] = cell_start[c] + int32_t(from);
        out.segment_e[s0 + piece] = e;
        out.segment_at[s0 + piece] = int32_t(at + from);
        ++piece;
        from = cut;
      }
      out.part_first[slice_before[x.slice].tasks + j] = int32_t(s0 + piece);
    }
    out.segment_b[s0 + piece] = cell_start[c] + int32_t(from);
    out.segment_e[s0 + piece] = e;
    out.segment_at[s0 + piece] = int32_t(at + from);
  }
}

// A slice's task, or its parts (the part_first of parts 1 .. N - 1 written by the cells), and a
// parted slice's sums in scratch.
__global__ void write_slice_tasks(Operands o, Layout l, int64_t slice_count, const int32_t* cell_segments_before,
                                  const int64_t* slice_parts, const Share* slice_before, const Share* row_before, Lists out) {
  for (int64_t s = first_index(); s < slice_count; s += grid_stride()) {
    const int64_t parts = slice_parts[s];
    if (parts == 0) continue;
    const Slice x = slice_at_index(o, l, s);
    const int64_t row_segments0 = row_before[x.r].segments - cell_segments_before[l.cell_at[x.r]];
    const int32_t first = int32_t(row_segments0 + cell_segments_before[x.cell0]);
    const int32_t end = int32_t(row_segments0 + cell_segments_before[x.cell1]);
    const Share at = slice_before[s];
    const int64_t task0 = row_before[x.r].tasks + (at.tasks - slice_before[l.slice_at[x.r]].tasks);
    const int64_t group = row_before[x.r].groups + (at.groups - slice_before[l.slice_at[x.r]].groups);
    WarpTask t;
    t.c0 = slice_start(o, x.r, x.slices, x.i);
    t.c_count = slice_start(o, x.r, x.slices, x.i + 1) - t.c0;
    if (parts > 1) {
      out.group_scratch[group] = int32_t(row_before[x.r].scratch + (at.scratch - slice_before[l.slice_at[x.r]].scratch));
      t.parts = int32_t(parts);
      t.group = int32_t(group);
    }
    for (int64_t p = 0; p < parts; ++p) {
      t.part = int32_t(p);
      t.s0 = p == 0 ? first : out.part_first[at.tasks + p];
      t.s1 = p + 1 < parts ? out.part_first[at.tasks + p + 1] : end;
      out.tasks[task0 + p] = t;
    }
  }
}

__global__ void task_keys(int64_t tasks, const WarpTask* list, const int32_t* segment_at, int32_t* keys, int32_t* ids) {
  for (int64_t t = first_index(); t < tasks; t += grid_stride()) {
    keys[t] = segment_at[list[t].s1] - segment_at[list[t].s0];
    ids[t] = int32_t(t);
  }
}

// The sorted list, and each task's steps (WarpTasks::task_steps) for the scan that numbers them.
__global__ void gather_tasks(int64_t tasks, const WarpTask* unsorted, const int32_t* ids, const int32_t* segment_at, WarpTask* sorted,
                             int64_t* steps) {
  for (int64_t t = first_index(); t <= tasks; t += grid_stride()) {
    if (t == tasks) {
      steps[t] = 0;
      continue;
    }
    const WarpTask task = unsorted[ids[t]];
    sorted[t] = task;
    int64_t n = 0;
    for (int32_t s = task.s0; s < task.s1; s += int32_t(kRoundSegments)) {
      const int32_t end = min(s + int32_t(kRoundSegments), task.s1);
      n += (int64_t(segment_at[end]) - segment_at[s] + kStepProducts - 1) / kStepProducts;
    }
    steps[t] = n;
  }
}

__global__ void set_step_bases(int64_t tasks, const int64_t* step_before, WarpTask* sorted, int64_t* total) {
  for (int64_t t = first_index(); t <= tasks; t += grid_stride()) {
    if (t == tasks) *total = step_before[t];
    else sorted[t].step_base = int32_t(step_before[t]);
  }
}

template <class U>
void exclusive_sum(const char* name, const U* in, U* out, int64_t count, cudaStream_t s) {
  run_cub(name, s, [&](void* temp, std::size_t& bytes) { return cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, int(count), s); });
}

void exclusive_shares(const char* name, const Share* in, Share* out, int64_t count, cudaStream_t s) {
  run_cub(name, s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveScan(temp, bytes, in, out, AddShares{}, Share{0, 0, 0, 0}, int(count), s);
  });
}

template <class U>
U read_back(const U* device, cudaStream_t s, const char* what) {
  U value{};
  cuda::check_runtime(cudaMemcpyAsync(&value, device, sizeof(U), cudaMemcpyDeviceToHost, s), std::string("cudaMemcpyAsync (") + what + ")");
  cuda::check_runtime(cudaStreamSynchronize(s), std::string("cudaStreamSynchronize (") + what + ")");
  return value;
}

void check_totals(const Share& total) {
  if (total.segments > kInt32Max) throw InvalidInputError("build_warp_tasks: more than 2^31 - 1 segments");
  if (total.scratch > kInt32Max) throw InvalidInputError("build_warp_tasks: the sums of rows cut into parts pass 2^31 - 1 entries");
}

}  // namespace

DeviceWarpTasks build_warp_tasks_gpu(const Context& context, DevicePattern a, DevicePattern b, DevicePattern c, int64_t products,
                                     int64_t task_products, int64_t region_entries, int64_t free_bytes, CUstream stream) {
  check_warp_task_inputs(a.rows, a.cols, b.rows, b.cols, c.rows, c.cols, task_products, region_entries);
  if (products > kInt32Max)
    throw InvalidInputError("build_warp_tasks: A·B has more than 2^31 - 1 products (" + std::to_string(products) + ")");
  context.make_current();
  const auto s = static_cast<cudaStream_t>(stream);
  DeviceWarpTasks out;
  out.products = products;
  out.steps_total = DeviceBuffer(context, sizeof(int64_t));
  out.steps_total.fill_bytes_async(0, stream);
  const Operands o{a.rows,
                   a.nnz,
                   b.nnz,
                   b.rows,
                   reinterpret_cast<const int32_t*>(a.row_ptr),
                   reinterpret_cast<const int32_t*>(a.col_idx),
                   reinterpret_cast<const int32_t*>(b.row_ptr),
                   reinterpret_cast<const int32_t*>(b.col_idx),
                   reinterpret_cast<const int32_t*>(c.row_ptr),
                   reinterpret_cast<const int32_t*>(c.col_idx),
                   task_products,
                   region_entries};
  const int64_t rows = a.rows;
  // Entries of A: first products and which have any; rows: the plan of each.
  const Scratch<int32_t> lengths(a.nnz + 1, s), a_first(a.nnz + 1, s), nonempty(a.nnz + 1, s), nonempty_before(a.nnz + 1, s);
  const Scratch<int32_t> group_end(rows + 1, s), jump(rows + 1, s), spare(rows + 1, s), begins(rows + 1, s), is_alone(rows + 1, s);
  const Scratch<int32_t> markers(2, s);
  const Scratch<int64_t> slices(rows + 1, s), slice_at(rows + 1, s), cells(rows + 1, s), cell_at(rows + 1, s);
  const Scratch<RowCounts> counts(1, s);
  cuda::check_runtime(cudaMemsetAsync(nonempty.get(), 0, std::size_t(a.nnz + 1) * 4, s), "cudaMemsetAsync (warp tasks)");
  cuda::check_runtime(cudaMemsetAsync(markers.get(), 0x7F, 8, s), "cudaMemsetAsync (warp tasks)");
  first_products(a.nnz, o.a_col, o.b_row_ptr, lengths.get(), a_first.get(), s);
  launch("entries_with_products", a.nnz, s, entries_with_products, a.nnz, a_first.get(), nonempty.get());
  exclusive_sum("cub::DeviceScan::ExclusiveSum (warp tasks: entries with products)", nonempty.get(), nonempty_before.get(), a.nnz + 1, s);
  launch("unsorted_b_rows", b.nnz, s, unsorted_b_rows, o, markers.get() + 1);
  launch("plan_rows", rows + 1, s, plan_rows, o, a_first.get(), group_end.get(), is_alone.get(), slices.get(), cells.get(), markers.get());
  cuda::check_runtime(cudaMemcpyAsync(jump.get(), group_end.get(), std::size_t(rows + 1) * 4, cudaMemcpyDeviceToDevice, s),
                      "cudaMemcpyAsync (warp tasks)");
  mark_chain(rows + 1, jump.get(), spare.get(), begins.get(), s);
  exclusive_sum("cub::DeviceScan::ExclusiveSum (warp tasks: slices)", slices.get(), slice_at.get(), rows + 1, s);
  exclusive_sum("cub::DeviceScan::ExclusiveSum (warp tasks: cells)", cells.get(), cell_at.get(), rows + 1, s);
  launch("row_counts", 1, s, row_counts, o, a_first.get(), slice_at.get(), cell_at.get(), markers.get(), counts.get());
  const RowCounts k = read_back(counts.get(), s, "warp tasks: row counts");
  if (k.products != products)
    throw CudaError("warp tasks: the device counted " + std::to_string(k.products) + " products of A·B where the features count " +
                    std::to_string(products));
  if (k.bad_row != kNoRow) throw warp_tasks_row_mismatch(k.bad_row, k.bad_entries, k.bad_products);
  if (k.unsorted_row != kNoRow) {
    out.host_only = "B's row " + std::to_string(k.unsorted_row) + " is not sorted";
    return out;
  }
  if (k.cells * kCellBytes > free_bytes / 2) {
    out.host_only = std::to_string(k.cells) + " cells of rows cut into slices would take more than half the free device memory";
    return out;
  }
  if (k.cells > kInt32Max) throw InvalidInputError("build_warp_tasks: more than 2^31 - 1 segments");  // a cell per segment at most

  // Cells: each run, its products before it, its segments; slices: parts and shares; rows: shares.
  const Layout l{is_alone.get(), slice_at.get(), cell_at.get()};
  const Scratch<int32_t> cell_start(k.cells, s), cell_length(k.cells + 1, s), cell_before(k.cells + 1, s);
  const Scratch<int32_t> segments_of_cell(k.cells + 1, s), cell_segments_before(k.cells + 1, s);
  const Scratch<int64_t> slice_parts(k.slices + 1, s);
  const Scratch<Share> slice_share(k.slices + 1, s), slice_before(k.slices + 1, s), row_share(rows + 1, s), row_before(rows + 1, s);
  cuda::check_runtime(cudaMemsetAsync(cell_length.get(), 0, std::size_t(k.cells + 1) * 4, s), "cudaMemsetAsync (warp tasks)");
  cuda::check_runtime(cudaMemsetAsync(segments_of_cell.get(), 0, std::size_t(k.cells + 1) * 4, s), "cudaMemsetAsync (warp tasks)");
  launch("fill_cells", a.nnz, s, fill_cells, o, l, cell_start.get(), cell_length.get());
  exclusive_sum("cub::DeviceScan::ExclusiveSum (warp tasks: cell products)", cell_length.get(), cell_before.get(), k.cells + 1, s);
  launch("slice_shares", k.slices + 1, s, slice_shares, o, l, k.slices, cell_before.get(), slice_parts.get(), slice_share.get());
  launch("cell_segments", k.cells, s, cell_segments, o, l, k.cells, cell_before.get(), cell_length.get(), slice_parts.get(),
         segments_of_cell.get());
  exclusive_sum("cub::DeviceScan::ExclusiveSum (warp tasks: cell segments)", segments_of_cell.get(), cell_segments_before.get(),
                k.cells + 1, s);
  exclusive_shares("cub::DeviceScan::ExclusiveScan (warp tasks: slices)", slice_share.get(), slice_before.get(), k.slices + 1, s);
  launch("row_shares", rows + 1, s, row_shares, o, l, a_first.get(), nonempty_before.get(), group_end.get(), begins.get(),
         cell_segments_before.get(), slice_before.get(), row_share.get());
  exclusive_shares("cub::DeviceScan::ExclusiveScan (warp tasks: rows)", row_share.get(), row_before.get(), rows + 1, s);
  const Share total = read_back(row_before.get() + rows, s, "warp tasks: totals");
  check_totals(total);

  out.segments = total.segments;
  out.tasks = total.tasks;
  out.groups = total.groups;
  out.scratch_entries = total.scratch;
  // A round of 32 segments has ceil(p / 32) steps for its p products: at most p / 32 + 1.
  const int64_t rounds = (out.segments + kRoundSegments - 1) / kRoundSegments + out.tasks;
  out.max_steps = products / kStepProducts + rounds;
  if (out.max_steps > kInt32Max) throw InvalidInputError("build_warp_tasks: more than 2^31 - 1 steps");
  out.segment_b = DeviceBuffer(context, std::size_t(out.segments) * 4);
  out.segment_e = DeviceBuffer(context, std::size_t(out.segments) * 4);
  out.segment_at = DeviceBuffer(context, std::size_t(out.segments + 1) * 4);
  out.task_list = DeviceBuffer(context, std::size_t(out.tasks) * sizeof(WarpTask));
  out.group_scratch = DeviceBuffer(context, std::size_t(out.groups) * 4);
  const Scratch<WarpTask> unsorted(out.tasks, s);
  const Scratch<int32_t> part_first(out.tasks, s);
  const Lists lists{out.segment_b.as<int32_t>(), out.segment_e.as<int32_t>(), out.segment_at.as<int32_t>(), unsorted.get(),
                    part_first.get(),         out.group_scratch.as<int32_t>()};
  const int32_t end = int32_t(products);
  cuda::check_runtime(cudaMemcpyAsync(lists.segment_at + out.segments, &end, 4, cudaMemcpyHostToDevice, s), "cudaMemcpyAsync (warp tasks)");
  launch("write_group_segments", a.nnz, s, write_group_segments, o, l, a_first.get(), nonempty_before.get(), row_before.get(), lists);
  launch("write_group_tasks", rows, s, write_group_tasks, o, a_first.get(), group_end.get(), begins.get(), is_alone.get(),
         row_before.get(), lists);
  launch("write_cell_segments", k.cells, s, write_cell_segments, o, l, k.cells, a_first.get(), cell_start.get(), cell_length.get(),
         cell_before.get(), cell_segments_before.get(), slice_parts.get(), slice_before.get(), row_before.get(), lists);
  launch("write_slice_tasks", k.slices, s, write_slice_tasks, o, l, k.slices, cell_segments_before.get(), slice_parts.get(),
         slice_before.get(), row_before.get(), lists);

  // Most products first (a stable sort keeps the build order among equals), then the steps.
  const Scratch<int32_t> keys(out.tasks, s), alt_keys(out.tasks, s), ids(out.tasks, s), alt_ids(out.tasks, s);
  const Scratch<int64_t> steps(out.tasks + 1, s), step_before(out.tasks + 1, s);
  launch("task_keys", out.tasks, s, task_keys, out.tasks, unsorted.get(), lists.segment_at, keys.get(), ids.get());
  cub::DoubleBuffer<int32_t> sort_keys(keys.get(), alt_keys.get()), sort_ids(ids.get(), alt_ids.get());
  if (out.tasks > 0)
    run_cub("cub::DeviceRadixSort::SortPairsDescending (warp tasks)", s, [&](void* temp, std::size_t& bytes) {
      return cub::DeviceRadixSort::SortPairsDescending(temp, bytes, sort_keys, sort_ids, int(out.tasks), 0, 32, s);
    });
  launch("gather_tasks", out.tasks + 1, s, gather_tasks, out.tasks, unsorted.get(), sort_ids.Current(), lists.segment_at,
         out.task_list.as<WarpTask>(), steps.get());
  exclusive_sum("cub::DeviceScan::ExclusiveSum (warp tasks: steps)", steps.get(), step_before.get(), out.tasks + 1, s);
  launch("set_step_bases", out.tasks + 1, s, set_step_bases, out.tasks, step_before.get(), out.task_list.as<WarpTask>(),
         out.steps_total.as<int64_t>());
  return out;
}

WarpTasks download(const DeviceWarpTasks& d) {
  WarpTasks t;
  t.products = d.products;
  t.tasks = d.task_list.download_as<WarpTask>(std::size_t(d.tasks));
  t.segment_b = d.segment_b.download_as<int32_t>(std::size_t(d.segments));
  t.segment_e = d.segment_e.download_as<int32_t>(std::size_t(d.segments));
  t.segment_at = d.segment_at.download_as<int32_t>(std::size_t(d.segments + 1));
  t.group_scratch = d.group_scratch.download_as<int32_t>(std::size_t(d.groups));
  t.steps = d.steps_total.download_as<int64_t>(1)[0];
  t.scratch_entries = d.scratch_entries;
  for (const WarpTask& task : t.tasks) t.widest = std::max<int64_t>(t.widest, task.c_count);
  return t;
}

}  // namespace sparsejit::formats
