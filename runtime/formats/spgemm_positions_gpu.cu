#include "formats/spgemm_positions_gpu.hpp"

#include <cuda_runtime_api.h>

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

// How the host builder treats a row (spgemm_positions.hpp): grouped with its neighbours, alone
// in one Store task, or alone and cut into runs of A's entries that add into zeroed entries.
enum RowClass : int32_t { kGrouped = 0, kOneTask = 1, kRuns = 2 };

struct Operands {
  int32_t rows;
  int64_t a_nnz;
  const int32_t *a_row_ptr, *a_col, *b_row_ptr, *c_row_ptr;
  int64_t task_products, shared_entries, wide_entries;
};

__device__ int64_t c_entries(const Operands& o, int32_t r) { return o.c_row_ptr[r + 1] - o.c_row_ptr[r]; }
__device__ int64_t run_of(const Operands& o, int64_t entries) { return max(o.task_products, 4 * entries); }
// The wide blocks' list takes the rows alone of more than the narrow sums, up to the wide ones.
__device__ bool in_wide_list(const Operands& o, int64_t entries) { return entries > o.shared_entries && entries <= o.wide_entries; }
// A run's products: task_products where the row adds to C entry by entry, else the row's run.
__device__ int64_t run_products(const Operands& o, int64_t entries) {
  return entries > o.wide_entries ? o.task_products : run_of(o, entries);
}

// Per row: its class, and where it ends the chain's step (a grouped row its greedy group's end,
// a row alone the next row). end[rows] = rows.
__global__ void plan_rows(Operands o, const int32_t* product_at, int32_t* row_class, int32_t* end) {
  for (int64_t q = first_index(); q <= o.rows; q += grid_stride()) {
    const int32_t r = int32_t(q);
    if (r == o.rows) {
      end[r] = r;
      continue;
    }
    const int64_t entries = c_entries(o, r);
    const int64_t products = int64_t(product_at[o.a_row_ptr[r + 1]]) - product_at[o.a_row_ptr[r]];
    const int64_t run = run_of(o, entries);
    if (entries <= o.shared_entries && products <= 2 * run) {
      row_class[r] = kGrouped;
      end[r] = greedy_group_end(o.c_row_ptr, o.a_row_ptr, product_at, o.rows, r, o.shared_entries, o.task_products);
      continue;
    }
    row_class[r] = entries <= o.wide_entries && products <= 2 * run ? kOneTask : kRuns;
    end[r] = r + 1;
  }
}

// In a row cut into runs, each entry's run end: the entry after the first e' >= e whose products
// from e reach the row's run products (the row's end when none); any other entry ends its
// own chain. Each such row's first entry is a chain's head.
__global__ void run_ends(Operands o, const int32_t* product_at, const int32_t* row_class, int32_t* run_end, int32_t* heads) {
  for (int64_t q = first_index(); q <= o.a_nnz; q += grid_stride()) {
    const int32_t e = int32_t(q);
    if (e == o.a_nnz) {
      run_end[e] = e;
      continue;
    }
    const int32_t r = last_at_most(o.a_row_ptr, o.rows + 1, e);
    if (row_class[r] != kRuns) {
      run_end[e] = e;
      continue;
    }
    const int64_t goal = product_at[e] + run_products(o, c_entries(o, r));
    int32_t lo = e, hi = o.a_row_ptr[r + 1];  // the first e' in [e, row end) with product_at[e' + 1] >= goal
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo) / 2;
      if (product_at[mid + 1] >= goal) hi = mid;
      else lo = mid + 1;
    }
    run_end[e] = lo < o.a_row_ptr[r + 1] ? lo + 1 : o.a_row_ptr[r + 1];
    if (e == o.a_row_ptr[r]) heads[e] = 1;
  }
}

// A chain mark is a run's start only in a row cut into runs (a row's last run leads on to the
// next row's first entry).
__global__ void run_starts(Operands o, const int32_t* row_class, const int32_t* marks, int32_t* starts) {
  for (int64_t e = first_index(); e <= o.a_nnz; e += grid_stride())
    starts[e] = e < o.a_nnz && marks[e] && row_class[last_at_most(o.a_row_ptr, o.rows + 1, e)] == kRuns;
}

// A row's narrow tasks, wide tasks and zeroed ranges.
struct Share {
  int64_t narrow, wide, zero;
};
struct AddShares {
  __host__ __device__ Share operator()(const Share& x, const Share& y) const {
    return {x.narrow + y.narrow, x.wide + y.wide, x.zero + y.zero};
  }
};

