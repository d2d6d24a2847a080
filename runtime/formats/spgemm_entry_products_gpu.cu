#include "formats/spgemm_entry_products_gpu.hpp"

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
// An unsigned marker nothing was found at (a byte fill of 0xFF).
constexpr uint32_t kNone = 0xffffffffu;

// A unit's share of the lists: its places (aligned), its ranges (a long entry's parts) and its
// slots (one for a long entry).
struct UnitSize {
  int64_t places;
  int32_t ranges, slots;
};
struct AddUnitSizes {
  __host__ __device__ UnitSize operator()(const UnitSize& x, const UnitSize& y) const {
    return {x.places + y.places, x.ranges + y.ranges, x.slots + y.slots};
  }
};

// What the host reads to size the lists, and why C cannot be served (kNone: nothing found).
struct BuildCounts {
  int64_t products, places;
  int32_t ranges, slots, units;
  uint32_t missing;  // the first product (in A's order) whose column C's row lacks
  int32_t missing_e, missing_f, missing_row;
  uint32_t empty;    // the first entry of C no product lands on
  int32_t empty_row;
};

struct Operands {
  int32_t a_rows;
  int64_t a_nnz;
  const int32_t *a_row_ptr, *a_col, *b_row_ptr, *b_col, *c_row_ptr, *c_col;
};

__device__ int64_t aligned(int64_t place) { return (place + kRangeAlignment - 1) / kRangeAlignment * kRangeAlignment; }

// Product p's entry e of A and f of B (products numbered row by row, A's entries in order).
__device__ void product_of(const Operands& o, const int32_t* a_first, int64_t p, int32_t& e, int32_t& f) {
  e = last_at_most(a_first, int32_t(o.a_nnz), p);
  f = o.b_row_ptr[o.a_col[e]] + int32_t(p - a_first[e]);
}

__device__ bool is_long(const int32_t* start, int64_t q, int64_t range_products) { return start[q + 1] - start[q] > range_products; }

// Each product's C entry (its B column bisected in C's row), and its number as the sort's value.
__global__ void product_entries(int64_t products, Operands o, const int32_t* a_first, uint32_t* keys, uint32_t* ids,
                                uint32_t* missing) {
  for (int64_t p = first_index(); p < products; p += grid_stride()) {
    int32_t e, f;
    product_of(o, a_first, p, e, f);
    const int32_t r = last_at_most(o.a_row_ptr, o.a_rows, e), column = o.b_col[f], end = o.c_row_ptr[r + 1];
    int32_t lo = o.c_row_ptr[r], hi = end;
    while (lo < hi) {
      const int32_t mid = lo + (hi - lo) / 2;
      if (o.c_col[mid] < column) lo = mid + 1;
      else hi = mid;
    }
    const bool found = lo < end && o.c_col[lo] == column;
    if (!found) atomicMin(missing, uint32_t(p));
    keys[p] = found ? uint32_t(lo) : 0u;
    ids[p] = uint32_t(p);
  }
}

// start[q] = entry q's first product in the sorted stream (preset to -1), start[E] = P.
__global__ void entry_starts(int64_t products, int64_t c_nnz, const uint32_t* sorted_keys, int32_t* start) {
  for (int64_t s = first_index(); s < products; s += grid_stride()) {
    if (s == 0 || sorted_keys[s] != sorted_keys[s - 1]) start[sorted_keys[s]] = int32_t(s);
    if (s == 0) start[c_nnz] = int32_t(products);
  }
}

// A short entry's weight is its products; a long one's range_products + 1, so that no range of
// whole entries reaches past it.
__global__ void entry_weights(int64_t c_nnz, const int32_t* start, int64_t range_products, int64_t* weights, uint32_t* empty) {
  for (int64_t q = first_index(); q < c_nnz; q += grid_stride()) {
    if (start[q] < 0) atomicMin(empty, uint32_t(q));
    weights[q] = is_long(start, q, range_products) ? range_products + 1 : int64_t(start[q + 1]) - start[q];
  }
}

