#include "formats/sddmm_tiles.hpp"

#include <algorithm>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

namespace {

struct TiledEntry {
  int32_t tile;      // column tile within the panel
  int32_t local;     // packed (local_row << 16) | local_col
  int32_t position;  // index in S's order
};

void check_edge(const char* name, int32_t value) {
  if (value < 1 || value > kMaxTileEdge)
    throw InvalidInputError(std::string("sddmm tiles: ") + name + " = " + std::to_string(value) + " outside [1, " +
                            std::to_string(kMaxTileEdge) + "]");
}

// The panel's entries in S's order, with their column tile and packed local index.
// `unique_cols` receives the panel's sorted unique columns when reindexing.
std::vector<TiledEntry> panel_entries(PatternView s, int32_t first_row, int32_t end_row, int32_t tile_cols,
                                      bool reindexed, std::vector<int32_t>& unique_cols) {
  const int32_t begin = s.row_ptr[first_row], end = s.row_ptr[end_row];
  unique_cols.clear();
  if (reindexed) {
    unique_cols.assign(s.col_idx + begin, s.col_idx + end);
    std::sort(unique_cols.begin(), unique_cols.end());
    unique_cols.erase(std::unique(unique_cols.begin(), unique_cols.end()), unique_cols.end());
  }
  std::vector<TiledEntry> entries;
  entries.reserve(std::size_t(end - begin));
  for (int32_t r = first_row; r < end_row; ++r) {
    for (int32_t e = s.row_ptr[r]; e < s.row_ptr[r + 1]; ++e) {
      int32_t index = s.col_idx[e];
      if (reindexed) index = int32_t(std::lower_bound(unique_cols.begin(), unique_cols.end(), index) - unique_cols.begin());
      entries.push_back({index / tile_cols, ((r - first_row) << 16) | (index % tile_cols), e});
    }
  }
  // Positions are unique, so ordering by (tile, position) keeps S's order inside a tile.
  std::sort(entries.begin(), entries.end(), [](const TiledEntry& x, const TiledEntry& y) {
    return x.tile != y.tile ? x.tile < y.tile : x.position < y.position;
  });
  return entries;
}

}  // namespace

int64_t SddmmTiles::staged_rows() const {
  int64_t total = 0;
  for (int32_t w : tile_width) total += w;
  return total;
}

SddmmTiles build_sddmm_tiles(PatternView s, int32_t tile_rows, int32_t tile_cols, bool reindexed) {
  check_edge("tile_rows", tile_rows);
  check_edge("tile_cols", tile_cols);
  validate(s, false);
  SddmmTiles out;
  out.tile_rows = tile_rows;
  out.tile_cols = tile_cols;
  out.reindexed = reindexed;
  out.local.reserve(std::size_t(s.nnz()));
  out.position.reserve(std::size_t(s.nnz()));
  std::vector<int32_t> unique_cols;
  for (int64_t first = 0; first < s.rows; first += tile_rows) {
    const int32_t end_row = int32_t(std::min<int64_t>(first + tile_rows, s.rows));
    const auto entries = panel_entries(s, int32_t(first), end_row, tile_cols, reindexed, unique_cols);
    const int32_t staged_offset = int32_t(out.staged_cols.size());
    const int64_t columns = reindexed ? int64_t(unique_cols.size()) : int64_t(s.cols);
    for (std::size_t i = 0; i < entries.size(); ++i) {
      const int32_t tile = entries[i].tile;
      if (i == 0 || entries[i - 1].tile != tile) {
        if (i > 0) out.tile_ptr.push_back(int32_t(out.local.size()));
        const int64_t tile_begin = int64_t(tile) * tile_cols;
        out.tile_row.push_back(int32_t(first));
        out.tile_col.push_back(int32_t(reindexed ? staged_offset + tile_begin : tile_begin));
        out.tile_width.push_back(int32_t(std::min<int64_t>(tile_cols, columns - tile_begin)));
      }
      out.local.push_back(entries[i].local);
      out.position.push_back(entries[i].position);
    }
    if (!entries.empty()) out.tile_ptr.push_back(int32_t(out.local.size()));
    out.staged_cols.insert(out.staged_cols.end(), unique_cols.begin(), unique_cols.end());
  }
  return out;
}

}  // namespace sparsejit::formats
