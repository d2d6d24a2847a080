// bitmap_tc: tSparse's SpGEMM over 8 x 8 bitmap tiles with the tile products on tensor cores
// (templates/spgemm_bitmap_tc.cu). A and B are cut into tiles on the device by the first call
// with their handle (formats/spgemm_bitmap_tiles_gpu, a sort of the entries by tile and one
// synchronization; kept on the handle); one call:
//   pack        A's and B's values scattered into their tiles' packed arrays
//   expand      every tile product (tile (I, K) of A times each tile of B's tile row K) gets
//               the key of C's tile (I, J) and the pair of tiles it multiplies
//   sort        CUB's radix sort of the products by key, then the runs of equal keys: C's tiles
//   tiles       each tile of C's bitmap (the OR of its products' boolean products: which slots
//               they reach) and its rows' entries counted into C's row counts; CUB's scans
//               make C's row offsets and the tile rows' first tiles
//   sync        the one synchronization: NNZ(C) and the tile count; C's arrays allocated
//   positions   where each tile's rows start in C (tiles in column order: rows come out sorted)
//   multiply    a warp per 4 consecutive tiles of C sums their tile products on tensor cores
//               (f64: DMMA; f32: TF32 with the 3xTF32 split for f32 accuracy; reduced precision
//               only a caller asks for: precision = "tf32", one TF32 product, or "fp16" /
//               "bf16", the values rounded to them with f32 sums) and writes the tiles'
//               columns and sums
// Every slot the patterns reach is kept, a sum that cancels to zero included (the reference's
// structural product). Against the paper: C's tile pattern comes from one sort instead of a
// counting kernel on tensor cores, and C is CSR, not a tile format.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "formats/spgemm_bitmap_tiles_gpu.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "ops/spgemm_scan.hpp"
#include "ops/spgemm_tile_sort.hpp"
#include "sparsejit/error.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::variants::spgemm {