__global__ void row_shares(Operands o, const int32_t* row_class, const int32_t* group_end, const int32_t* begins,
                           const int32_t* run_before, Share* shares, unsigned long long* widest) {
  for (int64_t q = first_index(); q <= o.rows; q += grid_stride()) {
    const int32_t r = int32_t(q);
    if (r == o.rows) {
      shares[r] = {0, 0, 0};
      continue;
    }
    const int64_t entries = c_entries(o, r);
    if (row_class[r] == kGrouped) {
      shares[r] = {begins[r] ? 1 : 0, 0, 0};
      if (begins[r]) atomicMax(widest, (unsigned long long)(o.c_row_ptr[group_end[r]] - o.c_row_ptr[r]));
      continue;
    }
    const int64_t tasks = row_class[r] == kOneTask ? 1 : int64_t(run_before[o.a_row_ptr[r + 1]]) - run_before[o.a_row_ptr[r]];
    const bool wide = in_wide_list(o, entries);
    shares[r] = {wide ? 0 : tasks, wide ? tasks : 0, row_class[r] == kRuns ? 1 : 0};
    if (tasks > 0) atomicMax(widest, (unsigned long long)entries);
    if (tasks > 0 && wide) atomicMax(widest + 1, (unsigned long long)entries);
  }
}

// What the synchronization reads.
struct Counts {
  int64_t products;
  Share total;
  unsigned long long widest, widest_wide;
};

__global__ void counts_of(Operands o, const int32_t* product_at, const Share* row_before, const unsigned long long* widest,
                          Counts* counts) {
  if (first_index() == 0) *counts = {product_at[o.a_nnz], row_before[o.rows], widest[0], widest[1]};
}

__device__ ReuseTask task_of(const Operands& o, int32_t e0, int32_t e1, int32_t r0, int32_t r1, ReuseMode mode) {
  ReuseTask t;
  t.e0 = e0;
  t.e1 = e1;
  t.r0 = r0;
  t.r1 = r1;
  t.c0 = o.c_row_ptr[r0];
  t.c_count = o.c_row_ptr[r1] - o.c_row_ptr[r0];
  t.mode = mode;
  return t;
}

// A row's first task in the list: the narrow tasks come first, then the wide.
__device__ int64_t first_task(const Operands& o, const Share& before, int64_t narrow, int32_t r) {
  return in_wide_list(o, c_entries(o, r)) ? narrow + before.wide : before.narrow;
}

// The groups' tasks, the rows' alone in one task, and the zeroed ranges of the rows in runs.
__global__ void write_row_tasks(Operands o, const int32_t* row_class, const int32_t* group_end, const int32_t* begins,
                                const Share* row_before, int64_t narrow, ReuseTask* tasks, int32_t* zero_list) {
  for (int64_t q = first_index(); q < o.rows; q += grid_stride()) {
    const int32_t r = int32_t(q);
    if (row_class[r] == kGrouped) {
      if (begins[r])
        tasks[row_before[r].narrow] =
            task_of(o, o.a_row_ptr[r], o.a_row_ptr[group_end[r]], r, group_end[r], ReuseMode::Store);
    } else if (row_class[r] == kOneTask) {
      tasks[first_task(o, row_before[r], narrow, r)] = task_of(o, o.a_row_ptr[r], o.a_row_ptr[r + 1], r, r + 1, ReuseMode::Store);
    } else {
      zero_list[2 * row_before[r].zero] = o.c_row_ptr[r];
      zero_list[2 * row_before[r].zero + 1] = int32_t(c_entries(o, r));
    }
  }
}

__global__ void write_run_tasks(Operands o, const int32_t* starts, const int32_t* run_before, const int32_t* run_end,
                                const Share* row_before, int64_t narrow, ReuseTask* tasks) {
  for (int64_t q = first_index(); q < o.a_nnz; q += grid_stride()) {
    if (!starts[q]) continue;
    const int32_t e = int32_t(q), r = last_at_most(o.a_row_ptr, o.rows + 1, e);
    const ReuseMode mode = c_entries(o, r) > o.wide_entries ? ReuseMode::GlobalAdd : ReuseMode::SharedAdd;
    const int64_t at = first_task(o, row_before[r], narrow, r) + (run_before[e] - run_before[o.a_row_ptr[r]]);
    tasks[at] = task_of(o, e, run_end[e], r, r + 1, mode);
  }
}

}  // namespace

