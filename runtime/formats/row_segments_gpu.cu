// Builds the RS-SpMM heavy/light split on the device (layout in row_segments.hpp; the host
// builder in row_segments.cpp is the specification: every array must come out identical,
// except that the light part is a CSR over all rows, see row_segments_gpu.hpp).
//
// With n nonzeros, a segment is a maximal run of one row's nonzeros inside one panel. The
// build runs in two phases around one host synchronisation:
//   count   row_of[e]         the row of nonzero e (a scan of row-start marks)
//           seg_count[e]      1 + the segment of e (a scan of segment heads: the first entry
//                             of a row, or a panel change); seg_begin[s] its first position
//           sort              segment ids keyed by panel for heavy segments (length >= T) and
//                             by `panels` for the rest; the radix sort is stable, so heavy
//                             segments come out by panel, rows ascending: the host order
//           panel_ptr         binary search of the sorted keys; work items per panel, scanned
//           light_prefix[e]   the light slot of e (a scan of light flags)
//   (the counts come to the host; the output buffers are allocated to size)
//   fill    heavy segments in sorted order (seg_row, lengths scanned into seg_ptr),
//           every nonzero scattered to its heavy or light slot, light_ptr over all rows
//           (light_prefix at each row start), work items.
// Each output array is written by one small kernel, so a change of one array's layout is a
// change of that kernel.
//
// Scratch memory is stream-ordered (cudaMallocAsync / cudaFreeAsync), so a build never waits
// for the device to free it and the caller's stream stays the only ordering.
#include "formats/row_segments_gpu.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <string>
#include <utility>

#include "cuda/runtime_check.hpp"
#include "formats/gpu_build.cuh"
#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

using namespace gpu_build;

