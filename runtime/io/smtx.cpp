// DLMC .smtx reader (the Sputnik pattern format): line 1 "rows, cols, nnz", line 2 the
// rows + 1 CSR row offsets, line 3 the nnz 0-based column indices; no values.
#include <algorithm>

#include "io/line_parser.hpp"
#include "io/readers.hpp"

namespace sparsejit::io::detail {
namespace {

void read_header(LineParser& lines, MatrixInfo& info) {
  lines.next_nonblank_line();
  if (lines.line().find(',') == std::string_view::npos)
    lines.fail("neither a Matrix Market file (no '%%MatrixMarket' banner) nor a .smtx file (no 'rows, cols, nnz' header): " +
               LineParser::quote(lines.line()));
  info.rows = lines.read_size("row count");
  info.cols = lines.read_size("column count");
  info.stored_entries = lines.read_size("nonzero count");
  lines.expect_line_end("'rows, cols, nnz'");
}

// Row offsets: rows + 1 of them, from 0, never decreasing, ending at nnz.
std::vector<int32_t> read_row_offsets(LineParser& lines, const MatrixInfo& info) {
  if (!lines.next_line()) lines.fail("file ends before the row offsets");
  const int64_t expected = info.rows + 1;
  std::vector<int32_t> offsets;
  offsets.reserve(static_cast<std::size_t>(std::min<int64_t>(expected, int64_t(lines.line().size() / 2) + 1)));
  while (!lines.at_line_end()) {
    if (int64_t(offsets.size()) == expected) lines.fail("more than rows + 1 = " + std::to_string(expected) + " row offsets");
    const int64_t offset = lines.read_int("row offset");
    const int64_t previous = offsets.empty() ? 0 : offsets.back();
    if (offsets.empty() && offset != 0) lines.fail("first row offset " + std::to_string(offset) + " is not 0");
    if (offset < previous)
      lines.fail("row offsets not monotone: offset " + std::to_string(offsets.size()) + " is " + std::to_string(offset) +
                 ", after " + std::to_string(previous));
    if (offset > info.stored_entries)
      lines.fail("row offset " + std::to_string(offset) + " exceeds nnz " + std::to_string(info.stored_entries));
    offsets.push_back(static_cast<int32_t>(offset));
  }
  if (int64_t(offsets.size()) != expected)
    lines.fail("found " + std::to_string(offsets.size()) + " row offsets, expected rows + 1 = " + std::to_string(expected));
  if (offsets.back() != info.stored_entries)
    lines.fail("last row offset " + std::to_string(offsets.back()) + " differs from nnz " + std::to_string(info.stored_entries));
  return offsets;
}

// Column indices in [0, cols). The header's nnz is not trusted with memory before the text
// proves it: an index takes at least 2 bytes.
std::vector<int32_t> read_columns(LineParser& lines, const MatrixInfo& info, std::size_t text_size) {
  std::vector<int32_t> columns;
  if (!lines.next_line()) {
    if (info.stored_entries == 0) return columns;
    lines.fail("file ends before the column indices");
  }
  columns.reserve(static_cast<std::size_t>(std::min<int64_t>(info.stored_entries, int64_t(text_size / 2) + 1)));
  while (!lines.at_line_end()) {
    if (int64_t(columns.size()) == info.stored_entries)
      lines.fail("more than nnz = " + std::to_string(info.stored_entries) + " column indices");
    const int64_t col = lines.read_int("column index");
    if (col < 0 || col >= info.cols)
      lines.fail("column index " + std::to_string(col) + " out of range [0, " + std::to_string(info.cols) + ")");
    columns.push_back(static_cast<int32_t>(col));
  }
  if (int64_t(columns.size()) != info.stored_entries)
    lines.fail("found " + std::to_string(columns.size()) + " column indices, expected nnz = " + std::to_string(info.stored_entries));
  return columns;
}

// A pattern has no values to sum, so a column named twice in one row is an error.
void check_no_repeats(const LineParser& lines, const std::vector<int32_t>& offsets, const std::vector<int32_t>& columns) {
  std::vector<int32_t> row;
  for (std::size_t r = 0; r + 1 < offsets.size(); ++r) {
    row.assign(columns.begin() + offsets[r], columns.begin() + offsets[r + 1]);
    std::sort(row.begin(), row.end());
    const auto repeated = std::adjacent_find(row.begin(), row.end());
    if (repeated != row.end()) lines.fail("column index " + std::to_string(*repeated) + " repeated in row " + std::to_string(r));
  }
}

}  // namespace

StoredEntries read_smtx(const std::string& text, const std::string& path, const ReadOptions& options) {
  LineParser lines(text, path, /*comma_separates=*/true);
  StoredEntries stored;
  MatrixInfo& info = stored.info;
  info.format = "smtx";
  info.layout = "coordinate";
  info.field = "pattern";
  info.symmetry = "general";
  read_header(lines, info);
  const std::vector<int32_t> offsets = read_row_offsets(lines, info);
  Coo<double>& coo = stored.coo;
  coo.rows = static_cast<int32_t>(info.rows);
  coo.cols = static_cast<int32_t>(info.cols);
  coo.col_idx = read_columns(lines, info, text.size());
  check_no_repeats(lines, offsets, coo.col_idx);
  if (lines.next_nonblank_line()) lines.fail("unexpected text " + LineParser::quote(lines.line()) + " after the column indices");
  coo.row_idx.resize(coo.col_idx.size());
  coo.values.resize(coo.col_idx.size());
  for (int32_t r = 0; r < coo.rows; ++r)
    for (int32_t e = offsets[std::size_t(r)]; e < offsets[std::size_t(r) + 1]; ++e) {
      coo.row_idx[std::size_t(e)] = r;
      coo.values[std::size_t(e)] = pattern_value(options, uint64_t(e));
    }
  return stored;
}

}  // namespace sparsejit::io::detail
