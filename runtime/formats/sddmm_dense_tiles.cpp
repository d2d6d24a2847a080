#include "formats/sddmm_dense_tiles.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

namespace {

void check_edge(const char* name, int32_t value) {
  if (value < 1 || value > kMaxDenseTileEdge)
    throw InvalidInputError(std::string("sddmm dense tiles: ") + name + " = " + std::to_string(value) + " outside [1, " +
                            std::to_string(kMaxDenseTileEdge) + "]");
}

// The sorted column tiles of panel [first_row, end_row) that hold a nonzero; each one's slot
// (-1 on entry) is set to its index in that list.
std::vector<int32_t> panel_tiles(PatternView s, int32_t first_row, int32_t end_row, int32_t tile_cols,
                                 std::vector<int32_t>& slot) {
  std::vector<int32_t> tiles;
  for (int32_t e = s.row_ptr[first_row]; e < s.row_ptr[end_row]; ++e) {
    const int32_t q = s.col_idx[e] / tile_cols;
    if (slot[std::size_t(q)] < 0) {
      slot[std::size_t(q)] = 0;
      tiles.push_back(q);
    }
  }
  std::sort(tiles.begin(), tiles.end());
  for (std::size_t t = 0; t < tiles.size(); ++t) slot[std::size_t(tiles[t])] = int32_t(t);
  return tiles;
}

}  // namespace

int64_t count_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols) {
  if (tile_rows < 1 || tile_cols < 1)
    throw InvalidInputError("sddmm tiles: a " + std::to_string(tile_rows) + " x " + std::to_string(tile_cols) +
                            " tile has an edge under 1");
  validate(s, false);
  std::vector<int32_t> slot(std::size_t((int64_t(s.cols) + tile_cols - 1) / tile_cols), -1);
  int64_t total = 0;
  for (int64_t first_row = 0; first_row < s.rows; first_row += tile_rows) {
    const int32_t end_row = int32_t(std::min<int64_t>(first_row + tile_rows, s.rows));
    const std::vector<int32_t> tiles = panel_tiles(s, int32_t(first_row), end_row, tile_cols, slot);
    total += int64_t(tiles.size());
    for (int32_t q : tiles) slot[std::size_t(q)] = -1;
  }
  return total;
}

std::function<int64_t(int32_t, int32_t)> tile_counter(PatternView s) {
  auto counted = std::make_shared<std::map<std::pair<int32_t, int32_t>, int64_t>>();
  return [s, counted](int32_t tile_rows, int32_t tile_cols) {
    auto it = counted->find({tile_rows, tile_cols});
    if (it == counted->end()) it = counted->emplace(std::make_pair(tile_rows, tile_cols), count_tiles(s, tile_rows, tile_cols)).first;
    return it->second;
  };
}

int64_t count_dense_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols) {
  check_edge("tile_rows", tile_rows);
  check_edge("tile_cols", tile_cols);
  return count_tiles(s, tile_rows, tile_cols);
}

DenseTiles build_dense_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols) {
  check_edge("tile_rows", tile_rows);
  check_edge("tile_cols", tile_cols);
  validate(s, true);  // sorted rows without duplicates: positions follow the bit order
  DenseTiles out;
  out.tile_rows = tile_rows;
  out.tile_cols = tile_cols;
  out.words = (tile_cols + 63) / 64;
  const std::size_t col_tiles = std::size_t((int64_t(s.cols) + tile_cols - 1) / tile_cols);
  std::vector<int32_t> slot(col_tiles, -1);  // column tile -> tile index within the panel
  for (int64_t first_row = 0; first_row < s.rows; first_row += tile_rows) {
    const int32_t end_row = int32_t(std::min<int64_t>(first_row + tile_rows, s.rows));
    const std::vector<int32_t> tiles = panel_tiles(s, int32_t(first_row), end_row, tile_cols, slot);
    const std::size_t base = out.tile_i.size();
    for (std::size_t t = 0; t < tiles.size(); ++t) {
      out.tile_i.push_back(int32_t(first_row));
      out.tile_j.push_back(tiles[t] * tile_cols);
    }
    out.bitmap.resize(out.tile_i.size() * std::size_t(tile_rows) * std::size_t(out.words), 0);
    out.first.resize(out.tile_i.size() * std::size_t(tile_rows), 0);
    for (int32_t r = int32_t(first_row); r < end_row; ++r) {
      const int32_t local_row = r - int32_t(first_row);
      int32_t previous_tile = -1;
      for (int32_t e = s.row_ptr[r]; e < s.row_ptr[r + 1]; ++e) {
        const int32_t q = s.col_idx[e] / tile_cols;
        const std::size_t tile = base + std::size_t(slot[std::size_t(q)]);
        if (q != previous_tile) {  // sorted row: the first nonzero of this row in tile q
          out.first[tile * std::size_t(tile_rows) + std::size_t(local_row)] = e;
          previous_tile = q;
        }
        const int32_t local_col = s.col_idx[e] - q * tile_cols;
        out.bitmap[(tile * std::size_t(tile_rows) + std::size_t(local_row)) * std::size_t(out.words) +
                   std::size_t(local_col / 64)] |= uint64_t(1) << (local_col % 64);
      }
    }
    for (int32_t q : tiles) slot[std::size_t(q)] = -1;
  }
  return out;
}

}  // namespace sparsejit::formats
