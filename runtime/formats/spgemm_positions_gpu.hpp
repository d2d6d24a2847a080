// SpGEMM's blocks' tasks (formats/spgemm_positions.hpp) built on the device, from the device
// CSRs of A and B and C's row offsets: the host builder there is the specification, and every
// array comes out identical. On the host the product offsets alone are 4 bytes an entry of A of
// new host memory (uniform 300000 x 300000 of 16 a row: 42 ms to build here), where the device
// has them from one scan.
//
// Steps:
//   rows    each entry of A's first product (product_at, a scan of its B row's lengths), each
//           row's class (grouped; alone in one task; alone and cut into runs), for a grouped
//           row the row its greedy group ends before, and the chain of groups from row 0 by
//           pointer doubling
//   runs    in a row cut into runs, each entry's run end (bisection over product_at), and the
//           chains of runs from each such row's first entry, by pointer doubling over A's
//           entries
//   counts  each row's narrow tasks, wide tasks and zeroed ranges, scanned; one
//           synchronization reads their totals and the widest task
//   lists   the tasks (the narrow in row order, then the wide) and the zeroed ranges
#pragma once
#include <cuda.h>

#include <cstdint>

#include "formats/spgemm_entry_products_gpu.hpp"
#include "formats/spgemm_positions.hpp"
#include "sparsejit/device.hpp"

namespace sparsejit::formats {

struct DeviceReuseTasks {
  int64_t tasks = 0, narrow = 0, zero_ranges = 0, products = 0;
  int64_t widest = 0, widest_wide = 0;  // the most C entries of a task, of a wide task
  DeviceBuffer task_list;   // tasks ReuseTask
  DeviceBuffer product_at;  // nnz(A) + 1 int32
  DeviceBuffer zero_list;   // zero_ranges (c0, count) int32 pairs
};

// Builds A·B's blocks' tasks (`products` products, as the SpGEMM features count them; C's
// pattern is read for its row offsets only) on `stream`, after the work queued there; one
// synchronization. Throws InvalidInputError naming the value as build_reuse_tasks does
// (task_products or shared_entries < 1, wide_entries < shared_entries, shapes that do not
// chain, more than 2^31 - 1 products), and CudaError where the device counts other products
// than `products`.
DeviceReuseTasks build_reuse_tasks_gpu(const Context& context, DevicePattern a, DevicePattern b, DevicePattern c, int64_t products,
                                       int64_t task_products, int64_t shared_entries, int64_t wide_entries, CUstream stream);

// A host copy in the host builder's layout (blocking). For tests.
ReuseTasks download(const DeviceReuseTasks& list);

}  // namespace sparsejit::formats