namespace {

constexpr int kBlock = 256;
constexpr std::size_t kAlign = 256;
constexpr const char* kPasses[] = {"pack", "count", "expand", "tiles", "positions", "multiply"};
enum Pass { kPack, kCount, kExpand, kTiles, kPositions, kMultiply, kPassCount };
// The tiles pass's threads (4 a tile) loop over C's tiles (their count stays on the device): at
// most this many.
constexpr int64_t kTileThreads = int64_t(1) << 21;
// The multiply pass's consecutive tiles of C per warp (a tile has a few products: on cyl6 2.7 on
// average, so one tile per warp left most of a warp's 32 product loads unused; 8 made the warps
// holding the longest tiles, up to 181 products there, the kernel's tail).
constexpr int kTilesPerWarp = 4;

using formats::DeviceBitmapTiles;

// The operand's tiles, built on the device on the first call with its pattern (`tiles` of them,
// from the features) and kept on its handle.
template <class T>
std::shared_ptr<DeviceBitmapTiles> tiles_of(const Context& context, const DeviceCsr<T>& m, int64_t tiles, CUstream stream) {
  return m.template get_or_create<DeviceBitmapTiles>("spgemm_bitmap_tiles", [&] {
    return std::make_shared<DeviceBitmapTiles>(formats::build_bitmap_tiles_gpu(context, m.rows(), m.cols(), m.nnz(), m.row_ptr().ptr(),
                                                                               m.col_idx().ptr(), tiles, stream));
  });
}

using formats::tile_key_bits;
using formats::tiles_across;

// What sizes a call's scratch: the tile products, A's tiles, C's rows and the packed values
// (at most each operand's entries).
struct Sizes {
  int64_t products = 0, a_tiles = 0, b_tiles = 0, m = 0, a_packed = 0, b_packed = 0;
  int end_bit = 1;
};

// Where each piece of a call's scratch lies (byte offsets into one block).
struct Layout {
  std::size_t a_packed = 0, b_packed = 0, counts = 0, prod_off = 0, keys = 0, pairs = 0, sorted_keys = 0, sorted_pairs = 0,
              tile_keys = 0, run_length = 0, run_start = 0, runs = 0, c_bits = 0, row_counts = 0, tile_row_counts = 0,
              tile_row_ptr = 0, temp = 0, temp_bytes = 0, total = 0;
};

// temp_bytes: the most CUB's sort, run-length encoding and scans need.
Layout layout_for(const Sizes& s, std::size_t value_bytes, std::size_t temp_bytes) {
  Layout l;
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
  l.tile_row_counts = take(tiles_across(s.m) + 1, 4);
  l.tile_row_ptr = take(tiles_across(s.m) + 1, 4);
  l.temp_bytes = temp_bytes;
  l.temp = cursor.take(temp_bytes);
  l.total = cursor.total();
  return l;
}

// The planner's bound on CUB's temporary storage (it cannot ask CUB without a device): the
// radix sort's double buffers are ours, so its storage is a histogram and tile state per
// 2^12 items at most, the scans' and encoding's a 16-byte state per tile of 64 items; the
// execution takes the larger of this and CUB's answers.
std::size_t temp_bytes_bound(int64_t items) { return std::size_t(items) / 4 + (std::size_t(1) << 20); }

// tile_pos: 8 int32 per tile of C (allocated after the synchronization, at the exact count).
int64_t tile_pos_bytes(int64_t c_tiles) { return 32 * c_tiles; }

// The tiles of an operand of `nnz` entries, at most: built once per handle and kept there (20
// bytes a tile, a tile per entry at most, and 4 bytes an entry for the slots), and the
// build's own scratch meanwhile (formats/spgemm_bitmap_tiles_gpu: about 41 bytes an entry).
int64_t tile_format_bytes(int64_t nnz) { return (20 + 4 + 41) * nnz; }

bool is_f64(DType dtype) { return dtype == DType::F64; }

// The f32 precisions the multiply pass offers: "full" (3xTF32) and, reduced and opt-in, "tf32",
// "fp16", "bf16".
bool is_half(const std::string& precision) { return precision == "fp16" || precision == "bf16"; }

jit::KernelSpec pass_spec(Pass pass, DType dtype, const std::string& precision) {
  const bool f64 = is_f64(dtype), half = !f64 && is_half(precision);
  std::string name = std::string("sj_spgemm_bitmap_") + kPasses[pass] + (f64 ? "_f64" : "_f32");
  if (pass == kMultiply && !f64) name += precision == "full" ? "_3xtf32" : "_" + precision;
  nlohmann::json params = {{"value_t", f64 ? "double" : "float"},
                           {"f64", f64},
                           {"tf32", !f64 && !half},
                           {"split3", !f64 && precision == "full"},
                           {"half", half},
                           {"half_type", half ? (precision == "fp16" ? "f16" : "bf16") : ""},
                           {"block_threads", kBlock},
                           {"tiles_per_warp", kTilesPerWarp}};
  for (int p = 0; p < kPassCount; ++p) params[kPasses[p]] = p == pass;
  return {"spgemm_bitmap_tc.cu", name, params, {}};
}

using PassKernels = std::vector<cuda::Kernel>;  // by Pass

template <class T>
class BitmapExecution final : public SpgemmExecution<T> {
 public:
  BitmapExecution(PassKernels kernels, Sizes sizes, Layout layout) : kernels_(std::move(kernels)), sizes_(sizes), layout_(layout) {}

