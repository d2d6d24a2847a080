#include "ops/spgemm_reuse_tiles.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "ops/runtime_state.hpp"
#include "variants/spgemm/bitmap_passes.hpp"

namespace sparsejit::ops {

using variants::spgemm::BitmapPass;
using variants::spgemm::BitmapSteps;

template <class T>
struct TileSums {
  std::optional<BitmapSteps<T>> steps;
  std::shared_ptr<formats::DeviceBitmapTiles> a_tiles, b_tiles;
  DeviceBuffer arrays;    // the steps' scratch, kept: packed values, sorted tile products, C's tiles
  DeviceBuffer tile_pos;  // where each tile of C's rows start in C
  int c_tiles = 0;
  bool one_operand = false;  // A·A: B's packed values are A's
};

namespace {

// The kernels of every pass at full precision, the multiply pass values-only or not.
std::vector<cuda::Kernel> load_passes(detail::RuntimeState& rt, DType dtype, bool values_only) {
  std::vector<cuda::Kernel> kernels;
  for (int pass = 0; pass < variants::spgemm::kBitmapPassCount; ++pass)
    kernels.push_back(rt.loader.load(variants::spgemm::bitmap_pass_spec(BitmapPass(pass), dtype, "full", values_only)).kernel);
  return kernels;
}

// The first row (or entry) where two int32 arrays differ, or -1.
int64_t first_difference(const int32_t* got, const int32_t* want, int64_t count) {
  const auto [g, w] = std::mismatch(got, got + count, want);
  return g == got + count ? -1 : int64_t(g - got);
}

std::vector<int32_t> downloaded(const DeviceBuffer& buffer, int64_t count, CUstream stream) {
  std::vector<int32_t> host(std::size_t(std::max<int64_t>(count, 0)));
  if (count > 0) buffer.download_async(host.data(), host.size() * 4, stream);
  SPARSEJIT_CU(cuStreamSynchronize, stream);
  return host;
}

// The tiles' C against c: row offsets, then (one multiply with columns into scratch) columns.
// Empty when they agree, else why not.
template <class T>
std::string pattern_mismatch(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c,
                             const TileSums<T>& s, const DeviceBuffer& row_ptr) {
  const int64_t m = c.rows();
  const std::vector<int32_t> rows = downloaded(row_ptr, m + 1, o.stream);
  const int64_t row = first_difference(rows.data(), c.host_row_ptr(), m + 1);
  if (row >= 0)
    return "the tiles give row " + std::to_string(row) + " of C an offset of " + std::to_string(rows[std::size_t(row)]) + " where C has " +
           std::to_string(c.host_row_ptr()[row]);
  const BitmapSteps<T> with_columns(load_passes(rt, dtype_of<T>::value, false), s.steps->sizes(), s.steps->layout());
  DeviceBuffer columns(rt.context, std::size_t(std::max<int64_t>(c.nnz(), 1)) * 4);
  DeviceBuffer values(rt.context, std::size_t(std::max<int64_t>(c.nnz(), 1)) * sizeof(T));
  const CUdeviceptr b_packed = s.arrays.ptr() + (s.one_operand ? s.steps->layout().a_packed : s.steps->layout().b_packed);
  with_columns.multiply(*s.a_tiles, *s.b_tiles, s.arrays.ptr(), b_packed, s.c_tiles, s.tile_pos.ptr(), columns.ptr(), values.ptr(),
                        o.stream, false);
  const std::vector<int32_t> cols = downloaded(columns, c.nnz(), o.stream);
  const int64_t entry = first_difference(cols.data(), c.host_pattern().col_idx, c.nnz());
  if (entry >= 0)
    return "the tiles give entry " + std::to_string(entry) + " of C column " + std::to_string(cols[std::size_t(entry)]) + " where C has " +
           std::to_string(c.host_pattern().col_idx[entry]) + " (C's rows must be sorted for tiles)";
  return {};
}

}  // namespace

template <class T>
std::shared_ptr<TileSums<T>> build_tile_sums(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c,
                                             const SpgemmFeatures& features, std::string& why) {
  const variants::spgemm::BitmapSizes sizes = variants::spgemm::bitmap_sizes(features, c.rows(), c.cols());
  if (sizes.products == 0 || c.nnz() == 0) {
    why = "recompute: no tile products";
    return nullptr;
  }
  auto made = std::make_shared<TileSums<T>>();
  made->steps.emplace(load_passes(rt, dtype_of<T>::value, true), sizes, variants::spgemm::executed_bitmap_layout(sizes, sizeof(T)));
  made->a_tiles = variants::spgemm::bitmap_tiles_of(rt.context, o.a, sizes.a_tiles, o.stream);
  made->b_tiles = variants::spgemm::bitmap_tiles_of(rt.context, o.b, sizes.b_tiles, o.stream);
  made->one_operand = &o.a == &o.b;
  const variants::spgemm::BitmapLayout& layout = made->steps->layout();
  made->arrays = DeviceBuffer(rt.context, layout.total);
  const CUdeviceptr base = made->arrays.ptr();
  DeviceBuffer row_ptr(rt.context, (std::size_t(c.rows()) + 1) * 4);
  made->steps->symbolic(*made->a_tiles, *made->b_tiles, base, row_ptr.ptr(), o.stream, false);
  int32_t runs = 0;
  SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &runs, base + layout.runs, 4, o.stream);
  SPARSEJIT_CU(cuStreamSynchronize, o.stream);
  if (runs < 0 || runs > sizes.products)
    throw CudaError("spgemm_numeric by tiles: the sort gave " + std::to_string(runs) + " tiles of C from " +
                    std::to_string(sizes.products) + " tile products (a kernel fault)");
  made->c_tiles = runs;
  made->tile_pos = DeviceBuffer(rt.context, std::size_t(variants::spgemm::tile_pos_bytes(runs)));
  made->steps->positions(base, c.row_ptr().ptr(), made->tile_pos.ptr(), o.stream, false);
  const std::string mismatch = pattern_mismatch(rt, o, c, *made, row_ptr);
  if (!mismatch.empty()) {
    why = "recompute: " + mismatch;
    return nullptr;
  }
  const std::size_t kept = made->arrays.bytes() + made->tile_pos.bytes();
  why = "tiles: " + std::to_string(sizes.products) + " tile products into " + std::to_string(runs) + " tiles of C, " +
        std::to_string(kept) + " bytes kept on C";
  return made;
}

template <class T>
void compute_tile_sums(const TileSums<T>& s, const variants::SpgemmOperands<T>& o, CUdeviceptr values) {
  const variants::spgemm::BitmapLayout& layout = s.steps->layout();
  const CUdeviceptr base = s.arrays.ptr();
  s.steps->pack(o.a, *s.a_tiles, base + layout.a_packed, o.stream, o.early);
  if (!s.one_operand) s.steps->pack(o.b, *s.b_tiles, base + layout.b_packed, o.stream, o.early);
  const CUdeviceptr b_packed = base + (s.one_operand ? layout.a_packed : layout.b_packed);
  s.steps->multiply(*s.a_tiles, *s.b_tiles, base, b_packed, s.c_tiles, s.tile_pos.ptr(), 0, values, o.stream, o.early);
}

#define SPARSEJIT_INSTANTIATE(T)                                                                                                  \
  template std::shared_ptr<TileSums<T>> build_tile_sums<T>(detail::RuntimeState&, const variants::SpgemmOperands<T>&,             \
                                                           const DeviceCsr<T>&, const SpgemmFeatures&, std::string&);             \
  template void compute_tile_sums<T>(const TileSums<T>&, const variants::SpgemmOperands<T>&, CUdeviceptr);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
