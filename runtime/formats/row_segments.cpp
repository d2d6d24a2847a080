// Builds the RS-SpMM heavy/light split (layout in row_segments.hpp).
//
// The rows are cut into contiguous chunks of about equal nonzeros, one per thread. Pass 1
// counts, per chunk, the heavy segments and heavy nonzeros of every panel and the light
// nonzeros and rows. An exclusive scan over (panel, chunk) then turns those counts into
// each chunk's first output slot in every panel, so pass 2 lets every chunk write its own
// slots without coordination, and the rows of a panel still come out ascending because
// chunk c's rows all precede chunk c + 1's.
#include "formats/row_segments.hpp"

#include <algorithm>
#include <string>
#include <system_error>
#include <thread>

#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

void require_at_least(const char* what, int64_t value, int64_t minimum) {
  if (value < minimum)
    throw InvalidInputError(std::string(what) + " " + std::to_string(value) + " must be >= " + std::to_string(minimum));
}

// Calls visit(panel, begin, end) for every non-empty segment of the entries [begin, end)
// of one sorted row, in column order. One division per segment, not per nonzero.
template <class Visit>
void for_each_segment(const int32_t* col, int32_t row_begin, int32_t row_end, int32_t panel_width, Visit&& visit) {
  for (int32_t begin = row_begin; begin < row_end;) {
    const int32_t panel = col[begin] / panel_width;
    const int64_t panel_end = int64_t(panel + 1) * panel_width;
    int32_t end = begin + 1;
    while (end < row_end && col[end] < panel_end) ++end;
    visit(panel, begin, end);
    begin = end;
  }
}

// One chunk's counts after pass 1; after the scan, the same fields hold the chunk's first
// output slot instead (the cursors pass 2 advances).
struct Chunk {
  int32_t first_row = 0;
  int32_t end_row = 0;
  std::vector<int32_t> panel_segments;
  std::vector<int32_t> panel_nnz;
  int32_t light_nnz = 0;
  int32_t light_rows = 0;
};

int32_t pick_chunks(int64_t nnz, int32_t rows, int32_t panels, int32_t threads) {
  int64_t chunks = threads;
  if (chunks == 0) {
    const int64_t hardware = std::max<int64_t>(1, std::thread::hardware_concurrency());
    chunks = std::min<int64_t>({hardware, 8, std::max<int64_t>(1, nnz / kMinNonzerosPerThread)});
  }
  chunks = std::min<int64_t>(chunks, std::max(rows, 1));
  // Per-chunk panel counters must stay within the size of the input (W = 1 on a wide
  // matrix makes panels huge).
  while (chunks > 1 && chunks * panels > std::max<int64_t>(nnz, panels)) --chunks;
  return int32_t(chunks);
}

// Row ranges with about nnz / chunks entries each (first rows by lower_bound on row_ptr).
std::vector<Chunk> make_chunks(const std::vector<int32_t>& row_ptr, int32_t rows, int32_t panels, int32_t count) {
  std::vector<Chunk> chunks(static_cast<std::size_t>(count));
  const int64_t nnz = row_ptr[std::size_t(rows)];
  for (int32_t c = 0; c < count; ++c) {
    Chunk& chunk = chunks[std::size_t(c)];
    const int64_t target = nnz * c / count;
    chunk.first_row = c == 0 ? 0 : int32_t(std::lower_bound(row_ptr.begin(), row_ptr.begin() + rows, target) - row_ptr.begin());
    chunk.panel_segments.assign(std::size_t(panels), 0);
    chunk.panel_nnz.assign(std::size_t(panels), 0);
  }
  for (int32_t c = 0; c < count; ++c)
    chunks[std::size_t(c)].end_row = c + 1 < count ? chunks[std::size_t(c + 1)].first_row : rows;
  return chunks;
}

// Runs work(0 .. count-1), chunk 0 on the calling thread. If the system refuses a thread,
// the chunks it would have run are run here instead.
template <class Work>
void run_chunks(int32_t count, const Work& work) {
  std::vector<std::thread> helpers;
  helpers.reserve(std::size_t(count));
  int32_t c = 1;
  try {
    for (; c < count; ++c) helpers.emplace_back(work, c);
  } catch (const std::system_error&) {
    for (; c < count; ++c) work(c);
  }
  work(0);
  for (std::thread& helper : helpers) helper.join();
}

template <class T>
void count_chunk(const Csr<T>& a, int32_t panel_width, int32_t threshold, Chunk& chunk) {
  const int32_t* col = a.col_idx.data();
  for (int32_t r = chunk.first_row; r < chunk.end_row; ++r) {
    int32_t light_in_row = 0;
    for_each_segment(col, a.row_ptr[std::size_t(r)], a.row_ptr[std::size_t(r) + 1], panel_width,
                     [&](int32_t panel, int32_t begin, int32_t end) {
                       if (end - begin >= threshold) {
                         ++chunk.panel_segments[std::size_t(panel)];
                         chunk.panel_nnz[std::size_t(panel)] += end - begin;
                       } else {
                         light_in_row += end - begin;
                       }
                     });
    chunk.light_nnz += light_in_row;
    chunk.light_rows += light_in_row > 0 ? 1 : 0;
  }
}