  SpgemmOutput run(detail::RuntimeState& rt, const SpgemmOperands<T>& o) const override {
    const Context& context = rt.context;
    context.make_current();
    const CUstream stream = o.stream;
    int m = o.a.rows();
    SpgemmOutput c;
    cuda::ScratchPool& results = cuda::result_pool(context);
    c.row_ptr = new_output_array(context, &results, (std::size_t(m) + 1) * 4, stream);
    if (sizes_.products == 0) {  // no tile of A meets a tile of B: C is empty
      c.row_ptr.fill_bytes_async(0, stream);
      return c;
    }
    const Tiles tiles{tiles_of(context, o.a, sizes_.a_tiles, stream), tiles_of(context, o.b, sizes_.b_tiles, stream)};
    const cuda::ScratchPool::Block scratch = rt.scratch_pool().allocate(layout_.total, stream);
    const CUdeviceptr base = scratch.ptr();
    const auto at = [&](std::size_t offset) { return base + offset; };
    pack(o.a, *tiles.a, at(layout_.a_packed), stream, o.early);
    const bool one_operand = &o.a == &o.b;  // A·A: B's packed values are A's
    if (!one_operand) pack(o.b, *tiles.b, at(layout_.b_packed), stream, o.early);
    const CUdeviceptr b_packed = at(one_operand ? layout_.a_packed : layout_.b_packed);
    expand(tiles, at, stream, o.early);
    group_by_tile(at, stream);
    count_rows(tiles, at, c.row_ptr.ptr(), m, stream, o.early);

    struct {
      int32_t runs = 0, nnz = 0;
    } back;
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &back.runs, at(layout_.runs), 4, stream);
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &back.nnz, c.row_ptr.ptr() + 4 * std::size_t(m), 4, stream);
    SPARSEJIT_CU(cuStreamSynchronize, stream);
    if (back.runs < 0 || back.runs > sizes_.products || back.nnz < 0)
      throw CudaError("bitmap_tc: the sort gave " + std::to_string(back.runs) + " tiles of C from " + std::to_string(sizes_.products) +
                      " tile products and NNZ(C) = " + std::to_string(back.nnz) + " (a kernel fault)");
    c.nnz = back.nnz;
    c.col_idx = new_output_array(context, &results, std::size_t(c.nnz) * 4, stream);
    c.values = new_output_array(context, &results, std::size_t(c.nnz) * sizeof(T), stream);
    const cuda::ScratchPool::Block tile_pos = rt.scratch_pool().allocate(std::size_t(tile_pos_bytes(back.runs)), stream);
    write(o, tiles, at, b_packed, back.runs, c, tile_pos.ptr(), stream);
    return c;  // the scratch blocks are freed on the stream after the kernels above
  }

  // No numeric phase of its own (the call's sorted products are not kept on C): the whole call again.
  void recompute(detail::RuntimeState& rt, const SpgemmOperands<T>& o, const SpgemmTarget& c) const override {
    recompute_by_running(*this, rt, o, c);
  }

 private:
  // A's and B's tiles (one object when A and B are one handle).
  struct Tiles {
    std::shared_ptr<DeviceBitmapTiles> a, b;
  };

  void launch(Pass pass, int64_t threads, void** args, CUstream stream, bool early) const {
    kernels_[pass].launch({ops::blocks_for(std::max<int64_t>(threads, 1), kBlock), 1, 1}, {unsigned(kBlock), 1, 1}, 0, stream, args,
                          early);
  }

  // The operand's values into its tiles' packed array (cleared first: duplicates add).
  void pack(const DeviceCsr<T>& m, const DeviceBitmapTiles& tiles, CUdeviceptr packed, CUstream stream, bool early) const {
    SPARSEJIT_CU(cuMemsetD8Async, packed, 0, std::size_t(m.nnz()) * sizeof(T), stream);  // at least the packed values
    int nnz = int(m.nnz());
    CUdeviceptr slot = tiles.slot.ptr(), values = m.values().ptr();
    void* args[] = {&nnz, &slot, &values, &packed};
    launch(kPack, std::min<int64_t>(nnz, int64_t(kBlock) * 65535), args, stream, early);
  }

  // Product offsets per tile of A, then every product's key and pair of tiles.
  template <class At>
  void expand(const Tiles& tiles, const At& at, CUstream stream, bool early) const {
    const DeviceBitmapTiles &a = *tiles.a, &b = *tiles.b;
    int a_tiles = int(a.tiles), products = int(sizes_.products);
    CUdeviceptr a_tile_row = a.tile_row.ptr(), a_tile_col = a.tile_col.ptr();
    CUdeviceptr b_row_ptr = b.row_ptr.ptr(), b_tile_col = b.tile_col.ptr();
    CUdeviceptr counts = at(layout_.counts), prod_off = at(layout_.prod_off);
    void* count_args[] = {&a_tiles, &a_tile_col, &b_row_ptr, &counts};
    launch(kCount, int64_t(a_tiles) + 1, count_args, stream, early);
    ops::exclusive_scan(reinterpret_cast<const int32_t*>(counts), reinterpret_cast<int32_t*>(prod_off), int64_t(a_tiles) + 1,
                        reinterpret_cast<void*>(at(layout_.temp)), layout_.temp_bytes, stream);
    long long b_tile_cols = b.tile_cols;
    CUdeviceptr keys = at(layout_.keys), pairs = at(layout_.pairs);
    void* args[] = {&products, &a_tiles, &prod_off, &a_tile_row, &a_tile_col, &b_row_ptr, &b_tile_col, &b_tile_cols, &keys, &pairs};
    launch(kExpand, products, args, stream, early);
  }

  // The products sorted by C's tile, the runs of one tile (their starts scanned from their
  // lengths, zeroed past the run count).
  template <class At>
  void group_by_tile(const At& at, CUstream stream) const {
    const int64_t n = sizes_.products;
    void* temp = reinterpret_cast<void*>(at(layout_.temp));
    ops::sort_pairs(reinterpret_cast<const uint64_t*>(at(layout_.keys)), reinterpret_cast<uint64_t*>(at(layout_.sorted_keys)),
                    reinterpret_cast<const uint64_t*>(at(layout_.pairs)), reinterpret_cast<uint64_t*>(at(layout_.sorted_pairs)), n,
                    sizes_.end_bit, temp, layout_.temp_bytes, stream);
    SPARSEJIT_CU(cuMemsetD32Async, at(layout_.run_length), 0, std::size_t(n) + 1, stream);
    ops::run_lengths(reinterpret_cast<const uint64_t*>(at(layout_.sorted_keys)), reinterpret_cast<uint64_t*>(at(layout_.tile_keys)),
                     reinterpret_cast<int32_t*>(at(layout_.run_length)), reinterpret_cast<int32_t*>(at(layout_.runs)), n, temp,
                     layout_.temp_bytes, stream);
    ops::exclusive_scan(reinterpret_cast<const int32_t*>(at(layout_.run_length)), reinterpret_cast<int32_t*>(at(layout_.run_start)),
                        n + 1, temp, layout_.temp_bytes, stream);
  }

  // Each tile of C's bitmap, its rows' entries scanned into C's row offsets and the tile rows'
  // tiles into their first tiles.
  template <class At>
  void count_rows(const Tiles& tiles, const At& at, CUdeviceptr c_row_ptr, int m, CUstream stream, bool early) const {
    CUdeviceptr row_counts = at(layout_.row_counts), tile_row_counts = at(layout_.tile_row_counts);
    const int64_t tile_rows = tiles_across(m);
    SPARSEJIT_CU(cuMemsetD32Async, row_counts, 0, std::size_t(m) + 1, stream);
    SPARSEJIT_CU(cuMemsetD32Async, tile_row_counts, 0, std::size_t(tile_rows) + 1, stream);
    long long b_tile_cols = tiles.b->tile_cols;
    CUdeviceptr runs = at(layout_.runs), run_start = at(layout_.run_start), run_length = at(layout_.run_length);
    CUdeviceptr pairs = at(layout_.sorted_pairs), a_bits = tiles.a->bits.ptr(), b_bits = tiles.b->bits.ptr();
    CUdeviceptr tile_keys = at(layout_.tile_keys), c_bits = at(layout_.c_bits);
    void* args[] = {&runs, &run_start, &run_length, &pairs, &a_bits, &b_bits, &tile_keys, &b_tile_cols, &c_bits, &row_counts,
                    &tile_row_counts};
    launch(kTiles, std::min(4 * sizes_.products, kTileThreads), args, stream, early);
    void* temp = reinterpret_cast<void*>(at(layout_.temp));
    ops::exclusive_scan(reinterpret_cast<const int32_t*>(row_counts), reinterpret_cast<int32_t*>(c_row_ptr), int64_t(m) + 1, temp,
                        layout_.temp_bytes, stream);
    ops::exclusive_scan(reinterpret_cast<const int32_t*>(tile_row_counts), reinterpret_cast<int32_t*>(at(layout_.tile_row_ptr)),
                        tile_rows + 1, temp, layout_.temp_bytes, stream);
  }

  // Where C's tiles' rows start (a warp per tile row), then C's columns and values (a warp per
  // tile).
  template <class At>
  void write(const SpgemmOperands<T>& o, const Tiles& tiles, const At& at, CUdeviceptr b_packed, int c_tiles, const SpgemmOutput& c,
             CUdeviceptr tile_pos, CUstream stream) const {
    const DeviceBitmapTiles &a = *tiles.a, &b = *tiles.b;
    int m = o.a.rows(), tile_rows = int(tiles_across(m));
    long long b_tile_cols = b.tile_cols;
    CUdeviceptr tile_row_ptr = at(layout_.tile_row_ptr), tile_keys = at(layout_.tile_keys), c_bits = at(layout_.c_bits);
    CUdeviceptr c_row_ptr = c.row_ptr.ptr(), c_col = c.col_idx.ptr(), c_val = c.values.ptr();
    void* position_args[] = {&tile_rows, &m, &tile_row_ptr, &c_bits, &c_row_ptr, &tile_pos};
    launch(kPositions, int64_t(tile_rows) * 32, position_args, stream, o.early);
    CUdeviceptr run_start = at(layout_.run_start), pairs = at(layout_.sorted_pairs);
    CUdeviceptr a_bits = a.bits.ptr(), a_offset = a.offset.ptr(), a_packed = at(layout_.a_packed);
    CUdeviceptr b_bits = b.bits.ptr(), b_offset = b.offset.ptr();
    void* args[] = {&c_tiles, &run_start, &pairs, &a_bits, &a_offset, &a_packed, &b_bits, &b_offset, &b_packed,
                    &c_bits, &tile_pos, &tile_keys, &b_tile_cols, &c_col, &c_val};
    launch(kMultiply, (int64_t(c_tiles) + kTilesPerWarp - 1) / kTilesPerWarp * 32, args, stream, o.early);
  }

  PassKernels kernels_;
  Sizes sizes_;
  Layout layout_;
};

