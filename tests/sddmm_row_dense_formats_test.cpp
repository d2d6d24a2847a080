// The row_gather, panel_gather and dense_tile formats (formats/sddmm_row_chunks.hpp,
// sddmm_panel_chunks.hpp, sddmm_dense_tiles.hpp): the documented examples by hand, and on
// generated patterns CPU walks of the formats the way sddmm_row.cu, sddmm_row_panels.cu and
// sddmm_dense_tile.cu walk them must cover every nonzero exactly once and find each one's
// index in S's order.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <set>
#include <vector>

#include "formats/sddmm_dense_tiles.hpp"
#include "formats/sddmm_panel_chunks.hpp"
#include "formats/sddmm_row_chunks.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit {
namespace {

Csr<double> from_rows(int32_t rows, int32_t cols, const std::vector<std::vector<int32_t>>& row_cols) {
  Csr<double> m;
  m.rows = rows;
  m.cols = cols;
  for (const auto& r : row_cols) {
    for (int32_t c : r) m.col_idx.push_back(c);
    m.row_ptr.push_back(int32_t(m.col_idx.size()));
  }
  m.values.assign(m.col_idx.size(), 1.0);
  return m;
}

TEST(SddmmRowChunks, DocumentedExample) {
  const Csr<double> s = from_rows(3, 9, {{0, 1, 2, 3, 4}, {}, {5, 8}});
  const auto chunks = formats::build_row_chunks(s.pattern(), 2);
  EXPECT_EQ(chunks.row, (std::vector<int32_t>{0, 0, 0, 2}));
  EXPECT_EQ(chunks.ptr, (std::vector<int32_t>{0, 2, 4, 5, 7}));
  EXPECT_EQ(formats::count_row_chunks(s.pattern(), 2), 4);
  EXPECT_THROW(formats::build_row_chunks(s.pattern(), 0), InvalidInputError);
}

TEST(SddmmRowChunks, ChunksTileEveryRowInOrder) {
  for (const char* spec : {"rmat:2048:30000", "uniform:500:7"}) {
    const Csr<double> s = generate::from_spec(spec, 3);
    for (int32_t max_nnz : {1, 5, 32, 100000}) {
      const auto c = formats::build_row_chunks(s.pattern(), max_nnz);
      ASSERT_EQ(c.ptr.size(), c.row.size() + 1);
      EXPECT_EQ(c.ptr.back(), int32_t(s.col_idx.size()));
      for (int64_t i = 0; i < c.chunks(); ++i) {
        const int32_t r = c.row[std::size_t(i)];
        EXPECT_GT(c.ptr[std::size_t(i) + 1], c.ptr[std::size_t(i)]);  // never empty
        EXPECT_LE(c.ptr[std::size_t(i) + 1] - c.ptr[std::size_t(i)], max_nnz);
        EXPECT_GE(c.ptr[std::size_t(i)], s.row_ptr[std::size_t(r)]);  // inside its row
        EXPECT_LE(c.ptr[std::size_t(i) + 1], s.row_ptr[std::size_t(r) + 1]);
      }
    }
  }
}

TEST(SddmmPanelChunks, DocumentedExampleWithAnUnsortedRow) {
  const Csr<double> s = from_rows(2, 8, {{0, 1, 5, 6}, {7, 2}});
  const auto c = formats::build_panel_chunks(s.pattern(), 2, 4, 2);
  EXPECT_EQ(c.tile_ptr, (std::vector<int32_t>{0, 2, 4}));
  EXPECT_EQ(c.row, (std::vector<int32_t>{0, 1, 0, 1}));
  EXPECT_EQ(c.begin, (std::vector<int32_t>{0, 5, 2, 4}));
  EXPECT_EQ(c.end, (std::vector<int32_t>{2, 6, 4, 5}));
  for (const auto& [band, panel, max_nnz] : std::vector<std::array<int32_t, 3>>{{0, 4, 2}, {2, -1, 2}, {2, 4, 0}}) {
    try {
      formats::build_panel_chunks(s.pattern(), band, panel, max_nnz);
      ADD_FAILURE() << band << " " << panel << " " << max_nnz << " accepted";
    } catch (const InvalidInputError& e) {
      const std::string named = band < 1 ? "band_rows = 0" : panel < 1 ? "panel_cols = -1" : "max_nnz = 0";
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

// A malformed pattern is refused with the offending entry named, before anything is built: a
// column past S's width (it would index a panel past the last) and offsets that go backwards.
TEST(SddmmPanelChunks, MalformedPatternsAreRefused) {
  Csr<double> wide = from_rows(2, 8, {{0, 1}, {3}});
  wide.col_idx[2] = 8;
  Csr<double> backwards = from_rows(2, 8, {{0, 1}, {3}});
  backwards.row_ptr[1] = 3;
  backwards.row_ptr[2] = 2;
  for (const auto& [bad, named] : std::vector<std::pair<const Csr<double>*, std::string>>{
           {&wide, "column index 8 out of range [0, 8)"}, {&backwards, "offsets not monotone (3 then 2)"}}) {
    try {
      formats::build_panel_chunks(bad->pattern(), 2, 4, 16);
      ADD_FAILURE() << "a malformed pattern was accepted";
    } catch (const InvalidInputError& e) {
      EXPECT_NE(std::string(e.what()).find(named), std::string::npos) << e.what();
    }
  }
}

// Walked as sddmm_row_panels.cu walks them: every nonzero once, each chunk one row's run of at
// most max_nnz entries inside its tile's band and panel, and a tile per (band, panel) at most,
// bands in order. Rows reversed (unsorted) too.
TEST(SddmmPanelChunks, ChunksCoverEveryNonzeroOnceInsideTheirTile) {
  for (const char* spec : {"rmat:2048:30000", "uniform:500:7", "uniform:300:120"}) {
    Csr<double> s = generate::from_spec(spec, 3);
    for (bool reversed : {false, true}) {
      if (reversed)
        for (int32_t r = 0; r < s.rows; ++r) std::reverse(s.col_idx.begin() + s.row_ptr[r], s.col_idx.begin() + s.row_ptr[r + 1]);
      for (const auto& [band, panel, max_nnz] :
           std::vector<std::array<int32_t, 3>>{{1, 1, 1}, {7, 33, 3}, {64, 512, 256}, {1 << 20, 1 << 20, 1 << 30}}) {
        SCOPED_TRACE(std::string(spec) + " " + std::to_string(band) + "x" + std::to_string(panel) + " max " +
                     std::to_string(max_nnz) + (reversed ? " reversed" : ""));
        const auto c = formats::build_panel_chunks(s.pattern(), band, panel, max_nnz);
        ASSERT_EQ(c.tile_ptr.back(), c.chunks());
        std::vector<int> seen(s.col_idx.size(), 0);
        std::set<std::pair<int32_t, int32_t>> tiles;
        int32_t last_band = 0;
        for (int64_t t = 0; t < c.tiles(); ++t) {
          ASSERT_LT(c.tile_ptr[std::size_t(t)], c.tile_ptr[std::size_t(t) + 1]);  // no empty tile
          const std::size_t first = std::size_t(c.tile_ptr[std::size_t(t)]);
          const int32_t tile_band = c.row[first] / band, tile_panel = s.col_idx[std::size_t(c.begin[first])] / panel;
          EXPECT_GE(tile_band, last_band);
          last_band = tile_band;
          EXPECT_TRUE(tiles.insert({tile_band, tile_panel}).second);
          for (std::size_t i = first; i < std::size_t(c.tile_ptr[std::size_t(t) + 1]); ++i) {
            const int32_t r = c.row[i];
            EXPECT_EQ(r / band, tile_band);
            ASSERT_GT(c.end[i], c.begin[i]);
            EXPECT_LE(c.end[i] - c.begin[i], max_nnz);
            ASSERT_GE(c.begin[i], s.row_ptr[std::size_t(r)]);
            ASSERT_LE(c.end[i], s.row_ptr[std::size_t(r) + 1]);
            for (int32_t e = c.begin[i]; e < c.end[i]; ++e) {
              EXPECT_EQ(s.col_idx[std::size_t(e)] / panel, tile_panel);
              ++seen[std::size_t(e)];
            }
          }
        }
        EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), int64_t(seen.size()));
      }
    }
  }
}

TEST(SddmmDenseTiles, DocumentedExample) {
  const Csr<double> s = from_rows(3, 5, {{1, 4}, {}, {0, 2, 3}});
  const auto t = formats::build_dense_tiles(s.pattern(), 2, 4);
  EXPECT_EQ(t.words, 1);
  EXPECT_EQ(t.tile_i, (std::vector<int32_t>{0, 0, 2}));
  EXPECT_EQ(t.tile_j, (std::vector<int32_t>{0, 4, 0}));
  EXPECT_EQ(t.bitmap, (std::vector<uint64_t>{0b10, 0, 0b1, 0, 0b1101, 0}));
  EXPECT_EQ(t.first, (std::vector<int32_t>{0, 0, 1, 0, 2, 0}));
  EXPECT_EQ(formats::count_dense_tiles(s.pattern(), 2, 4), 3);
}

TEST(SddmmDenseTiles, BadEdgesAndUnsortedRowsAreRefused) {
  const Csr<double> s = from_rows(2, 5, {{3, 1}, {0}});
  EXPECT_THROW(formats::build_dense_tiles(s.pattern(), 4, 4), InvalidInputError);  // row 0 unsorted
  EXPECT_EQ(formats::count_dense_tiles(s.pattern(), 4, 4), 1);  // counting needs no order
  const Csr<double> sorted = from_rows(2, 5, {{1, 3}, {0}});
  EXPECT_THROW(formats::build_dense_tiles(sorted.pattern(), 0, 4), InvalidInputError);
  EXPECT_THROW(formats::build_dense_tiles(sorted.pattern(), 4, 257), InvalidInputError);
}

// Any tile shape is counted (panel_gather's 64-row bands x 1024-column panels), against a count
// of the distinct (row / Ti, column / Tj) pairs; an edge under 1 is refused by name.
TEST(SddmmDenseTiles, CountTilesTakesAnyShape) {
  const Csr<double> s = generate::from_spec("band:5000:12:40", 3);
  for (const auto& [ti, tj] : std::vector<std::pair<int32_t, int32_t>>{{64, 1024}, {1, 2048}, {5000, 4096}, {3, 7}}) {
    std::set<std::pair<int32_t, int32_t>> tiles;
    for (int32_t r = 0; r < s.rows; ++r)
      for (int32_t e = s.row_ptr[std::size_t(r)]; e < s.row_ptr[std::size_t(r) + 1]; ++e)
        tiles.insert({r / ti, s.col_idx[std::size_t(e)] / tj});
    EXPECT_EQ(formats::count_tiles(s.pattern(), ti, tj), int64_t(tiles.size())) << ti << "x" << tj;
  }
  EXPECT_THROW(formats::count_dense_tiles(s.pattern(), 64, 1024), InvalidInputError);  // not a dense tile
  try {
    formats::count_tiles(s.pattern(), 0, 64);
    ADD_FAILURE() << "a 0-row tile was counted";
  } catch (const InvalidInputError& e) {
    EXPECT_NE(std::string(e.what()).find("0 x 64"), std::string::npos) << e.what();
  }
}

// Each nonzero is found once, at its own CSR index, by the kernel's bit arithmetic.
TEST(SddmmDenseTiles, BitsAndFirstOffsetsLocateEveryNonzero) {
  for (const char* spec : {"rmat:1000:20000", "uniform:300:120", "clustered:700:24:0.6:16"}) {
    const Csr<double> s = generate::from_spec(spec, 5);
    for (const auto& [ti, tj] : std::vector<std::pair<int32_t, int32_t>>{{64, 64}, {32, 128}, {128, 256}, {7, 33}}) {
      SCOPED_TRACE(std::string(spec) + " " + std::to_string(ti) + "x" + std::to_string(tj));
      const auto t = formats::build_dense_tiles(s.pattern(), ti, tj);
      EXPECT_EQ(t.tiles(), formats::count_dense_tiles(s.pattern(), ti, tj));
      std::vector<int> hits(s.col_idx.size(), 0);
      for (int64_t tile = 0; tile < t.tiles(); ++tile) {
        if (tile > 0) {  // ordered by tile row, then tile column
          const bool ordered = t.tile_i[std::size_t(tile - 1)] < t.tile_i[std::size_t(tile)] ||
                               (t.tile_i[std::size_t(tile - 1)] == t.tile_i[std::size_t(tile)] &&
                                t.tile_j[std::size_t(tile - 1)] < t.tile_j[std::size_t(tile)]);
          EXPECT_TRUE(ordered) << tile;
        }
        for (int32_t r = 0; r < ti; ++r) {
          const uint64_t* bits = t.bitmap.data() + (std::size_t(tile) * std::size_t(ti) + std::size_t(r)) * std::size_t(t.words);
          int32_t position = t.first[std::size_t(tile) * std::size_t(ti) + std::size_t(r)];
          for (int32_t c = 0; c < tj; ++c) {
            if (!((bits[c / 64] >> (c % 64)) & 1u)) continue;
            const int32_t row = t.tile_i[std::size_t(tile)] + r, col = t.tile_j[std::size_t(tile)] + c;
            ASSERT_LT(row, s.rows);
            ASSERT_GE(position, s.row_ptr[std::size_t(row)]);
            ASSERT_LT(position, s.row_ptr[std::size_t(row) + 1]);
            EXPECT_EQ(s.col_idx[std::size_t(position)], col);
            ++hits[std::size_t(position)];
            ++position;
          }
        }
      }
      for (std::size_t e = 0; e < hits.size(); ++e) ASSERT_EQ(hits[e], 1) << "nonzero " << e;
    }
  }
}

}  // namespace
}  // namespace sparsejit