// First i in [0, count) with values[i] >= key (count when none); values ascending.
template <class U>
__device__ int64_t lower_bound(const U* values, int64_t count, int64_t key) {
  int64_t lo = 0, hi = count;
  while (lo < hi) {
    const int64_t mid = (lo + hi) / 2;
    if (int64_t(values[mid]) < key) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// ---------------------------------------------------------------------------------------
// Count phase kernels.

// marks[e] += the number of rows r >= 1 that start at e (several when rows before r are
// empty); its inclusive scan is then the row of every nonzero.
__global__ void mark_row_starts(const int32_t* row_ptr, int32_t rows, int32_t nnz, int32_t* marks) {
  for (int64_t r = first_index() + 1; r <= rows; r += grid_stride())
    if (row_ptr[r] < nnz) atomicAdd(&marks[row_ptr[r]], 1);
}

// head[e] = 1 where a segment starts. A column that does not ascend within its row is
// recorded (the smallest such position wins) so the host can name it.
__global__ void find_segment_heads(const int32_t* col, const int32_t* row_of, int32_t nnz, int32_t panel_width,
                                   int32_t* head, int32_t* first_unsorted) {
  for (int64_t e = first_index(); e < nnz; e += grid_stride()) {
    const bool new_row = e == 0 || row_of[e] != row_of[e - 1];
    if (!new_row && col[e] <= col[e - 1]) atomicMin(first_unsorted, int32_t(e));
    head[e] = new_row || col[e] / panel_width != col[e - 1] / panel_width;
  }
}

// seg_count[e] = 1 + the segment of e, so e is a head where it differs from seg_count[e - 1].
__global__ void record_segment_begins(const int32_t* seg_count, int32_t nnz, int32_t* seg_begin) {
  for (int64_t e = first_index(); e < nnz; e += grid_stride()) {
    if (e == 0 || seg_count[e] != seg_count[e - 1]) seg_begin[seg_count[e] - 1] = int32_t(e);
    if (e == nnz - 1) seg_begin[seg_count[e]] = nnz;
  }
}

// Every sort slot starts as "not a heavy segment": the key past the last panel.
__global__ void init_sort_slots(int32_t nnz, uint32_t panels, uint32_t* key, int32_t* id) {
  for (int64_t j = first_index(); j < nnz; j += grid_stride()) {
    key[j] = panels;
    id[j] = int32_t(j);
  }
}

// A segment is heavy when it holds >= threshold nonzeros (row_segments.hpp); its head keys it
// by panel, and every nonzero records whether it stays light.
__global__ void classify_segments(const int32_t* col, const int32_t* seg_count, const int32_t* seg_begin, int32_t nnz,
                                  int32_t panel_width, int32_t threshold, uint32_t* key, int32_t* light_flag) {
  for (int64_t e = first_index(); e < nnz; e += grid_stride()) {
    const int32_t s = seg_count[e] - 1;
    const bool heavy = seg_begin[s + 1] - seg_begin[s] >= threshold;
    light_flag[e] = !heavy;
    if (heavy && e == seg_begin[s]) key[s] = uint32_t(col[e] / panel_width);
  }
}

// panel_ptr[p] = heavy segments of the panels before p (the first sorted key >= p), and the
// work items of panel p (none for the extra entry p = panels, so the scan ends with the total).
__global__ void count_panels(const uint32_t* sorted_key, int32_t nnz, int32_t panels, int32_t per_block,
                             int32_t* panel_ptr, int32_t* panel_blocks) {
  for (int64_t p = first_index(); p <= panels; p += grid_stride()) {
    const int64_t begin = lower_bound(sorted_key, nnz, p);
    panel_ptr[p] = int32_t(begin);
    const int64_t segments = p < panels ? lower_bound(sorted_key, nnz, p + 1) - begin : 0;
    panel_blocks[p] = int32_t((segments + per_block - 1) / per_block);
  }
}

// What the host needs to size the outputs, gathered so one copy brings it over.
struct Counts {
  int32_t first_unsorted;  // nnz when every row is sorted with unique columns
  int32_t heavy_segments;
  int32_t light_nnz;
  int32_t blocks;
};

__global__ void gather_counts(const int32_t* first_unsorted, const int32_t* heavy_segments, const int32_t* light_nnz,
                              const int32_t* blocks, Counts* counts) {
  *counts = Counts{*first_unsorted, *heavy_segments, *light_nnz, *blocks};
}

__global__ void set_value(int32_t* target, int32_t value) { *target = value; }

// ---------------------------------------------------------------------------------------
// Fill phase kernels.

// Heavy segment i of the sorted order: its row and length, and the map segment -> i. The
// extra entry i = heavy_segments gets length 0, so the exclusive scan ends with heavy_nnz.
__global__ void place_heavy_segments(const int32_t* sorted_id, const int32_t* seg_begin, const int32_t* row_of,
                                     int32_t heavy_segments, int32_t* seg_row, int32_t* seg_len, int32_t* heavy_slot) {
  for (int64_t i = first_index(); i <= heavy_segments; i += grid_stride()) {
    if (i == heavy_segments) {
      seg_len[i] = 0;
      continue;
    }
    const int32_t s = sorted_id[i];
    seg_row[i] = row_of[seg_begin[s]];
    seg_len[i] = seg_begin[s + 1] - seg_begin[s];
    heavy_slot[s] = int32_t(i);
  }
}

// Every nonzero to its slot: heavy ones after their segment's start with the column made
// relative to the panel, light ones at their light prefix with the absolute column. Values
// are moved as raw words of their size.
template <class Word>
__global__ void scatter_nonzeros(const int32_t* col, const Word* val, const int32_t* seg_count,
                                 const int32_t* seg_begin, const int32_t* heavy_slot, const int32_t* seg_ptr,
                                 const int32_t* light_prefix, int32_t nnz, int32_t panel_width, int32_t threshold,
                                 int32_t* heavy_col, Word* heavy_val, int32_t* light_col, Word* light_val) {
  for (int64_t e = first_index(); e < nnz; e += grid_stride()) {
    const int32_t s = seg_count[e] - 1;
    const int32_t begin = seg_begin[s];
    if (seg_begin[s + 1] - begin >= threshold) {
      const int64_t out = seg_ptr[heavy_slot[s]] + (e - begin);
      heavy_col[out] = col[e] % panel_width;
      heavy_val[out] = val[e];
    } else {
      const int32_t out = light_prefix[e];
      light_col[out] = col[e];
      light_val[out] = val[e];
    }
  }
}

// Light nonzeros keep the CSR order, so row r's light nonzeros start at the light slot of its
// first nonzero; light_prefix[nnz] = light_nnz closes the last row (and every empty tail).
__global__ void place_light_ptr(const int32_t* row_ptr, int32_t rows, const int32_t* light_prefix, int32_t* light_ptr) {
  for (int64_t r = first_index(); r <= rows; r += grid_stride()) light_ptr[r] = light_prefix[row_ptr[r]];
}

// Work item b belongs to the panel p with block_ptr[p] <= b < block_ptr[p + 1] and is that
// panel's k-th chunk of at most per_block segments, as make_work_items cuts them on the host.
__global__ void place_work_items(const int32_t* block_ptr, const int32_t* panel_ptr, int32_t panels, int32_t per_block,
                                 int32_t blocks, int32_t* block_panel, int32_t* block_seg_begin,
                                 int32_t* block_seg_end) {
  for (int64_t b = first_index(); b < blocks; b += grid_stride()) {
    int64_t lo = 0, hi = panels - 1;  // the last p in [0, panels) with block_ptr[p] <= b
    while (lo < hi) {
      const int64_t mid = (lo + hi + 1) / 2;
      if (block_ptr[mid] <= b) lo = mid; else hi = mid - 1;
    }
    const int64_t begin = panel_ptr[lo] + (b - block_ptr[lo]) * per_block;
    block_panel[b] = int32_t(lo);
    block_seg_begin[b] = int32_t(begin);
    const int64_t end = begin + per_block;
    block_seg_end[b] = int32_t(end < panel_ptr[lo + 1] ? end : panel_ptr[lo + 1]);
  }
}

// ---------------------------------------------------------------------------------------
// Host side.

void require_at_least(const char* what, int64_t value, int64_t minimum) {
  if (value < minimum)
    throw InvalidInputError(std::string(what) + " " + std::to_string(value) + " must be >= " + std::to_string(minimum));
}

int bit_width(uint32_t value) {
  int bits = 0;
  for (; value != 0; value >>= 1) ++bits;
  return bits;
}

struct Shape {
  int32_t rows, cols, nnz, panel_width, threshold, panels, per_block;
};

// Everything the fill phase reads, produced by the count phase.
struct CountPhase {
  Scratch<int32_t> row_of;          // nnz
  Scratch<int32_t> seg_count;       // nnz
  Scratch<int32_t> seg_begin;       // segments + 1 (nnz + 1 reserved)
  Scratch<int32_t> sorted_id;       // nnz: heavy segments first, in output order
  Scratch<int32_t> light_prefix;    // nnz + 1
  Scratch<int32_t> block_ptr;       // panels + 1
  Counts counts;
};

// Rows, segments and segment begins; the first unsorted position goes to *first_unsorted.
void find_segments(const Shape& shape, const int32_t* row_ptr, const int32_t* col, int32_t* first_unsorted,
                   CountPhase& out, cudaStream_t stream) {
  const int32_t n = shape.nnz;
  cuda::check_runtime(cudaMemsetAsync(out.row_of.get(), 0, sizeof(int32_t) * std::size_t(n), stream),
                      "cudaMemsetAsync(row marks)");
  launch("mark_row_starts", shape.rows, stream, mark_row_starts, row_ptr, shape.rows, n, out.row_of.get());
  run_cub("InclusiveSum(row marks)", stream, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::InclusiveSum(temp, bytes, out.row_of.get(), n, stream);
  });
  // The heads are scanned in place into seg_count.
  launch("find_segment_heads", n, stream, find_segment_heads, col, out.row_of.get(), n, shape.panel_width,
         out.seg_count.get(), first_unsorted);
  run_cub("InclusiveSum(segment heads)", stream, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::InclusiveSum(temp, bytes, out.seg_count.get(), n, stream);
  });
  launch("record_segment_begins", n, stream, record_segment_begins, out.seg_count.get(), n, out.seg_begin.get());
}