Sizes sizes_of(const SpgemmFeatures& f, const plan::SpgemmProblem& p) {
  Sizes s;
  s.products = f.tile_products;
  s.a_tiles = f.a_tiles;
  s.b_tiles = f.b_tiles;
  s.m = p.m;
  s.a_packed = f.a.nnz;
  s.b_packed = f.b.nnz;
  s.end_bit = tile_key_bits(tiles_across(p.m), tiles_across(p.n));  // C's tile keys
  return s;
}

// The most items one of CUB's passes takes: the products, A's tiles, C's rows or tile rows.
int64_t most_items(const Sizes& s) { return std::max({s.products + 1, s.a_tiles + 1, s.m + 1}); }

std::size_t planned_temp_bytes(const Sizes& s) { return temp_bytes_bound(most_items(s)); }

}  // namespace

class BitmapTc final : public SpgemmVariantOf<BitmapTc> {
 public:
  BitmapTc()
      : SpgemmVariantOf("bitmap_tc", 30,
                        "tSparse: A and B in 8x8 bitmap tiles, tile products sorted into C's tiles, each tile of C summed "
                        "on tensor cores (f64 DMMA; f32 3xTF32, or TF32 as opt-in reduced precision)") {}

  std::string rejected(const SpgemmPlanInputs& in) const override {
    std::string reason = SpgemmVariant::rejected(in);
    if (!reason.empty()) return reason;
    if (in.device.sm < 80) return "needs tensor cores with f64 and TF32 mma (sm_80 or later); the device is sm_" + std::to_string(in.device.sm);
    const int64_t limit = std::numeric_limits<int32_t>::max();
    if (in.features.tile_products > limit)
      return std::to_string(in.features.tile_products) + " tile products, more than its int32 indices address (2^31-1)";
    return "";
  }