DeviceReuseTasks build_reuse_tasks_gpu(const Context& context, DevicePattern a, DevicePattern b, DevicePattern c, int64_t products,
                                       int64_t task_products, int64_t shared_entries, int64_t wide_entries, CUstream stream) {
  check_reuse_task_inputs(a.cols, b.rows, task_products, shared_entries, wide_entries);
  if (products > kInt32Max)
    throw InvalidInputError("build_reuse_tasks: A·B has more than 2^31 - 1 products (" + std::to_string(products) + ")");
  context.make_current();
  const auto s = static_cast<cudaStream_t>(stream);
  const Operands o{a.rows,
                   a.nnz,
                   reinterpret_cast<const int32_t*>(a.row_ptr),
                   reinterpret_cast<const int32_t*>(a.col_idx),
                   reinterpret_cast<const int32_t*>(b.row_ptr),
                   reinterpret_cast<const int32_t*>(c.row_ptr),
                   task_products,
                   shared_entries,
                   wide_entries};
  const int64_t rows = a.rows, items = a.nnz + 1;
  DeviceReuseTasks out;
  out.product_at = DeviceBuffer(context, std::size_t(items) * 4);
  int32_t* const product_at = out.product_at.as<int32_t>();
  const Scratch<int32_t> lengths(items, s), row_class(rows + 1, s), group_end(rows + 1, s), row_jump(rows + 1, s);
  const Scratch<int32_t> row_spare(rows + 1, s), begins(rows + 1, s);
  const Scratch<int32_t> run_end(items, s), entry_jump(items, s), entry_spare(items, s), marks(items, s), starts(items, s);
  const Scratch<int32_t> run_before(items, s);
  const Scratch<Share> shares(rows + 1, s), row_before(rows + 1, s);
  const Scratch<unsigned long long> widest(2, s);  // of every task, of the wide ones
  const Scratch<Counts> counts(1, s);
  first_products(a.nnz, o.a_col, o.b_row_ptr, lengths.get(), product_at, s);
  launch("plan_rows", rows + 1, s, plan_rows, o, product_at, row_class.get(), group_end.get());
  cuda::check_runtime(cudaMemcpyAsync(row_jump.get(), group_end.get(), std::size_t(rows + 1) * 4, cudaMemcpyDeviceToDevice, s),
                      "cudaMemcpyAsync (reuse tasks)");
  mark_chain(rows + 1, row_jump.get(), row_spare.get(), begins.get(), s);
  cuda::check_runtime(cudaMemsetAsync(marks.get(), 0, std::size_t(items) * 4, s), "cudaMemsetAsync (reuse tasks)");
  launch("run_ends", items, s, run_ends, o, product_at, row_class.get(), run_end.get(), marks.get());
  cuda::check_runtime(cudaMemcpyAsync(entry_jump.get(), run_end.get(), std::size_t(items) * 4, cudaMemcpyDeviceToDevice, s),
                      "cudaMemcpyAsync (reuse tasks)");
  mark_chains(items, entry_jump.get(), entry_spare.get(), marks.get(), s);
  launch("run_starts", items, s, run_starts, o, row_class.get(), marks.get(), starts.get());
  run_cub("cub::DeviceScan::ExclusiveSum (reuse task runs)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, starts.get(), run_before.get(), int(items), s);
  });
  cuda::check_runtime(cudaMemsetAsync(widest.get(), 0, 16, s), "cudaMemsetAsync (reuse tasks)");
  launch("row_shares", rows + 1, s, row_shares, o, row_class.get(), group_end.get(), begins.get(), run_before.get(), shares.get(),
         widest.get());
  run_cub("cub::DeviceScan::ExclusiveScan (reuse task rows)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveScan(temp, bytes, shares.get(), row_before.get(), AddShares{}, Share{0, 0, 0}, int(rows + 1), s);
  });
  launch("counts_of", 1, s, counts_of, o, product_at, row_before.get(), widest.get(), counts.get());
  Counts k{};
  cuda::check_runtime(cudaMemcpyAsync(&k, counts.get(), sizeof(k), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (reuse task counts)");
  cuda::check_runtime(cudaStreamSynchronize(s), "cudaStreamSynchronize (reuse tasks)");
  if (k.products != products)
    throw CudaError("reuse tasks: the device counted " + std::to_string(k.products) + " products of A·B where the features count " +
                    std::to_string(products));
  out.products = products;
  out.narrow = k.total.narrow;
  out.tasks = k.total.narrow + k.total.wide;
  out.zero_ranges = k.total.zero;
  out.widest = int64_t(k.widest);
  out.widest_wide = int64_t(k.widest_wide);
  out.task_list = DeviceBuffer(context, std::size_t(out.tasks) * sizeof(ReuseTask));
  out.zero_list = DeviceBuffer(context, std::size_t(out.zero_ranges) * 8);
  launch("write_row_tasks", rows, s, write_row_tasks, o, row_class.get(), group_end.get(), begins.get(), row_before.get(), out.narrow,
         out.task_list.as<ReuseTask>(), out.zero_list.as<int32_t>());
  launch("write_run_tasks", a.nnz, s, write_run_tasks, o, starts.get(), run_before.get(), run_end.get(), row_before.get(), out.narrow,
         out.task_list.as<ReuseTask>());
  return out;
}

ReuseTasks download(const DeviceReuseTasks& d) {
  ReuseTasks t;
  t.tasks = d.task_list.download_as<ReuseTask>(std::size_t(d.tasks));
  t.narrow = d.narrow;
  t.product_at = d.product_at.download_as<int32_t>(d.product_at.bytes() / 4);
  t.zero_ranges = d.zero_list.download_as<int32_t>(std::size_t(2 * d.zero_ranges));
  t.widest = d.widest;
  t.products = d.products;
  return t;
}

}  // namespace sparsejit::formats