// next[q] = the entry a greedy range beginning at q ends before: the last q1 with the weights of
// q .. q1 - 1 within range_products (q + 1 at least: a long entry is a unit alone); next[E] = E.
__global__ void greedy_next(int64_t c_nnz, const int64_t* weight_before, int64_t range_products, int32_t* next) {
  for (int64_t q = first_index(); q <= c_nnz; q += grid_stride()) {
    if (q == c_nnz) {
      next[q] = int32_t(c_nnz);
      continue;
    }
    int64_t lo = q + 1, hi = c_nnz < q + range_products ? c_nnz : q + range_products;  // an entry holds a product at least
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo + 1) / 2;
      if (weight_before[mid] - weight_before[q] <= range_products) lo = mid;
      else hi = mid - 1;
    }
    next[q] = int32_t(lo);
  }
}

// begins[q] = 1 where entry q begins a unit: the entries the greedy ranges begin at, which are
// the chain entry 0, next[0], next[next[0]], ... (spgemm_entry_products.hpp's rule), found in
// ceil(log2(E + 1)) rounds of pointer doubling. begins holds E + 1 ints (the last is the end).
void greedy_unit_begins(int64_t c_nnz, const int32_t* start, int64_t range_products, int32_t* begins, uint32_t* empty,
                        cudaStream_t s) {
  const int64_t count = c_nnz + 1;
  const Scratch<int64_t> weights(count, s), weight_before(count, s);
  const Scratch<int32_t> jump(count, s), jump_next(count, s);
  cuda::check_runtime(cudaMemsetAsync(weights.get(), 0, std::size_t(count) * 8, s), "cudaMemsetAsync (entry product units)");
  launch("entry_weights", c_nnz, s, entry_weights, c_nnz, start, range_products, weights.get(), empty);
  run_cub("cub::DeviceScan::ExclusiveSum (entry product weights)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, weights.get(), weight_before.get(), int(count), s);
  });
  launch("greedy_next", count, s, greedy_next, c_nnz, weight_before.get(), range_products, jump.get());
  mark_chain(count, jump.get(), jump_next.get(), begins, s);
}

// unit_first[u] = unit u's first entry (units numbered by the inclusive scan of begins, from
// 1), unit_first[U] = E.
__global__ void unit_firsts(int64_t c_nnz, const int32_t* begins, const int32_t* unit_of, int32_t* unit_first) {
  for (int64_t q = first_index(); q < c_nnz; q += grid_stride()) {
    if (begins[q]) unit_first[unit_of[q] - 1] = int32_t(q);
    if (q == c_nnz - 1) unit_first[unit_of[q]] = int32_t(c_nnz);
  }
}

// Every unit's size; the places past the last unit (to E + 1) are zero, so the exclusive scan's
// last element is the lists' totals.
__global__ void unit_sizes(int64_t c_nnz, const int32_t* unit_of, const int32_t* unit_first, const int32_t* start,
                           int64_t range_products, UnitSize* sizes) {
  const int32_t units = unit_of[c_nnz - 1];
  for (int64_t u = first_index(); u <= c_nnz; u += grid_stride()) {
    if (u >= units) {
      sizes[u] = {0, 0, 0};
      continue;
    }
    const int32_t q = unit_first[u];
    const int64_t products = int64_t(start[unit_first[u + 1]]) - start[q];
    const bool long_entry = is_long(start, q, range_products);
    sizes[u] = {aligned(products), long_entry ? int32_t((products + range_products - 1) / range_products) : 1, long_entry ? 1 : 0};
  }
}

__global__ void build_counts(Operands o, const int32_t* a_first, int64_t c_nnz, const int32_t* unit_of, const UnitSize* offsets,
                             const uint32_t* markers, BuildCounts* counts) {
  if (first_index() != 0) return;
  BuildCounts k{};
  k.products = a_first[o.a_nnz];
  k.units = unit_of[c_nnz - 1];
  k.places = offsets[c_nnz].places;
  k.ranges = offsets[c_nnz].ranges;
  k.slots = offsets[c_nnz].slots;
  k.missing = markers[0];
  if (k.missing != kNone) {
    product_of(o, a_first, k.missing, k.missing_e, k.missing_f);
    k.missing_row = last_at_most(o.a_row_ptr, o.a_rows, k.missing_e);
  }
  k.empty = markers[1];
  if (k.empty != kNone) k.empty_row = last_at_most(o.c_row_ptr, o.a_rows, k.empty);
  *counts = k;
}