  // precision: "full" (f64 in f64, f32 at f32 accuracy by the 3xTF32 split) or, for f32 only and
  // only when asked for, reduced: "tf32" (one TF32 product per pair), "fp16" or "bf16" (the
  // values rounded to them, f32 sums).
  nlohmann::json defaults(const SpgemmPlanInputs&, std::vector<DecisionStep>&) const override { return {{"precision", "full"}}; }

  void check(const plan::SpgemmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    const nlohmann::json& precision = params.at("precision");
    const bool known = precision.is_string() && (precision == "full" || precision == "tf32" || is_half(precision));
    if (!known)
      throw InvalidInputError("bitmap_tc: precision = " + precision.dump() + " must be \"full\" or, for f32, \"tf32\", \"fp16\" or \"bf16\"");
    if (precision != "full" && is_f64(problem.dtype))
      throw InvalidInputError("bitmap_tc: precision = " + precision.dump() + " applies to f32 values; f64 runs in f64 (\"full\")");
  }

  // launch: kernels, memsets and CUB's passes (about 16); sync: the one synchronization;
  // tile_build_entries: the device's tiling of A and B (once per handle, priced every call:
  // the planner cannot see a handle's cache); tile_products: expanded, sorted (64-bit keys),
  // ORed and multiplied on tensor cores, each.
  nlohmann::json cost_terms(const SpgemmPlanInputs& in, const nlohmann::json&) const override {
    return {{"launch", 16.0},
            {"sync", 1.0},
            {"tile_build_entries", double(in.features.a.nnz + in.features.b.nnz)},
            {"tile_products", double(in.features.tile_products)},
            {"rows", double(in.problem.m)}};
  }

