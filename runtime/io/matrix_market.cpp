// Matrix Market reader: the banner, comment lines, the size line, then coordinate entries
// ("row column [value]", 1-based) or array values (one per line, column by column).
#include <algorithm>
#include <cctype>

#include "io/line_parser.hpp"
#include "io/readers.hpp"

namespace sparsejit::io::detail {
namespace {

struct Header {
  MatrixInfo info;
  int64_t declared_entries = 0;  // coordinate only
  int64_t size_line = 0;
};

std::string lowercase(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower;
}

std::string read_keyword(LineParser& lines, const std::string& what, std::initializer_list<const char*> known,
                         std::initializer_list<const char*> unsupported) {
  const std::string word = lowercase(lines.token(what + " after %%MatrixMarket"));
  if (std::any_of(known.begin(), known.end(), [&](const char* k) { return word == k; })) return word;
  if (std::any_of(unsupported.begin(), unsupported.end(), [&](const char* k) { return word == k; }))
    throw UnsupportedError(lines.where() + "unsupported " + what + " " + LineParser::quote(word));
  std::string expected;
  for (const char* k : known) expected += (expected.empty() ? "'" : ", '") + std::string(k) + "'";
  lines.fail("unknown " + what + " " + LineParser::quote(word) + ", expected one of " + expected);
}

void read_banner(LineParser& lines, MatrixInfo& info) {
  lines.next_line();
  if (lines.at_line_end() || lines.token("banner") != "%%MatrixMarket")
    lines.fail("missing or bad banner " + LineParser::quote(lines.line()) +
               ", expected '%%MatrixMarket matrix <format> <field> <symmetry>'");
  read_keyword(lines, "object", {"matrix"}, {"vector"});
  info.layout = read_keyword(lines, "format", {"coordinate", "array"}, {});
  info.field = read_keyword(lines, "field", {"real", "integer", "pattern"}, {"complex"});
  info.symmetry = read_keyword(lines, "symmetry", {"general", "symmetric", "skew-symmetric"}, {"hermitian"});
  lines.expect_line_end("the banner");
  if (info.field == "pattern" && info.layout == "array") lines.fail("an array (dense) file cannot have field 'pattern'");
  if (info.field == "pattern" && info.symmetry == "skew-symmetric")
    lines.fail("a pattern file cannot be 'skew-symmetric' (it has no values to negate)");
}

Header read_header(LineParser& lines) {
  Header header;
  MatrixInfo& info = header.info;
  info.format = "matrix-market";
  read_banner(lines, info);
  bool found = false;  // the first line that is neither blank nor a % comment
  while (!found && lines.next_nonblank_line()) found = !lines.next_token_starts_with('%');
  if (!found) lines.fail("missing size line after the banner and comments");
  header.size_line = lines.line_number();
  info.rows = lines.read_size("row count");
  info.cols = lines.read_size("column count");
  if (info.layout == "coordinate") header.declared_entries = lines.read_size("entry count");
  lines.expect_line_end("the size line");
  if (info.symmetry != "general" && info.rows != info.cols)
    lines.fail("a " + info.symmetry + " matrix must be square, size is " + std::to_string(info.rows) + "x" +
               std::to_string(info.cols));
  return header;
}

int32_t read_index(LineParser& lines, const char* what, int64_t size) {
  const int64_t index = lines.read_int(what);
  if (index < 1 || index > size)
    lines.fail(std::string(what) + " " + std::to_string(index) + " out of range [1, " + std::to_string(size) + "]");
  return static_cast<int32_t>(index - 1);
}

// Symmetric files store the lower triangle; a skew-symmetric diagonal is zero by definition.
void check_triangle(LineParser& lines, const std::string& symmetry, int32_t row, int32_t col) {
  const std::string entry = "(" + std::to_string(row + 1) + ", " + std::to_string(col + 1) + ")";
  if (symmetry == "skew-symmetric" && row == col)
    lines.fail("diagonal entry " + entry + " in a skew-symmetric file (its diagonal is zero)");
  if (row < col) lines.fail("entry " + entry + " above the diagonal in a " + symmetry + " file (only the lower triangle may be stored)");
}

double read_value(LineParser& lines, const std::string& field) {
  return field == "integer" ? static_cast<double>(lines.read_int("integer value")) : lines.read_real("value");
}

std::string declared(const Header& header, int64_t count) {
  return "the " + std::to_string(count) + " declared on the size line (line " + std::to_string(header.size_line) + ")";
}

}  // namespace

bool is_matrix_market(const std::string& text) { return !text.empty() && text[0] == '%'; }

StoredEntries read_matrix_market_coordinate(const std::string& text, const std::string& path, const ReadOptions& options) {
  LineParser lines(text, path);
  const Header header = read_header(lines);
  const MatrixInfo& info = header.info;
  if (info.layout != "coordinate")
    lines.fail("an array (dense) Matrix Market file where a sparse (coordinate) one was expected; read it with read_dense");
  StoredEntries stored{info, {}};
  Coo<double>& coo = stored.coo;
  coo.rows = static_cast<int32_t>(info.rows);
  coo.cols = static_cast<int32_t>(info.cols);
  // The declared count is not trusted with memory: an entry takes at least 4 bytes of text.
  const auto expected = static_cast<std::size_t>(std::min<int64_t>(header.declared_entries, int64_t(text.size() / 4) + 1));
  coo.row_idx.reserve(expected);
  coo.col_idx.reserve(expected);
  coo.values.reserve(expected);
  const bool pattern = info.field == "pattern";
  const bool symmetric = info.symmetry != "general";
  int64_t count = 0;
  while (lines.next_nonblank_line()) {
    if (count == header.declared_entries) lines.fail("more entries than " + declared(header, header.declared_entries));
    const int32_t row = read_index(lines, "row index", info.rows);
    const int32_t col = read_index(lines, "column index", info.cols);
    const double value = pattern ? pattern_value(options, uint64_t(count)) : read_value(lines, info.field);
    lines.expect_line_end("the entry");
    if (symmetric) check_triangle(lines, info.symmetry, row, col);
    coo.row_idx.push_back(row);
    coo.col_idx.push_back(col);
    coo.values.push_back(value);
    ++count;
  }
  if (count < header.declared_entries)
    lines.fail("file ends after " + std::to_string(count) + " entries, fewer than " + declared(header, header.declared_entries));
  stored.info.stored_entries = count;
  return stored;
}

Dense<double> read_matrix_market_array(const std::string& text, const std::string& path, MatrixInfo& info) {
  LineParser lines(text, path);
  const Header header = read_header(lines);
  info = header.info;
  if (info.layout != "array")
    lines.fail("a coordinate (sparse) Matrix Market file where an array (dense) one was expected; read it with read_csr");
  const int64_t n = info.rows;
  const int64_t expected = info.symmetry == "general"     ? info.rows * info.cols
                           : info.symmetry == "symmetric" ? n * (n + 1) / 2
                                                          : n * (n - 1) / 2;
  std::vector<double> values;
  values.reserve(static_cast<std::size_t>(std::min<int64_t>(expected, int64_t(text.size() / 2) + 1)));
  while (lines.next_nonblank_line()) {
    if (int64_t(values.size()) == expected) lines.fail("more values than the " + std::to_string(expected) + " the size line implies");
    values.push_back(read_value(lines, info.field));
    lines.expect_line_end("the value");
  }
  if (int64_t(values.size()) < expected)
    lines.fail("file ends after " + std::to_string(values.size()) + " values, fewer than the " + std::to_string(expected) +
               " the size line (line " + std::to_string(header.size_line) + ") implies");
  info.stored_entries = expected;

  Dense<double> dense(static_cast<int32_t>(info.rows), static_cast<int32_t>(info.cols));
  std::size_t next = 0;
  for (int64_t j = 0; j < info.cols; ++j) {
    const int64_t first_row = info.symmetry == "general" ? 0 : info.symmetry == "symmetric" ? j : j + 1;
    for (int64_t i = first_row; i < info.rows; ++i) {
      const double v = values[next++];
      dense.at(i, j) = v;
      if (info.symmetry != "general") dense.at(j, i) = info.symmetry == "skew-symmetric" ? -v : v;
    }
  }
  return dense;
}

}  // namespace sparsejit::io::detail
