#include "variants/spgemm/bitmap_passes.hpp"

#include <algorithm>

#include "cuda/driver_api.hpp"
#include "cuda/scratch_pool.hpp"
#include "ops/call_common.hpp"
#include "ops/spgemm_scan.hpp"
#include "ops/spgemm_tile_sort.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::variants::spgemm {

namespace {

constexpr int kBlock = 256;
constexpr std::size_t kAlign = 256;
constexpr const char* kPasses[] = {"pack", "count", "expand", "tiles", "positions", "multiply"};
// The tiles pass's threads (4 a tile) loop over C's tiles (their count stays on the device): at
// most this many.
constexpr int64_t kTileThreads = int64_t(1) << 21;
// The multiply pass's consecutive tiles of C per warp (a tile has a few products: on cyl6 2.7 on
// average, so one tile per warp left most of a warp's 32 product loads unused; 8 made the warps
// holding the longest tiles, up to 181 products there, the kernel's tail). The numeric phase's
// multiply takes the same: 1 or 2 were 1.1-1.4x faster where its tiles lose anyway (bcsstk13,
// cavity19) and 1.05-1.8x slower where they win or come near (cyl6, dense blocks; H200,
// bench/results/2026-12-03-h200-spgemm-numeric-tiles).
constexpr int kTilesPerWarp = 4;

bool is_half(const std::string& precision) { return precision == "fp16" || precision == "bf16"; }

BitmapLayout layout_for(const BitmapSizes& s, std::size_t value_bytes, std::size_t temp_bytes) {
  BitmapLayout l;
  cuda::ScratchCursor cursor(kAlign);
  const auto take = [&](int64_t count, std::size_t bytes) { return cursor.take(std::size_t(count) * bytes); };
  l.a_packed = take(s.a_packed, value_bytes);
  l.b_packed = take(s.b_packed, value_bytes);
  l.counts = take(s.a_tiles + 1, 4);
  l.prod_off = take(s.a_tiles + 1, 4);
  l.keys = take(s.products, 8);
  l.pairs = take(s.products, 8);
  l.sorted_keys = take(s.products, 8);
  l.sorted_pairs = take(s.products, 8);
  l.tile_keys = take(s.products, 8);
  l.run_length = take(s.products + 1, 4);
  l.run_start = take(s.products + 1, 4);
  l.runs = take(1, 4);
  l.c_bits = take(s.products, 8);
  l.row_counts = take(s.m + 1, 4);
  l.tile_row_counts = take(formats::tiles_across(s.m) + 1, 4);
  l.tile_row_ptr = take(formats::tiles_across(s.m) + 1, 4);
  l.temp_bytes = temp_bytes;
  l.temp = cursor.take(temp_bytes);
  l.total = cursor.total();
  return l;
}

// The most items one of CUB's passes takes: the products, A's tiles, C's rows or tile rows.
int64_t most_items(const BitmapSizes& s) { return std::max({s.products + 1, s.a_tiles + 1, s.m + 1}); }

// The planner's bound on CUB's temporary storage (it cannot ask CUB without a device): the
// radix sort's double buffers are ours, so its storage is a histogram and tile state per
// 2^12 items at most, the scans' and encoding's a 16-byte state per tile of 64 items; the
// execution takes the larger of this and CUB's answers.
std::size_t planned_temp_bytes(const BitmapSizes& s) { return std::size_t(most_items(s)) / 4 + (std::size_t(1) << 20); }

}  // namespace

jit::KernelSpec bitmap_pass_spec(BitmapPass pass, DType dtype, const std::string& precision, bool values_only) {
  const bool f64 = dtype == DType::F64, half = !f64 && is_half(precision);
  const bool values = pass == kMultiply && values_only;
  std::string name = std::string("sj_spgemm_bitmap_") + kPasses[pass] + (values ? "_values" : "") + (f64 ? "_f64" : "_f32");
  if (pass == kMultiply && !f64) name += precision == "full" ? "_3xtf32" : "_" + precision;
  nlohmann::json params = {{"value_t", f64 ? "double" : "float"},
                           {"f64", f64},
                           {"tf32", !f64 && !half},
                           {"split3", !f64 && precision == "full"},
                           {"half", half},
                           {"half_type", half ? (precision == "fp16" ? "f16" : "bf16") : ""},
                           {"columns", !values},
                           {"block_threads", kBlock},
                           {"tiles_per_warp", kTilesPerWarp}};
  for (int p = 0; p < kBitmapPassCount; ++p) params[kPasses[p]] = p == pass;
  return {"spgemm_bitmap_tc.cu", name, params, {}};
}