// A unit's range, or a long entry's parts and its slot's part count.
__global__ void write_ranges(int32_t units, const int32_t* unit_first, const int32_t* start, int64_t range_products,
                             const UnitSize* offsets, int4* ranges, int32_t* slot_parts) {
  for (int64_t u = first_index(); u < units; u += grid_stride()) {
    const int32_t q = unit_first[u];
    const int64_t products = int64_t(start[unit_first[u + 1]]) - start[q];
    const UnitSize at = offsets[u];
    if (!is_long(start, q, range_products)) {
      ranges[at.ranges] = make_int4(int32_t(at.places), int32_t(products), q, -1);
      continue;
    }
    const int64_t parts = (products + range_products - 1) / range_products;
    for (int64_t part = 0; part < parts; ++part) {
      const int64_t lo = products * part / parts, hi = products * (part + 1) / parts;
      ranges[at.ranges + part] = make_int4(int32_t(at.places + lo), int32_t(hi - lo), q, at.slots);
    }
    slot_parts[at.slots] = int32_t(parts);
  }
}

// Sorted product s at its unit's place plus its offset in the unit, a head on its entry's first.
__global__ void write_products(int64_t products, Operands o, const int32_t* a_first, const uint32_t* sorted_keys,
                               const uint32_t* sorted_ids, const int32_t* start, const int32_t* unit_of, const int32_t* unit_first,
                               const UnitSize* offsets, int32_t* product_a, uint32_t* product_b) {
  for (int64_t s = first_index(); s < products; s += grid_stride()) {
    const uint32_t q = sorted_keys[s];
    const int32_t u = unit_of[q] - 1;
    const int64_t place = offsets[u].places + (s - start[unit_first[u]]);
    int32_t e, f;
    product_of(o, a_first, sorted_ids[s], e, f);
    product_a[place] = e;
    product_b[place] = uint32_t(f) | (s == start[q] ? kEntryHead : 0u);
  }
}

std::string unusable_reason(const BuildCounts& k) {
  if (k.missing != kNone)
    return "entries: the product of A's entry " + std::to_string(k.missing_e) + " and B's entry " + std::to_string(k.missing_f) +
           " has no entry in C's row " + std::to_string(k.missing_row);
  if (k.empty != kNone)
    return "entries: no product lands on C's entry " + std::to_string(k.empty) + " (row " + std::to_string(k.empty_row) + ")";
  return {};
}

int key_bits(int64_t c_nnz) {
  int bits = 1;
  while (bits < 32 && (int64_t(1) << bits) < c_nnz) ++bits;
  return bits;
}

}  // namespace

