// SpGEMM's warp tasks (formats/spgemm_warp_tasks.hpp) built on the device, from the device CSRs
// of A, B and C: the host builder there is the specification, and every array comes out
// identical. On the host, blogcatalog squared (5.9 M segments) took 640 ms to build, most of it
// the first touch of new host memory, where cuSPARSE's whole reuse setup takes 82 ms
// (bench/results/2026-12-02-h200-spgemm-device-build). Here it is scans, bisections and one
// radix sort.
//
// Steps (rows of A; a cell is one entry of A in one slice of its row, for the rows that are
// tasks alone):
//   rows     each entry of A's first product (a scan of its B row's lengths), each row's
//            products, whether it is a task alone, and for the other rows the row the greedy
//            group beginning there ends before (bisection over C's row offsets and the rows'
//            products); the chain of groups from row 0 by pointer doubling
//   cells    one synchronization sizes them; each entry of a row alone walks its slices as the
//            host does (lower_bound from where the last slice ended), writing its run in each
//            (cells slice by slice, so a slice's runs are consecutive and in A's order)
//   slices   products, parts, tasks, groups and sums in scratch of every slice; each cell's
//            segments (a run, and one more for each cut of the slice's parts inside it)
//   counts   each row's segments, tasks, groups and sums in scratch, scanned; one
//            synchronization reads the totals
//   lists    the segments and tasks in the host's order, then the tasks stably sorted by their
//            products (most first) and numbered by steps
// B's rows must be sorted (the runs are bisected); where one is not, the result says so and
// the caller builds on the host, as it does where the cells would not fit the device.
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>

#include "formats/spgemm_entry_products_gpu.hpp"
#include "formats/spgemm_warp_tasks.hpp"
#include "sparsejit/device.hpp"

namespace sparsejit::formats {

struct DeviceWarpTasks {
  int64_t products = 0, segments = 0, tasks = 0, groups = 0, scratch_entries = 0;
  // At least the steps of every task (the steps' buffer is sized by it, with no wait for the
  // exact count); the exact count is on the device (steps_total) once the stream has run, and
  // download() reads it.
  int64_t max_steps = 0;
  DeviceBuffer task_list;      // tasks WarpTask, sorted, step_base set
  DeviceBuffer segment_b, segment_e, segment_at, group_scratch;
  DeviceBuffer steps_total;    // one int64
  // Empty when built; else why the device did not build them (the caller builds on the host).
  std::string host_only;
};

// Builds A·B's warp tasks (`products` products, as the SpGEMM features count them) on `stream`,
// after the work queued there; two synchronizations. `free_bytes` bounds the cells' scratch.
// Throws InvalidInputError naming the value as build_warp_tasks does (task_products < 1,
// region_entries out of range, shapes that do not chain, a C whose rows are not A·B's, more
// than 2^31 - 1 products, segments, sums in scratch or steps), and CudaError where the device
// counts other products than `products`.
DeviceWarpTasks build_warp_tasks_gpu(const Context& context, DevicePattern a, DevicePattern b, DevicePattern c, int64_t products,
                                     int64_t task_products, int64_t region_entries, int64_t free_bytes, CUstream stream);

// A host copy in the host builder's layout (blocking). For tests.
WarpTasks download(const DeviceWarpTasks& list);

}  // namespace sparsejit::formats