BitmapSizes bitmap_sizes(const SpgemmFeatures& f, int64_t m, int64_t n) {
  BitmapSizes s;
  s.products = f.tile_products;
  s.a_tiles = f.a_tiles;
  s.b_tiles = f.b_tiles;
  s.m = m;
  s.a_packed = f.a.nnz;
  s.b_packed = f.b.nnz;
  s.end_bit = formats::tile_key_bits(formats::tiles_across(m), formats::tiles_across(n));  // C's tile keys
  return s;
}

BitmapLayout planned_bitmap_layout(const BitmapSizes& s, std::size_t value_bytes) {
  return layout_for(s, value_bytes, planned_temp_bytes(s));
}

BitmapLayout executed_bitmap_layout(const BitmapSizes& s, std::size_t value_bytes) {
  const std::size_t temp =
      std::max({planned_temp_bytes(s), ops::tile_sort_bytes(s.products, s.end_bit), ops::exclusive_scan_bytes(most_items(s))});
  return layout_for(s, value_bytes, temp);
}

template <class T>
std::shared_ptr<formats::DeviceBitmapTiles> bitmap_tiles_of(const Context& context, const DeviceCsr<T>& m, int64_t tiles,
                                                            CUstream stream) {
  return m.template get_or_create<formats::DeviceBitmapTiles>("spgemm_bitmap_tiles", [&] {
    return std::make_shared<formats::DeviceBitmapTiles>(
        formats::build_bitmap_tiles_gpu(context, m.rows(), m.cols(), m.nnz(), m.row_ptr().ptr(), m.col_idx().ptr(), tiles, stream));
  });
}

template <class T>
void BitmapSteps<T>::launch(BitmapPass pass, int64_t threads, void** args, CUstream stream, bool early) const {
  kernels_[pass].launch({ops::blocks_for(std::max<int64_t>(threads, 1), kBlock), 1, 1}, {unsigned(kBlock), 1, 1}, 0, stream, args, early);
}

template <class T>
void BitmapSteps<T>::pack(const DeviceCsr<T>& m, const formats::DeviceBitmapTiles& tiles, CUdeviceptr packed, CUstream stream,
                          bool early) const {
  SPARSEJIT_CU(cuMemsetD8Async, packed, 0, std::size_t(m.nnz()) * sizeof(T), stream);  // at least the packed values
  int nnz = int(m.nnz());
  CUdeviceptr slot = tiles.slot.ptr(), values = m.values().ptr();
  void* args[] = {&nnz, &slot, &values, &packed};
  launch(kPack, std::min<int64_t>(nnz, int64_t(kBlock) * 65535), args, stream, early);
}

// Product offsets per tile of A, then every product's key and pair of tiles.
template <class T>
void BitmapSteps<T>::expand(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr base, CUstream stream,
                            bool early) const {
  int a_tiles = int(a.tiles), products = int(sizes_.products);
  CUdeviceptr a_tile_row = a.tile_row.ptr(), a_tile_col = a.tile_col.ptr();
  CUdeviceptr b_row_ptr = b.row_ptr.ptr(), b_tile_col = b.tile_col.ptr();
  CUdeviceptr counts = base + layout_.counts, prod_off = base + layout_.prod_off;
  void* count_args[] = {&a_tiles, &a_tile_col, &b_row_ptr, &counts};
  launch(kCount, int64_t(a_tiles) + 1, count_args, stream, early);
  ops::exclusive_scan(reinterpret_cast<const int32_t*>(counts), reinterpret_cast<int32_t*>(prod_off), int64_t(a_tiles) + 1,
                      reinterpret_cast<void*>(base + layout_.temp), layout_.temp_bytes, stream);
  long long b_tile_cols = b.tile_cols;
  CUdeviceptr keys = base + layout_.keys, pairs = base + layout_.pairs;
  void* args[] = {&products, &a_tiles, &prod_off, &a_tile_row, &a_tile_col, &b_row_ptr, &b_tile_col, &b_tile_cols, &keys, &pairs};
  launch(kExpand, products, args, stream, early);
}

// The products sorted by C's tile, the runs of one tile (their starts scanned from their
// lengths, zeroed past the run count).
template <class T>
void BitmapSteps<T>::group(CUdeviceptr base, CUstream stream) const {
  const int64_t n = sizes_.products;
  void* temp = reinterpret_cast<void*>(base + layout_.temp);
  const auto u64_at = [&](std::size_t offset) { return reinterpret_cast<uint64_t*>(base + offset); };
  const auto i32_at = [&](std::size_t offset) { return reinterpret_cast<int32_t*>(base + offset); };
  ops::sort_pairs(u64_at(layout_.keys), u64_at(layout_.sorted_keys), u64_at(layout_.pairs), u64_at(layout_.sorted_pairs), n,
                  sizes_.end_bit, temp, layout_.temp_bytes, stream);
  SPARSEJIT_CU(cuMemsetD32Async, base + layout_.run_length, 0, std::size_t(n) + 1, stream);
  ops::run_lengths(u64_at(layout_.sorted_keys), u64_at(layout_.tile_keys), i32_at(layout_.run_length), i32_at(layout_.runs), n, temp,
                   layout_.temp_bytes, stream);
  ops::exclusive_scan(i32_at(layout_.run_length), i32_at(layout_.run_start), n + 1, temp, layout_.temp_bytes, stream);
}