  // The call's scratch (layout_for), the tile positions at one tile of C per product at most,
  // and the tiles of A and B with their build (the first call on a handle makes them; they
  // stay on the handle).
  int64_t workspace_bytes(const SpgemmPlanInputs& in, const nlohmann::json&) const override {
    const Sizes s = sizes_of(in.features, in.problem);
    return int64_t(layout_for(s, size_of(in.problem.dtype), planned_temp_bytes(s)).total) + tile_pos_bytes(s.products) +
           tile_format_bytes(in.features.a.nnz) + tile_format_bytes(in.features.b.nnz);
  }

  std::vector<nlohmann::json> search_space(const SpgemmPlanInputs&) const override { return {{{"precision", "full"}}}; }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpgemmProblem& problem) const override {
    std::vector<jit::KernelSpec> specs;
    for (int pass = 0; pass < kPassCount; ++pass) specs.push_back(pass_spec(Pass(pass), problem.dtype, d.params.at("precision")));
    return specs;
  }

  template <class T>
  std::unique_ptr<SpgemmExecution<T>> make(const SpgemmPreparation<T>& p) const {
    Decision& d = p.decision;
    PassKernels kernels;
    for (int pass = 0; pass < kPassCount; ++pass)
      kernels.push_back(load_kernel(p.rt, d, pass_spec(Pass(pass), p.problem.dtype, d.params.at("precision"))).kernel);
    const Sizes s = sizes_of(p.features, p.problem);
    const std::size_t temp = std::max({planned_temp_bytes(s), ops::tile_sort_bytes(s.products, s.end_bit),
                                       ops::exclusive_scan_bytes(most_items(s))});
    return std::make_unique<BitmapExecution<T>>(std::move(kernels), s, layout_for(s, sizeof(T), temp));
  }
};

}  // namespace sparsejit::variants::spgemm

SPARSEJIT_REGISTER_VARIANT(spgemm, bitmap_tc, sparsejit::variants::spgemm::BitmapTc)