DeviceEntryProducts build_entry_products_gpu(const Context& context, DevicePattern a, DevicePattern b, DevicePattern c,
                                             int64_t products, int64_t range_products, CUstream stream) {
  check_entry_product_shapes(a.rows, a.cols, b.rows, b.cols, c.rows, c.cols, range_products);
  if (products > kInt32Max)
    throw InvalidInputError("build_entry_products: A·B has " + std::to_string(products) + " products, more than 2^31 - 1");
  context.make_current();
  const auto s = static_cast<cudaStream_t>(stream);
  DeviceEntryProducts out;
  out.products = products;
  if (products == 0 || c.nnz == 0) {
    if (products != 0 || c.nnz != 0)
      out.unusable = "entries: A·B has " + std::to_string(products) + " products but C " + std::to_string(c.nnz) + " entries";
    return out;
  }
  const Operands o{a.rows,
                   a.nnz,
                   reinterpret_cast<const int32_t*>(a.row_ptr),
                   reinterpret_cast<const int32_t*>(a.col_idx),
                   reinterpret_cast<const int32_t*>(b.row_ptr),
                   reinterpret_cast<const int32_t*>(b.col_idx),
                   reinterpret_cast<const int32_t*>(c.row_ptr),
                   reinterpret_cast<const int32_t*>(c.col_idx)};
  const int64_t e_count = c.nnz;
  const Scratch<int32_t> lengths(a.nnz + 1, s), a_first(a.nnz + 1, s);
  const Scratch<uint32_t> keys(products, s), alt_keys(products, s), ids(products, s), alt_ids(products, s), markers(2, s);
  const Scratch<int32_t> start(e_count + 1, s), begins(e_count + 1, s);
  const Scratch<BuildCounts> counts(1, s);
  cuda::check_runtime(cudaMemsetAsync(markers.get(), 0xFF, 8, s), "cudaMemsetAsync (entry products)");
  cuda::check_runtime(cudaMemsetAsync(start.get(), 0xFF, std::size_t(e_count + 1) * 4, s), "cudaMemsetAsync (entry products)");
  first_products(a.nnz, o.a_col, o.b_row_ptr, lengths.get(), a_first.get(), s);
  launch("product_entries", products, s, product_entries, products, o, a_first.get(), keys.get(), ids.get(), markers.get());
  cub::DoubleBuffer<uint32_t> sort_keys(keys.get(), alt_keys.get()), sort_ids(ids.get(), alt_ids.get());
  run_cub("cub::DeviceRadixSort::SortPairs (entry products)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, sort_keys, sort_ids, int(products), 0, key_bits(e_count), s);
  });
  const uint32_t* sorted_keys = sort_keys.Current();
  const uint32_t* sorted_ids = sort_ids.Current();
  launch("entry_starts", products, s, entry_starts, products, e_count, sorted_keys, start.get());
  greedy_unit_begins(e_count, start.get(), range_products, begins.get(), markers.get() + 1, s);
  const Scratch<int32_t> unit_of(e_count, s), unit_first(e_count + 1, s);
  const Scratch<UnitSize> sizes(e_count + 1, s), offsets(e_count + 1, s);
  run_cub("cub::DeviceScan::InclusiveSum (entry product units)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::InclusiveSum(temp, bytes, begins.get(), unit_of.get(), int(e_count), s);
  });
  launch("unit_firsts", e_count, s, unit_firsts, e_count, begins.get(), unit_of.get(), unit_first.get());
  launch("unit_sizes", e_count + 1, s, unit_sizes, e_count, unit_of.get(), unit_first.get(), start.get(), range_products, sizes.get());
  run_cub("cub::DeviceScan::ExclusiveScan (entry product units)", s, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveScan(temp, bytes, sizes.get(), offsets.get(), AddUnitSizes{}, UnitSize{0, 0, 0}, int(e_count + 1), s);
  });
  launch("build_counts", 1, s, build_counts, o, a_first.get(), e_count, unit_of.get(), offsets.get(), markers.get(), counts.get());
  BuildCounts k{};
  cuda::check_runtime(cudaMemcpyAsync(&k, counts.get(), sizeof(k), cudaMemcpyDeviceToHost, s), "cudaMemcpyAsync (entry product counts)");
  cuda::check_runtime(cudaStreamSynchronize(s), "cudaStreamSynchronize (entry products)");
  if (k.products != products)
    throw CudaError("entry products: the device counted " + std::to_string(k.products) + " products of A·B where the features count " +
                    std::to_string(products));
  out.unusable = unusable_reason(k);
  if (!out.unusable.empty()) return out;
  if (k.places > kInt32Max) throw InvalidInputError("build_entry_products: the list's places pass 2^31 - 1");
  out.places = k.places;
  out.ranges = k.ranges;
  out.slots = k.slots;
  out.product_a = DeviceBuffer(context, std::size_t(k.places) * 4);
  out.product_b = DeviceBuffer(context, std::size_t(k.places) * 4);
  out.range_list = DeviceBuffer(context, std::size_t(k.ranges) * sizeof(EntryRange));
  out.slot_parts = DeviceBuffer(context, std::size_t(k.slots) * 4);
  out.product_a.fill_bytes_async(0xFF, stream);  // padding: -1 and 0
  out.product_b.fill_bytes_async(0, stream);
  launch("write_ranges", k.units, s, write_ranges, k.units, unit_first.get(), start.get(), range_products, offsets.get(),
         out.range_list.as<int4>(), out.slot_parts.as<int32_t>());
  launch("write_products", products, s, write_products, products, o, a_first.get(), sorted_keys, sorted_ids, start.get(),
         unit_of.get(), unit_first.get(), offsets.get(), out.product_a.as<int32_t>(), out.product_b.as<uint32_t>());
  return out;
}

EntryProducts download(const DeviceEntryProducts& d) {
  EntryProducts t;
  t.products = d.products;
  t.unusable = d.unusable;
  t.product_a = d.product_a.download_as<int32_t>(std::size_t(d.places));
  t.product_b = d.product_b.download_as<uint32_t>(std::size_t(d.places));
  t.ranges = d.range_list.download_as<EntryRange>(std::size_t(d.ranges));
  t.slot_parts = d.slot_parts.download_as<int32_t>(std::size_t(d.slots));
  return t;
}

}  // namespace sparsejit::formats
