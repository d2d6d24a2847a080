// read_csr / read_dense: pick the reader by content, then turn the stored double entries
// into the caller's matrix (symmetric expansion, sorting, duplicate sums, value type).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string_view>
#include <utility>
#include <type_traits>

#include "io/readers.hpp"
#include "io/text_source.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::io {
namespace detail {

// splitmix64 of the position: a value depends only on (seed, index), so it is the same
// whatever order or thread produces it.
double pattern_value(const ReadOptions& options, uint64_t index) {
  if (options.pattern_values == PatternValues::Ones) return 1.0;
  uint64_t z = options.seed + (index + 1) * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const double unit = double(z >> 11) * 0x1.0p-53;  // [0, 1)
  return 2.0 * unit - 1.0;
}

}  // namespace detail

namespace {

detail::TextSource read_nonempty_text(const std::string& path, const SizeLimits& limits) {
  detail::TextSource source = detail::read_text(path, limits);
  // Editors on some systems start a UTF-8 text with a byte order mark; it is no content.
  constexpr std::string_view kUtf8ByteOrderMark = "\xef\xbb\xbf";
  if (std::string_view(source.text).substr(0, kUtf8ByteOrderMark.size()) == kUtf8ByteOrderMark)
    source.text.erase(0, kUtf8ByteOrderMark.size());
  if (source.text.find_first_not_of(" \t\r\n") == std::string::npos) throw InvalidInputError(path + ": empty file");
  return source;
}

std::string shortest(double value) {
  char buffer[32];
  const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
  return std::string(buffer, end);
}

// A finite double can still overflow float, half or bfloat16; that is bad input, not inf.
template <class T>
void check_representable(const std::vector<double>& values, const std::string& path) {
  for (double v : values)
    if (!std::isfinite(static_cast<float>(T(static_cast<float>(v)))))
      throw InvalidInputError(path + ": value " + shortest(v) + " overflows " + to_string(dtype_of<T>::value));
}

const std::vector<double>& values_of(const Csr<double>& matrix) { return matrix.values; }
const std::vector<double>& values_of(const Dense<double>& matrix) { return matrix.data; }

template <class T, template <class> class Matrix>
Matrix<T> to_value_type(Matrix<double>&& matrix, const std::string& path) {
  if constexpr (std::is_same_v<T, double>) {
    return std::move(matrix);
  } else {
    check_representable<T>(values_of(matrix), path);
    return cast<T>(matrix);
  }
}

// The declared rows and columns become row offsets and per-column counters: a header is not
// trusted with more of them than the entries in the file justify (SizeLimits).
void check_declared_size(const MatrixInfo& info, int64_t entries, const SizeLimits& limits, const std::string& path) {
  if (limits.max_dimension <= 0) return;
  const int64_t limit = std::max(limits.max_dimension, SizeLimits::kDimensionsPerEntry * entries);
  for (const auto& [what, size] : {std::pair{"rows", info.rows}, std::pair{"columns", info.cols}})
    if (size > limit)
      throw InvalidInputError(path + ": " + std::to_string(size) + " declared " + what + " for " + std::to_string(entries) +
                              " stored entries, over the limit max(max_dimension " + std::to_string(limits.max_dimension) +
                              ", " + std::to_string(SizeLimits::kDimensionsPerEntry) +
                              " x entries) = " + std::to_string(limit) + "; SPARSEJIT_MAX_DIMENSION raises it in the CLI");
}

// Mirrors the stored triangle; the result must still be indexable by int32.
Coo<double> expand(const Coo<double>& stored, const MatrixInfo& info, const std::string& path) {
  int64_t off_diagonal = 0;
  for (std::size_t e = 0; e < stored.row_idx.size(); ++e) off_diagonal += stored.row_idx[e] != stored.col_idx[e];
  const int64_t total = stored.nnz() + off_diagonal;
  if (total > std::numeric_limits<int32_t>::max())
    throw InvalidInputError(path + ": the expanded " + info.symmetry + " matrix has " + std::to_string(total) +
                            " entries, more than 2147483647");
  return expand_symmetric(stored, info.symmetry == "skew-symmetric");
}

}  // namespace

const char* to_string(PatternValues values) { return values == PatternValues::Ones ? "ones" : "random"; }

std::string describe(const MatrixInfo& info) {
  return info.format + " " + info.layout + " " + info.field + " " + info.symmetry + " " + std::to_string(info.rows) + "x" +
         std::to_string(info.cols) + ", " + std::to_string(info.stored_entries) + " stored entries" +
         (info.gzip ? ", gzip" : "");
}

template <class T>
Csr<T> read_csr(const std::string& path, const ReadOptions& options, MatrixInfo* info) {
  detail::StoredEntries stored;
  bool gzip = false;
  {
    const detail::TextSource source = read_nonempty_text(path, options.limits);
    gzip = source.gzip;
    stored = detail::is_matrix_market(source.text) ? detail::read_matrix_market_coordinate(source.text, path, options)
                                                   : detail::read_smtx(source.text, path, options);
  }
  stored.info.gzip = gzip;
  check_declared_size(stored.info, stored.coo.nnz(), options.limits, path);
  const bool expand_now = options.expand_symmetric && stored.info.symmetry != "general";
  Csr<double> csr = to_csr(expand_now ? expand(stored.coo, stored.info, path) : stored.coo);
  if (info) *info = stored.info;
  return to_value_type<T>(std::move(csr), path);
}

template <class T>
Dense<T> read_dense(const std::string& path, MatrixInfo* info, const SizeLimits& limits) {
  const detail::TextSource source = read_nonempty_text(path, limits);
  if (!detail::is_matrix_market(source.text))
    throw InvalidInputError(path + ": not a Matrix Market file (no '%%MatrixMarket' banner); dense matrices are read from Matrix Market array files");
  MatrixInfo found;
  Dense<double> dense = detail::read_matrix_market_array(source.text, path, found);
  found.gzip = source.gzip;
  if (info) *info = found;
  return to_value_type<T>(std::move(dense), path);
}

#define SPARSEJIT_INSTANTIATE(T)                                                        \
  template Csr<T> read_csr<T>(const std::string&, const ReadOptions&, MatrixInfo*); \
  template Dense<T> read_dense<T>(const std::string&, MatrixInfo*, const SizeLimits&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::io
