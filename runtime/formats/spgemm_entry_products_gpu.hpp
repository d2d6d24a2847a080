// SpGEMM's entry products (formats/spgemm_entry_products.hpp) built on the device, from the
// device CSRs of A, B and C: the host builder there is the specification, and every array
// comes out identical. The host builder reads the three patterns on the host and writes 8
// bytes a product there, and a virtual machine's host memory costs about 1 ms a megabyte on
// first touch: 40-140 ms for the first numeric call on 1-5 M products, where cuSPARSE's reuse
// setup takes 1-2 ms (bench/results/2026-12-02-h200-spgemm-entries). Here it is a stable radix
// sort of the products by their C entry and a few elementwise kernels.
//
// Steps (P products of A·B, E entries of C, U ranges' units: a long entry, or the whole
// entries of one range):
//   products  each entry of A's first product (a scan of its B row's lengths)
//   keys      each product's C entry: its row of A, its B entry, and its column bisected in
//             C's row (sorted columns; a column not there is a product C cannot hold)
//   sort      CUB's radix sort of the products by entry (stable: A's order within an entry)
//   starts    each entry's first product in the sorted stream (an entry none begins: an entry
//             no product lands on)
//   units     where a unit begins: the greedy ranges of the header's rule, each entry's next
//             range start found by bisection and the chain from entry 0 by pointer doubling
//             (ceil(log2(E + 1)) rounds); a scan numbering them, their sizes (places, ranges,
//             slots) and a scan placing them
//   counts    one synchronization: the sizes of the lists, and whether C can be served
//   lists     the ranges, the slots' part counts and every product at its place
// Scratch, stream-ordered (cudaMallocAsync): 16 bytes a product, 48 an entry of C, 8 an entry of
// A and CUB's temporary storage (plan::entry_build_bytes counts it for the planner).
#pragma once
#include <cuda.h>

#include <cstdint>
#include <string>

#include "formats/spgemm_entry_products.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/device_matrix.hpp"

namespace sparsejit::formats {

// A CSR pattern on the device: rows + 1 int32 offsets and nnz int32 columns.
struct DevicePattern {
  int32_t rows = 0, cols = 0;
  int64_t nnz = 0;
  CUdeviceptr row_ptr = 0, col_idx = 0;
};

template <class T>
DevicePattern device_pattern(const DeviceCsr<T>& m) {
  return {m.rows(), m.cols(), m.nnz(), m.row_ptr().ptr(), m.col_idx().ptr()};
}

struct DeviceEntryProducts {
  int64_t products = 0, places = 0, ranges = 0, slots = 0;
  DeviceBuffer product_a;   // places int32 (-1: padding)
  DeviceBuffer product_b;   // places uint32, kEntryHead on each entry's first product
  DeviceBuffer range_list;  // ranges EntryRange
  DeviceBuffer slot_parts;  // slots int32
  // Empty when usable; else why not, as build_entry_products says it (but where one of A·B and
  // C is empty and the other not); then no list is made.
  std::string unusable;
};

// Builds the list of `products` products (A·B's, which the caller knows from the SpGEMM
// features) on `stream`, after the work queued there; one synchronization. The arrays are
// complete in `stream`'s order on return. Throws InvalidInputError naming the value as
// build_entry_products does (range_products < 1, shapes that do not chain, more than 2^31 - 1
// products or places), and CudaError where the device counts other products than `products`.
DeviceEntryProducts build_entry_products_gpu(const Context& context, DevicePattern a, DevicePattern b, DevicePattern c,
                                             int64_t products, int64_t range_products, CUstream stream);

// A host copy in the host builder's layout (blocking). For tests.
EntryProducts download(const DeviceEntryProducts& list);

}  // namespace sparsejit::formats