// Each tile of C's bitmap, its rows' entries scanned into C's row offsets and the tile rows'
// tiles into their first tiles.
template <class T>
void BitmapSteps<T>::count_rows(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr base,
                                CUdeviceptr c_row_ptr, CUstream stream, bool early) const {
  const int64_t m = sizes_.m, tile_rows = formats::tiles_across(m);
  CUdeviceptr row_counts = base + layout_.row_counts, tile_row_counts = base + layout_.tile_row_counts;
  SPARSEJIT_CU(cuMemsetD32Async, row_counts, 0, std::size_t(m) + 1, stream);
  SPARSEJIT_CU(cuMemsetD32Async, tile_row_counts, 0, std::size_t(tile_rows) + 1, stream);
  long long b_tile_cols = b.tile_cols;
  CUdeviceptr runs = base + layout_.runs, run_start = base + layout_.run_start, run_length = base + layout_.run_length;
  CUdeviceptr pairs = base + layout_.sorted_pairs, a_bits = a.bits.ptr(), b_bits = b.bits.ptr();
  CUdeviceptr tile_keys = base + layout_.tile_keys, c_bits = base + layout_.c_bits;
  void* args[] = {&runs, &run_start, &run_length, &pairs, &a_bits, &b_bits, &tile_keys, &b_tile_cols, &c_bits, &row_counts,
                  &tile_row_counts};
  launch(kTiles, std::min(4 * sizes_.products, kTileThreads), args, stream, early);
  void* temp = reinterpret_cast<void*>(base + layout_.temp);
  ops::exclusive_scan(reinterpret_cast<const int32_t*>(row_counts), reinterpret_cast<int32_t*>(c_row_ptr), m + 1, temp,
                      layout_.temp_bytes, stream);
  ops::exclusive_scan(reinterpret_cast<const int32_t*>(tile_row_counts), reinterpret_cast<int32_t*>(base + layout_.tile_row_ptr),
                      tile_rows + 1, temp, layout_.temp_bytes, stream);
}

template <class T>
void BitmapSteps<T>::symbolic(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr base,
                              CUdeviceptr c_row_ptr, CUstream stream, bool early) const {
  expand(a, b, base, stream, early);
  group(base, stream);
  count_rows(a, b, base, c_row_ptr, stream, early);
}

// A warp per tile row of C.
template <class T>
void BitmapSteps<T>::positions(CUdeviceptr base, CUdeviceptr c_row_ptr, CUdeviceptr tile_pos, CUstream stream, bool early) const {
  int m = int(sizes_.m), tile_rows = int(formats::tiles_across(m));
  CUdeviceptr tile_row_ptr = base + layout_.tile_row_ptr, c_bits = base + layout_.c_bits;
  void* args[] = {&tile_rows, &m, &tile_row_ptr, &c_bits, &c_row_ptr, &tile_pos};
  launch(kPositions, int64_t(tile_rows) * 32, args, stream, early);
}

// A warp per kTilesPerWarp tiles of C.
template <class T>
void BitmapSteps<T>::multiply(const formats::DeviceBitmapTiles& a, const formats::DeviceBitmapTiles& b, CUdeviceptr base,
                              CUdeviceptr b_packed, int c_tiles, CUdeviceptr tile_pos, CUdeviceptr c_col, CUdeviceptr c_val,
                              CUstream stream, bool early) const {
  long long b_tile_cols = b.tile_cols;
  CUdeviceptr run_start = base + layout_.run_start, pairs = base + layout_.sorted_pairs;
  CUdeviceptr a_bits = a.bits.ptr(), a_offset = a.offset.ptr(), a_packed = base + layout_.a_packed;
  CUdeviceptr b_bits = b.bits.ptr(), b_offset = b.offset.ptr(), tile_keys = base + layout_.tile_keys, c_bits = base + layout_.c_bits;
  void* args[] = {&c_tiles, &run_start, &pairs, &a_bits, &a_offset, &a_packed, &b_bits, &b_offset, &b_packed,
                  &c_bits, &tile_pos, &tile_keys, &b_tile_cols, &c_col, &c_val};
  launch(kMultiply, (int64_t(c_tiles) + kTilesPerWarp - 1) / kTilesPerWarp * 32, args, stream, early);
}

#define SPARSEJIT_INSTANTIATE(T)                                                                                                 \
  template std::shared_ptr<formats::DeviceBitmapTiles> bitmap_tiles_of<T>(const Context&, const DeviceCsr<T>&, int64_t, CUstream); \
  template class BitmapSteps<T>;
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::variants::spgemm
