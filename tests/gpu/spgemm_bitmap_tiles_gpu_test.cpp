// formats/spgemm_bitmap_tiles_gpu against the host builder it follows (the specification):
// every array identical on generated patterns with empty rows, a partial last tile row and
// column, unsorted rows and a duplicate column; and a tile count other than the pattern's is a
// CudaError naming both counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "formats/spgemm_bitmap_tiles_gpu.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "support/gpu_suite.hpp"

namespace sparsejit {
namespace {

class BitmapTilesGpu : public test::GpuSuite {};

formats::BitmapTiles built_on_device(const Context& context, const Csr<double>& m, int64_t tiles) {
  const DeviceCsr<double> d(context, m);
  CUstream stream = nullptr;
  return formats::download(
      formats::build_bitmap_tiles_gpu(context, m.rows, m.cols, m.nnz(), d.row_ptr().ptr(), d.col_idx().ptr(), tiles, stream));
}

void expect_same_tiles(const Context& context, const std::string& name, const Csr<double>& m) {
  SCOPED_TRACE(name);
  const formats::BitmapTiles want = formats::build_bitmap_tiles(m.pattern());
  const formats::BitmapTiles got = built_on_device(context, m, want.tiles());
  EXPECT_EQ(got.tile_rows, want.tile_rows);
  EXPECT_EQ(got.tile_cols, want.tile_cols);
  EXPECT_EQ(got.row_ptr, want.row_ptr);
  EXPECT_EQ(got.tile_row, want.tile_row);
  EXPECT_EQ(got.tile_col, want.tile_col);
  EXPECT_EQ(got.bits, want.bits);
  EXPECT_EQ(got.offset, want.offset);
  EXPECT_EQ(got.slot, want.slot);
}

TEST_F(BitmapTilesGpu, EveryArrayIsTheHostBuildersArray) {
  const uint64_t seed = next_seed();
  expect_same_tiles(rt().context(), "rmat", generate::from_spec("rmat:5000:60000", seed));
  expect_same_tiles(rt().context(), "blocks", generate::from_spec("blockdiag:1003:12:2", seed));
  expect_same_tiles(rt().context(), "empty rows, 3 x 13 tiles cut short", test::empty_every(generate::uniform(21, 101, 5, seed), 3));
  Csr<double> unsorted = generate::uniform(300, 77, 9, seed + 1);
  for (int32_t r = 0; r < unsorted.rows; ++r)
    std::reverse(unsorted.col_idx.begin() + unsorted.row_ptr[r], unsorted.col_idx.begin() + unsorted.row_ptr[r + 1]);
  unsorted.col_idx[1] = unsorted.col_idx[0];  // row 0 names a column twice
  expect_same_tiles(rt().context(), "unsorted with a duplicate", unsorted);
  Csr<double> none;
  none.rows = 5;
  none.cols = 9;
  none.row_ptr.assign(6, 0);
  expect_same_tiles(rt().context(), "no entries", none);
}

TEST_F(BitmapTilesGpu, ATileCountOtherThanThePatternsIsRefusedNamingBoth) {
  const Csr<double> m = generate::uniform(64, 64, 4, next_seed());
  const int64_t tiles = formats::build_bitmap_tiles(m.pattern()).tiles();
  try {
    built_on_device(rt().context(), m, tiles - 1);
    ADD_FAILURE() << "a wrong tile count was accepted";
  } catch (const CudaError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("found " + std::to_string(tiles) + " non-empty"), std::string::npos) << what;
    EXPECT_NE(what.find("count " + std::to_string(tiles - 1)), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace sparsejit