// Exclusive scan over (panel, chunk) and over chunks for the light part; fills panel_ptr
// and the totals of split.
template <class T>
void counts_to_cursors(std::vector<Chunk>& chunks, RowSegmentSplit<T>& split) {
  split.panel_ptr.assign(std::size_t(split.panels) + 1, 0);
  int32_t segments = 0, nnz = 0;
  for (int32_t p = 0; p < split.panels; ++p) {
    for (Chunk& chunk : chunks) {
      const int32_t chunk_segments = chunk.panel_segments[std::size_t(p)];
      const int32_t chunk_nnz = chunk.panel_nnz[std::size_t(p)];
      chunk.panel_segments[std::size_t(p)] = segments;
      chunk.panel_nnz[std::size_t(p)] = nnz;
      segments += chunk_segments;
      nnz += chunk_nnz;
    }
    split.panel_ptr[std::size_t(p) + 1] = segments;
  }
  split.heavy_segments = segments;
  split.heavy_nnz = nnz;
  int32_t light_nnz = 0, light_rows = 0;
  for (Chunk& chunk : chunks) {
    const int32_t chunk_nnz = chunk.light_nnz, chunk_rows = chunk.light_rows;
    chunk.light_nnz = light_nnz;
    chunk.light_rows = light_rows;
    light_nnz += chunk_nnz;
    light_rows += chunk_rows;
  }
  split.light_nnz = light_nnz;
  split.light_rows = light_rows;
}

template <class T>
void allocate(RowSegmentSplit<T>& split) {
  split.seg_row.resize(std::size_t(split.heavy_segments));
  split.seg_ptr.resize(std::size_t(split.heavy_segments) + 1);
  split.seg_ptr.back() = int32_t(split.heavy_nnz);
  split.heavy_col.resize(std::size_t(split.heavy_nnz));
  split.heavy_val.resize(std::size_t(split.heavy_nnz));
  split.light_row.resize(std::size_t(split.light_rows));
  split.light_ptr.resize(std::size_t(split.light_rows) + 1);
  split.light_ptr[0] = 0;
  split.light_col.resize(std::size_t(split.light_nnz));
  split.light_val.resize(std::size_t(split.light_nnz));
}

// Pass 2: classifies the segments exactly as count_chunk did and writes them at the
// chunk's cursors.
template <class T>
void fill_chunk(const Csr<T>& a, Chunk& chunk, RowSegmentSplit<T>& split) {
  const int32_t* col = a.col_idx.data();
  const T* val = a.values.data();
  const int32_t panel_width = split.panel_width, threshold = split.threshold;
  for (int32_t r = chunk.first_row; r < chunk.end_row; ++r) {
    const int32_t light_begin = chunk.light_nnz;
    for_each_segment(col, a.row_ptr[std::size_t(r)], a.row_ptr[std::size_t(r) + 1], panel_width,
                     [&](int32_t panel, int32_t begin, int32_t end) {
                       if (end - begin >= threshold) {
                         const int32_t s = chunk.panel_segments[std::size_t(panel)]++;
                         int32_t out = chunk.panel_nnz[std::size_t(panel)];
                         split.seg_row[std::size_t(s)] = r;
                         split.seg_ptr[std::size_t(s)] = out;
                         const int32_t panel_start = panel * panel_width;
                         for (int32_t e = begin; e < end; ++e, ++out) {
                           split.heavy_col[std::size_t(out)] = col[e] - panel_start;
                           split.heavy_val[std::size_t(out)] = val[e];
                         }
                         chunk.panel_nnz[std::size_t(panel)] = out;
                       } else {
                         std::copy(col + begin, col + end, split.light_col.begin() + chunk.light_nnz);
                         std::copy(val + begin, val + end, split.light_val.begin() + chunk.light_nnz);
                         chunk.light_nnz += end - begin;
                       }
                     });
    if (chunk.light_nnz > light_begin) {
      split.light_row[std::size_t(chunk.light_rows)] = r;
      split.light_ptr[std::size_t(chunk.light_rows) + 1] = chunk.light_nnz;
      ++chunk.light_rows;
    }
  }
}

// Cuts every panel's segment range into items of at most max_segments_per_block.
template <class T>
void make_work_items(RowSegmentSplit<T>& split) {
  const int32_t per_block = split.max_segments_per_block;
  for (int32_t p = 0; p < split.panels; ++p) {
    const int32_t end = split.panel_ptr[std::size_t(p) + 1];
    for (int32_t begin = split.panel_ptr[std::size_t(p)]; begin < end; begin += std::min(per_block, end - begin)) {
      split.block_panel.push_back(p);
      split.block_seg_begin.push_back(begin);
      split.block_seg_end.push_back(begin + std::min(per_block, end - begin));
    }
  }
}

}  // namespace

template <class T>
RowSegmentSplit<T> build_row_segments(const Csr<T>& a, int32_t panel_width, int32_t threshold,
                                      int32_t max_segments_per_block, int32_t threads) {
  require_at_least("panel width", panel_width, 1);
  require_at_least("heavy threshold", threshold, 1);
  require_at_least("max segments per block", max_segments_per_block, 1);
  require_at_least("builder threads", threads, 0);
  validate(a, /*require_sorted=*/true);

  RowSegmentSplit<T> split;
  split.rows = a.rows;
  split.cols = a.cols;
  split.panel_width = panel_width;
  split.threshold = threshold;
  split.panels = int32_t((int64_t(a.cols) + panel_width - 1) / panel_width);
  split.max_segments_per_block = max_segments_per_block;

  const int32_t count = pick_chunks(a.nnz(), a.rows, split.panels, threads);
  std::vector<Chunk> chunks = make_chunks(a.row_ptr, a.rows, split.panels, count);
  run_chunks(count, [&](int32_t c) { count_chunk(a, panel_width, threshold, chunks[std::size_t(c)]); });
  counts_to_cursors(chunks, split);
  allocate(split);
  run_chunks(count, [&](int32_t c) { fill_chunk(a, chunks[std::size_t(c)], split); });
  make_work_items(split);
  return split;
}

#define SPARSEJIT_INSTANTIATE(T) \
  template RowSegmentSplit<T> build_row_segments(const Csr<T>&, int32_t, int32_t, int32_t, int32_t);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