// Classifies the segments, sorts them into the heavy order and fills panel_ptr (an output,
// sized panels + 1 from the start) and the per-panel work item offsets.
void order_heavy_segments(const Shape& shape, const int32_t* col, int32_t* panel_ptr, CountPhase& out,
                          cudaStream_t stream) {
  const int32_t n = shape.nnz;
  Scratch<uint32_t> key(n, stream), sorted_key(n, stream);
  Scratch<int32_t> id(n, stream);
  launch("init_sort_slots", n, stream, init_sort_slots, n, uint32_t(shape.panels), key.get(), id.get());
  launch("classify_segments", n, stream, classify_segments, col, out.seg_count.get(), out.seg_begin.get(), n,
         shape.panel_width, shape.threshold, key.get(), out.light_prefix.get());
  const int end_bit = std::max(1, bit_width(uint32_t(shape.panels)));
  run_cub("SortPairs(segments by panel)", stream, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceRadixSort::SortPairs(temp, bytes, key.get(), sorted_key.get(), id.get(), out.sorted_id.get(),
                                           n, 0, end_bit, stream);
  });
  launch("count_panels", int64_t(shape.panels) + 1, stream, count_panels, sorted_key.get(), n, shape.panels,
         shape.per_block, panel_ptr, out.block_ptr.get());
  run_cub("ExclusiveSum(work items per panel)", stream, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, out.block_ptr.get(), shape.panels + 1, stream);
  });
}

