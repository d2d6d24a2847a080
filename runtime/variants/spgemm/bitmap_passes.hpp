// bitmap_tc's passes (templates/spgemm_bitmap_tc.cu) as steps over one scratch block. The
// variant's call (bitmap_tc.cpp) runs them all; the numeric phase by tiles
// (ops/spgemm_reuse_tiles.cpp) runs the pattern's steps once, keeps their arrays, and then only
// packs A's and B's values and multiplies each call.
//   pack        A's or B's values scattered into their tiles' packed array (cleared first)
//   expand      every tile product (tile (I, K) of A times each tile of B's tile row K) gets
//               the key of C's tile (I, J) and the pair of tiles it multiplies
//   group       CUB's radix sort of the products by key, then the runs of equal keys: C's tiles
//   count_rows  each tile of C's bitmap and its rows' entries counted into C's row counts;
//               CUB's scans make C's row offsets and the tile rows' first tiles
//   positions   where each tile's rows start in C
//   multiply    a warp per 4 consecutive tiles of C sums their tile products on tensor cores and
//               writes the tiles' sums (and, unless values_only, their columns)
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cuda/module.hpp"
#include "formats/spgemm_bitmap_tiles_gpu.hpp"
#include "jit/kernel_spec.hpp"
#include "plan/planner.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/features.hpp"

namespace sparsejit::variants::spgemm {

enum BitmapPass { kPack, kCount, kExpand, kTiles, kPositions, kMultiply, kBitmapPassCount };

// The kernel of one pass. precision: "full" (f64 in f64; f32 by the 3xTF32 split) or, f32
// only, "tf32", "fp16", "bf16". values_only: the multiply pass writes C's sums and not its
// columns (the numeric phase, whose columns are C's own).
jit::KernelSpec bitmap_pass_spec(BitmapPass pass, DType dtype, const std::string& precision, bool values_only = false);

// What sizes a call's scratch: the tile products, A's tiles, C's rows and the packed values
// (at most each operand's entries).
struct BitmapSizes {
  int64_t products = 0, a_tiles = 0, b_tiles = 0, m = 0, a_packed = 0, b_packed = 0;
  int end_bit = 1;
};
BitmapSizes bitmap_sizes(const SpgemmFeatures& features, int64_t m, int64_t n);

// Where each piece of the scratch lies (byte offsets into one block).
struct BitmapLayout {
  std::size_t a_packed = 0, b_packed = 0, counts = 0, prod_off = 0, keys = 0, pairs = 0, sorted_keys = 0, sorted_pairs = 0,
              tile_keys = 0, run_length = 0, run_start = 0, runs = 0, c_bits = 0, row_counts = 0, tile_row_counts = 0,
              tile_row_ptr = 0, temp = 0, temp_bytes = 0, total = 0;
};
// With the planner's bound on CUB's temporary storage (planned) or the larger of it and CUB's
// own answers (executed: needs the CUDA runtime's CUB, not a device).
BitmapLayout planned_bitmap_layout(const BitmapSizes& sizes, std::size_t value_bytes);
BitmapLayout executed_bitmap_layout(const BitmapSizes& sizes, std::size_t value_bytes);

// tile_pos: 8 int32 per tile of C.
inline int64_t tile_pos_bytes(int64_t c_tiles) { return 32 * c_tiles; }

// The operand's tiles, built on the device by the first call with its pattern (`tiles` of
// them, from the features) and kept on its handle.
template <class T>
std::shared_ptr<formats::DeviceBitmapTiles> bitmap_tiles_of(const Context& context, const DeviceCsr<T>& m, int64_t tiles,
                                                            CUstream stream);

// The steps, with the kernels of one precision (by BitmapPass; kMultiply as its spec said).
template <class T>
class BitmapSteps {
 public:
  BitmapSteps(std::vector<cuda::Kernel> kernels, BitmapSizes sizes, BitmapLayout layout)
      : kernels_(std::move(kernels)), sizes_(sizes), layout_(layout) {}
  const BitmapSizes& sizes() const { return sizes_; }
  const BitmapLayout& layout() const { return layout_; }

  // `packed`: the operand's place in the scratch (layout's a_packed or b_packed).
  void pack(const DeviceCsr<T>& m, const formats::DeviceBitmapTiles& tiles, CUdeviceptr packed, CUstream stream, bool early) const;
  // expand, group, count_rows: C's row offsets into c_row_ptr (m + 1 int32); the run count and
  // C's bitmaps in the scratch.
  void symbolic(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr scratch, CUdeviceptr c_row_ptr,
                CUstream stream, bool early) const;
  void positions(CUdeviceptr scratch, CUdeviceptr c_row_ptr, CUdeviceptr tile_pos, CUstream stream, bool early) const;
  // c_col is not read when the multiply pass is values-only.
  void multiply(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr scratch, CUdeviceptr b_packed,
                int c_tiles, CUdeviceptr tile_pos, CUdeviceptr c_col, CUdeviceptr c_val, CUstream stream, bool early) const;

 private:
  void launch(BitmapPass pass, int64_t threads, void** args, CUstream stream, bool early) const;
  void expand(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr scratch, CUstream stream,
              bool early) const;
  void group(CUdeviceptr scratch, CUstream stream) const;
  void count_rows(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr scratch, CUdeviceptr c_row_ptr,
                  CUstream stream, bool early) const;

  std::vector<cuda::Kernel> kernels_;
  BitmapSizes sizes_;
  BitmapLayout layout_;
};

}  // namespace sparsejit::variants::spgemm
