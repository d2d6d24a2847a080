// The RS-SpMM heavy/light split of a CSR matrix (RS-SpMM section 3.1; RS-SpMMT section 6):
// the host builder and the layout. Every array is a flat vector of int32 indices or values,
// offsets only, no pointers. The runtime builds the same arrays on the GPU
// (row_segments_gpu.hpp, 50x faster on large matrices); this builder is the reference the
// GPU one is tested against.
//
// Configuration defaults:
//   kDefaultSegmentsPerBlock = 64   heavy segments one thread block handles at most (a work
//                                   item); a panel with more segments is cut into several
//                                   work items so a crowded panel does not serialise on one SM
//   threads = 0                     builder threads: 0 picks min(hardware threads, 8, one per
//                                   kMinNonzerosPerThread nonzeros); any count is lowered to
//                                   keep threads * panels counters within max(nnz, panels).
//                                   The result is identical for every thread count.
//
// ---------------------------------------------------------------------------------------
// Definitions. Columns are cut into panels = ceil(cols / W) column panels; panel p covers
// the columns [p * W, min((p + 1) * W, cols)). A row segment is the part of one row inside
// one panel. A segment is heavy when it holds >= T nonzeros (the definition of
// row_segment_split in features.hpp, whose counts this split reproduces exactly); all its
// nonzeros go to the heavy part. Every other nonzero is light.
//
// Heavy part: one DCSR per panel, the panels stored one after the other.
//   panel_ptr[panels + 1]    panel p owns heavy segments [panel_ptr[p], panel_ptr[p + 1])
//   seg_row[heavy_segments]  the row of each heavy segment; ascending within a panel
//   seg_ptr[heavy_segments + 1]
//                            segment s owns heavy nonzeros [seg_ptr[s], seg_ptr[s + 1])
//   heavy_col[heavy_nnz]     column RELATIVE to the panel start, in [0, panel_columns(p)),
//                            ascending within a segment. The absolute column is
//                            p * W + heavy_col[e]; the panel p comes from the work item
//                            (block_panel) or from panel_ptr.
//   heavy_val[heavy_nnz]
// Work items of the heavy kernel, one thread block each:
//   block_panel[blocks]      the panel of the item
//   block_seg_begin[blocks], block_seg_end[blocks]
//                            the item's segments [begin, end), global segment indices
//                            (into seg_row and seg_ptr), all inside panel block_panel,
//                            at most max_segments_per_block of them. Items are ordered by
//                            panel and then by segment; panels without heavy segments have
//                            no item; together the items cover every heavy segment once.
// Light part: CSR over the rows that keep at least one light nonzero (light_rows of them).
//   light_row[light_rows]    row ids, ascending
//   light_ptr[light_rows + 1]
//                            light row i owns light nonzeros [light_ptr[i], light_ptr[i + 1])
//   light_col[light_nnz]     ABSOLUTE column, ascending within a row
//   light_val[light_nnz]
// The arrays are not padded: a warp that reads 32 indices at a time past the end of a
// segment or light row must guard the read against seg_ptr[s + 1] / light_ptr[i + 1].
//
// ---------------------------------------------------------------------------------------
// Example: 6 x 8, W = 4, T = 2 (panel 0: columns 0..3, panel 1: columns 4..7); the entries
// are numbered 1..19 in CSR order and each value is its number:
//            panel 0       panel 1
//   row 0:  1  2  .  3 |  .  .  .  4     panel 0: 3 nonzeros, heavy; panel 1: 1, light
//   row 1:  .  .  .  . |  .  .  .  .     empty
//   row 2:  .  .  5  . |  .  6  7  .     panel 0: 1, light;  panel 1: 2, heavy
//   row 3:  8  9 10 11 | 12 13 14 15     both heavy
//   row 4:  .  .  . 16 | 17  .  .  .     both light
//   row 5:  .  .  .  . |  .  . 18 19     panel 1: 2, heavy
// gives
//   panel_ptr = {0, 2, 5}
//   seg_row   = {0, 3,  2, 3, 5}                       (panel 0 | panel 1)
//   seg_ptr   = {0, 3, 7, 9, 13, 15}
//   heavy_col = {0 1 3, 0 1 2 3, 1 2, 0 1 2 3, 2 3}
//   heavy_val = {1 2 3, 8 9 10 11, 6 7, 12 13 14 15, 18 19}
//   light_row = {0, 2, 4}   light_ptr = {0, 1, 2, 4}
//   light_col = {7, 2, 3, 4}   light_val = {4, 5, 16, 17}
//   heavy_segments 5, heavy_nnz 15, light_rows 3, light_nnz 4
// and with max_segments_per_block = 2 the work items (panel, begin, end) are
//   (0, 0, 2), (1, 2, 4), (1, 4, 5).
//
// ---------------------------------------------------------------------------------------
// How the kernels read it. A is rows x cols; K is the dense width. Heavy and light results
// are both ADDED into C (atomically: several work items and the light part meet on one
// output row), so C starts zeroed (or scaled by beta) before either kernel runs.
//
// C = A·B (RS-SpMM), B is cols x K, C is rows x K.
//   heavy, work item (p, begin, end): stage B's rows [p * W, p * W + panel_columns(p)) in
//     shared memory (row heavy_col[e] of the staged tile is row p * W + heavy_col[e] of B);
//     for each segment s in [begin, end): acc = sum over e in [seg_ptr[s], seg_ptr[s + 1])
//     of heavy_val[e] * tile[heavy_col[e]][:]; C[seg_row[s]][:] += acc.
//   light, light row i: C[light_row[i]][:] += sum over e of light_val[e] * B[light_col[e]][:].
//
// C = Aᵀ·B (RS-SpMMT) reads the SAME arrays with the roles swapped: B is rows x K and
// C is cols x K; a segment's row indexes B and its columns index C.
//   heavy, work item (p, begin, end): zero a shared tile of panel_columns(p) x K partial
//     outputs; for each segment s in [begin, end), with b = B[seg_row[s]][:]: for each e,
//     tile[heavy_col[e]][:] += heavy_val[e] * b (shared atomics: warps of one block may
//     hit the same column); then C[p * W + i][:] += tile[i][:] for every i (global
//     atomics: other items of panel p and the light part write the same rows of C).
//   light, light row i, with b = B[light_row[i]][:]: for each e,
//     C[light_col[e]][:] += light_val[e] * b.
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/matrix.hpp"