// light_prefix holds the light flags (classify_segments) and becomes their exclusive scan.
void count_light(const Shape& shape, CountPhase& out, cudaStream_t stream) {
  const int32_t n = shape.nnz;
  run_cub("ExclusiveSum(light nonzeros)", stream, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, out.light_prefix.get(), int64_t(n) + 1, stream);
  });
}

// Runs the count phase and brings its counts to the host (the one synchronisation).
CountPhase count_phase(const Shape& shape, const int32_t* row_ptr, const int32_t* col, int32_t* panel_ptr,
                       cudaStream_t stream) {
  const int32_t n = shape.nnz;
  CountPhase out{Scratch<int32_t>(n, stream),
                 Scratch<int32_t>(n, stream),
                 Scratch<int32_t>(int64_t(n) + 1, stream),
                 Scratch<int32_t>(n, stream),
                 Scratch<int32_t>(int64_t(n) + 1, stream),
                 Scratch<int32_t>(int64_t(shape.panels) + 1, stream),
                 Counts{}};
  Scratch<int32_t> first_unsorted(1, stream);
  Scratch<Counts> counts(1, stream);
  launch("set_value", 1, stream, set_value, first_unsorted.get(), n);
  // The extra light flag past the last nonzero stays 0, so the scan's last entry is the total.
  cuda::check_runtime(cudaMemsetAsync(out.light_prefix.get() + n, 0, sizeof(int32_t), stream),
                      "cudaMemsetAsync(light flag)");
  find_segments(shape, row_ptr, col, first_unsorted.get(), out, stream);
  order_heavy_segments(shape, col, panel_ptr, out, stream);
  count_light(shape, out, stream);
  launch("gather_counts", 1, stream, gather_counts, first_unsorted.get(), panel_ptr + shape.panels,
         out.light_prefix.get() + n, out.block_ptr.get() + shape.panels, counts.get());
  cuda::check_runtime(cudaMemcpyAsync(&out.counts, counts.get(), sizeof(Counts), cudaMemcpyDeviceToHost, stream),
                      "cudaMemcpyAsync(counts)");
  cuda::check_runtime(cudaStreamSynchronize(stream), "cudaStreamSynchronize(counts)");
  return out;
}

