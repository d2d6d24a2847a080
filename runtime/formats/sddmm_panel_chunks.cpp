#include "formats/sddmm_panel_chunks.hpp"

#include <algorithm>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::formats {

namespace {

void check_positive(int32_t value, const char* name) {
  if (value < 1)
    throw InvalidInputError(std::string("sddmm panel chunks: ") + name + " = " + std::to_string(value) + " must be >= 1");
}

struct Run {
  int32_t panel, row, begin, end;
};

// The runs of one band's rows: consecutive entries of a row in one panel, cut at max_nnz.
void band_runs(PatternView s, int32_t first_row, int32_t last_row, int32_t panel_cols, int32_t max_nnz,
               std::vector<Run>& runs) {
  runs.clear();
  for (int32_t r = first_row; r < last_row; ++r) {
    int32_t e = s.row_ptr[r];
    while (e < s.row_ptr[r + 1]) {
      const int32_t panel = s.col_idx[e] / panel_cols;
      const int32_t begin = e;
      while (e < s.row_ptr[r + 1] && e - begin < max_nnz && s.col_idx[e] / panel_cols == panel) ++e;
      runs.push_back({panel, r, begin, e});
    }
  }
  std::stable_sort(runs.begin(), runs.end(), [](const Run& x, const Run& y) { return x.panel < y.panel; });
}

}  // namespace

PanelChunks build_panel_chunks(PatternView s, int32_t band_rows, int32_t panel_cols, int32_t max_nnz) {
  check_positive(band_rows, "band_rows");
  check_positive(panel_cols, "panel_cols");
  check_positive(max_nnz, "max_nnz");
  validate(s, false);
  PanelChunks out;
  out.band_rows = band_rows;
  out.panel_cols = panel_cols;
  out.max_nnz = max_nnz;
  std::vector<Run> runs;
  for (int64_t first = 0; first < s.rows; first += band_rows) {
    band_runs(s, int32_t(first), int32_t(std::min<int64_t>(s.rows, first + band_rows)), panel_cols, max_nnz, runs);
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (i > 0 && runs[i].panel != runs[i - 1].panel) out.tile_ptr.push_back(int32_t(out.row.size()));
      out.row.push_back(runs[i].row);
      out.begin.push_back(runs[i].begin);
      out.end.push_back(runs[i].end);
    }
    if (!runs.empty()) out.tile_ptr.push_back(int32_t(out.row.size()));
  }
  return out;
}

}  // namespace sparsejit::formats