namespace sparsejit {

inline constexpr int32_t kDefaultSegmentsPerBlock = 64;
// Below this many nonzeros per thread the automatic thread count uses fewer threads: a
// thread start costs more than a pass over a small matrix.
inline constexpr int64_t kMinNonzerosPerThread = int64_t(1) << 20;

template <class T>
struct RowSegmentSplit {
  int32_t rows = 0;
  int32_t cols = 0;
  int32_t panel_width = 0;             // W
  int32_t threshold = 0;               // T
  int32_t panels = 0;                  // ceil(cols / W)
  int32_t max_segments_per_block = 0;  // the bound on one work item's segments

  // Heavy part (DCSR per panel).
  std::vector<int32_t> panel_ptr{0};
  std::vector<int32_t> seg_row;
  std::vector<int32_t> seg_ptr{0};
  std::vector<int32_t> heavy_col;
  std::vector<T> heavy_val;

  // Heavy work items.
  std::vector<int32_t> block_panel;
  std::vector<int32_t> block_seg_begin;
  std::vector<int32_t> block_seg_end;

  // Light part (CSR over the rows with light nonzeros).
  std::vector<int32_t> light_row;
  std::vector<int32_t> light_ptr{0};
  std::vector<int32_t> light_col;
  std::vector<T> light_val;

  // Statistics; they equal row_segment_split(a.pattern(), W, T)'s fields of the same name.
  int64_t heavy_segments = 0;
  int64_t heavy_nnz = 0;
  int64_t light_rows = 0;
  int64_t light_nnz = 0;

  int32_t blocks() const { return int32_t(block_panel.size()); }
  int32_t panel_begin(int32_t p) const { return int32_t(int64_t(p) * panel_width); }
  // Width of panel p: W for all but possibly the last panel.
  int32_t panel_columns(int32_t p) const {
    const int64_t end = int64_t(p + 1) * panel_width;
    return int32_t((end < cols ? end : cols) - panel_begin(p));
  }
};

// Splits a into heavy segments and light rows as documented above, in two linear passes
// (count, then fill) over the CSR, each run by `threads` threads over contiguous row
// ranges (0: automatic, see the defaults above): O(nnz + rows + panels * threads) work and
// no memory beyond the result and per-thread panel counters. About 0.6 s for 30M nonzeros
// on one core, validation included.
// Throws InvalidInputError naming the value when panel_width, threshold or
// max_segments_per_block is < 1 or threads < 0, and (via validate) naming the first bad
// index when a is malformed or its rows are not sorted with unique columns.
// Instantiated for float, double, half and bfloat16.
template <class T>
RowSegmentSplit<T> build_row_segments(const Csr<T>& a, int32_t panel_width, int32_t threshold,
                                      int32_t max_segments_per_block = kDefaultSegmentsPerBlock,
                                      int32_t threads = 0);

}  // namespace sparsejit