// Names the first column that breaks the sorted-rows precondition, in validate()'s words.
void reject_unsorted(const PatternView& pattern, int32_t position) {
  const int32_t* row_end = std::upper_bound(pattern.row_ptr, pattern.row_ptr + pattern.rows + 1, position);
  const int32_t column = pattern.col_idx[position], previous = pattern.col_idx[position - 1];
  throw InvalidInputError("row " + std::to_string(row_end - pattern.row_ptr - 1) + ": column index " +
                          std::to_string(column) +
                          (column == previous ? " repeated" : " out of order after " + std::to_string(previous)) +
                          " (the row segment split needs rows sorted with unique columns)");
}

// A typed device pointer into a buffer (a plain function, so templates need no `template`).
template <class U>
U* ptr(const DeviceBuffer& buffer) {
  return buffer.as<U>();
}

template <class T>
DeviceBuffer device_array(const Context& context, int64_t count) {
  return DeviceBuffer(context, std::size_t(count) * sizeof(T));
}

template <class T, class Word>
void fill_phase(const Shape& shape, const DeviceCsr<T>& a, const CountPhase& counted, DeviceRowSegmentSplit<T>& split,
                cudaStream_t stream) {
  const Context& context = a.context();
  const Counts& c = counted.counts;
  split.seg_row = device_array<int32_t>(context, c.heavy_segments);
  split.seg_ptr = device_array<int32_t>(context, int64_t(c.heavy_segments) + 1);
  split.heavy_col = device_array<int32_t>(context, split.heavy_nnz);
  split.heavy_val = device_array<T>(context, split.heavy_nnz);
  split.block_panel = device_array<int32_t>(context, c.blocks);
  split.block_seg_begin = device_array<int32_t>(context, c.blocks);
  split.block_seg_end = device_array<int32_t>(context, c.blocks);
  split.light_ptr = device_array<int32_t>(context, int64_t(shape.rows) + 1);
  split.light_col = device_array<int32_t>(context, c.light_nnz);
  split.light_val = device_array<T>(context, c.light_nnz);

  Scratch<int32_t> seg_len(int64_t(c.heavy_segments) + 1, stream), heavy_slot(shape.nnz, stream);
  launch("place_heavy_segments", int64_t(c.heavy_segments) + 1, stream, place_heavy_segments, counted.sorted_id.get(),
         counted.seg_begin.get(), counted.row_of.get(), c.heavy_segments, ptr<int32_t>(split.seg_row), seg_len.get(),
         heavy_slot.get());
  run_cub("ExclusiveSum(heavy segment lengths)", stream, [&](void* temp, std::size_t& bytes) {
    return cub::DeviceScan::ExclusiveSum(temp, bytes, seg_len.get(), ptr<int32_t>(split.seg_ptr),
                                         int64_t(c.heavy_segments) + 1, stream);
  });
  launch("scatter_nonzeros", shape.nnz, stream, scatter_nonzeros<Word>, ptr<int32_t>(a.col_idx()),
         ptr<Word>(a.values()), counted.seg_count.get(), counted.seg_begin.get(), heavy_slot.get(),
         ptr<int32_t>(split.seg_ptr), counted.light_prefix.get(), shape.nnz, shape.panel_width, shape.threshold,
         ptr<int32_t>(split.heavy_col), ptr<Word>(split.heavy_val), ptr<int32_t>(split.light_col),
         ptr<Word>(split.light_val));
  launch("place_light_ptr", int64_t(shape.rows) + 1, stream, place_light_ptr, ptr<int32_t>(a.row_ptr()), shape.rows,
         counted.light_prefix.get(), ptr<int32_t>(split.light_ptr));
  launch("place_work_items", c.blocks, stream, place_work_items, counted.block_ptr.get(), ptr<int32_t>(split.panel_ptr),
         shape.panels, shape.per_block, c.blocks, ptr<int32_t>(split.block_panel), ptr<int32_t>(split.block_seg_begin),
         ptr<int32_t>(split.block_seg_end));
}

// Values move as raw words: only their size matters.
template <std::size_t Bytes> struct WordOf;
template <> struct WordOf<2> { using type = uint16_t; };
template <> struct WordOf<4> { using type = uint32_t; };
template <> struct WordOf<8> { using type = uint64_t; };

template <class U>
std::vector<U> download_array(const DeviceBuffer& buffer) {
  return buffer.download_as<U>(buffer.bytes() / sizeof(U));
}

}  // namespace

template <class T>
DeviceRowSegmentSplit<T> build_row_segments_gpu(const DeviceCsr<T>& a, int32_t panel_width, int32_t threshold,
                                                int32_t max_segments_per_block, CUstream stream) {
  require_at_least("panel width", panel_width, 1);
  require_at_least("heavy threshold", threshold, 1);
  require_at_least("max segments per block", max_segments_per_block, 1);
  a.context().make_current();  // the runtime API adopts the current (primary) context

  const int32_t panels = int32_t((int64_t(a.cols()) + panel_width - 1) / panel_width);
  const Shape shape{a.rows(), a.cols(), int32_t(a.nnz()), panel_width, threshold, panels, max_segments_per_block};
  DeviceRowSegmentSplit<T> split;
  split.rows = shape.rows;
  split.cols = shape.cols;
  split.panel_width = panel_width;
  split.threshold = threshold;
  split.panels = panels;
  split.max_segments_per_block = max_segments_per_block;
  split.panel_ptr = device_array<int32_t>(a.context(), int64_t(panels) + 1);

  const CountPhase counted =
      count_phase(shape, ptr<int32_t>(a.row_ptr()), ptr<int32_t>(a.col_idx()), ptr<int32_t>(split.panel_ptr), stream);
  if (counted.counts.first_unsorted < shape.nnz) reject_unsorted(a.host_pattern(), counted.counts.first_unsorted);
  split.heavy_segments = counted.counts.heavy_segments;
  split.light_nnz = counted.counts.light_nnz;
  split.heavy_nnz = shape.nnz - split.light_nnz;
  split.blocks = counted.counts.blocks;
  fill_phase<T, typename WordOf<sizeof(T)>::type>(shape, a, counted, split, stream);
  return split;
}

template <class T>
RowSegmentSplit<T> download(const DeviceRowSegmentSplit<T>& split) {
  RowSegmentSplit<T> host;
  host.rows = split.rows;
  host.cols = split.cols;
  host.panel_width = split.panel_width;
  host.threshold = split.threshold;
  host.panels = split.panels;
  host.max_segments_per_block = split.max_segments_per_block;
  host.panel_ptr = download_array<int32_t>(split.panel_ptr);
  host.seg_row = download_array<int32_t>(split.seg_row);
  host.seg_ptr = download_array<int32_t>(split.seg_ptr);
  host.heavy_col = download_array<int32_t>(split.heavy_col);
  host.heavy_val = download_array<T>(split.heavy_val);
  host.block_panel = download_array<int32_t>(split.block_panel);
  host.block_seg_begin = download_array<int32_t>(split.block_seg_begin);
  host.block_seg_end = download_array<int32_t>(split.block_seg_end);
  host.light_ptr = download_array<int32_t>(split.light_ptr);
  host.light_col = download_array<int32_t>(split.light_col);
  host.light_val = download_array<T>(split.light_val);
  host.heavy_segments = split.heavy_segments;
  host.heavy_nnz = split.heavy_nnz;
  for (std::size_t r = 0; r + 1 < host.light_ptr.size(); ++r) host.light_rows += host.light_ptr[r + 1] > host.light_ptr[r];
  host.light_nnz = split.light_nnz;
  return host;
}

#define SPARSEJIT_INSTANTIATE(T)                                                                               \
  template DeviceRowSegmentSplit<T> build_row_segments_gpu(const DeviceCsr<T>&, int32_t, int32_t, int32_t,   \
                                                           CUstream);                                        \
  template RowSegmentSplit<T> download(const DeviceRowSegmentSplit<T>&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
