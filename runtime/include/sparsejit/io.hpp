// Matrix file I/O: Matrix Market (coordinate and array) and the DLMC .smtx pattern format,
// plain or gzip-compressed (detected by the gzip magic bytes, never by the file name).
//
// Errors: a file that cannot be opened, read, decompressed (corrupt or truncated gzip) or
// written is an IoError; a file whose contents are malformed is an InvalidInputError; a
// well-formed file this library does not handle (complex, hermitian, vector) is an
// UnsupportedError. Every message starts "path:line: " where a line is known and quotes the
// offending text, e.g. "bad.mtx:7: column index 0 out of range [1, 4]".
#pragma once
#include <cstdint>
#include <string>

#include "sparsejit/matrix.hpp"

namespace sparsejit::io {

// What a pattern file's entries (Matrix Market "pattern", every .smtx) become as values.
enum class PatternValues {
  Ones,    // every entry 1 (default)
  Random,  // uniform in [-1, 1], a function of (seed, entry's position in the file) only
};
const char* to_string(PatternValues values);  // "ones", "random"

// What a file may make a reader allocate beyond its own size: a 60-byte file declaring 2^30
// rows would otherwise take gigabytes for row offsets, and a small gzip of blank lines
// inflates to gigabytes of text. Past a limit the reader throws InvalidInputError naming the
// value and the limit, before allocating for it. The defaults pass every real matrix we know
// (SuiteSparse, DLMC); raise them for hypersparse files (the CLI reads
// SPARSEJIT_MAX_DIMENSION and SPARSEJIT_MAX_INFLATED_BYTES); 0 turns a limit off.
struct SizeLimits {
  // A declared row or column count may be at most
  // max(max_dimension, kDimensionsPerEntry x the entries stored in the file).
  static constexpr int64_t kDimensionsPerEntry = 16;
  int64_t max_dimension = int64_t(1) << 24;
  // A gzip file may inflate to at most max(max_inflated_bytes, kInflationRatio x its size).
  static constexpr int64_t kInflationRatio = 64;
  int64_t max_inflated_bytes = int64_t(1) << 28;
};

struct ReadOptions {
  PatternValues pattern_values = PatternValues::Ones;  // values of pattern files
  uint64_t seed = 0;                                   // seed of PatternValues::Random
  // Symmetric and skew-symmetric files store one triangle; true (default) returns the full
  // general matrix, false the stored triangle as it is.
  bool expand_symmetric = true;
  SizeLimits limits;
};

// What the file said about itself.
struct MatrixInfo {
  std::string format;    // "matrix-market" or "smtx"
  std::string layout;    // "coordinate" or "array" ("coordinate" for .smtx)
  std::string field;     // "real", "integer" or "pattern"
  std::string symmetry;  // "general", "symmetric" or "skew-symmetric"
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t stored_entries = 0;  // entries in the file (one triangle for symmetric files)
  bool gzip = false;
};
// One line, e.g. "matrix-market coordinate real symmetric 2003x2003, 42943 stored entries, gzip".
std::string describe(const MatrixInfo& info);

// Reads a sparse matrix (Matrix Market coordinate or .smtx, chosen by the content: a file
// starting with "%%MatrixMarket" is Matrix Market, anything else .smtx). Entries are summed
// where repeated, rows are sorted. T: float, double, half, bfloat16; values are parsed as
// double and rounded once to T (a finite value that overflows T is an InvalidInputError).
template <class T>
Csr<T> read_csr(const std::string& path, const ReadOptions& options = {}, MatrixInfo* info = nullptr);

// Reads a Matrix Market array (dense) file, general, symmetric or skew-symmetric, into a
// row-major Dense (the file is column-major).
template <class T>
Dense<T> read_dense(const std::string& path, MatrixInfo* info = nullptr, const SizeLimits& limits = {});

// Write Matrix Market text (coordinate real general, 1-based; array real general) with
// values in the shortest form that reads back to the same T. The file is written beside
// the target under a temporary name and renamed over it, so a failed write never leaves a
// partial file at `path`. Non-finite values are refused (InvalidInputError).
template <class T>
void write_matrix_market(const std::string& path, const Csr<T>& matrix);
template <class T>
void write_matrix_market(const std::string& path, const Dense<T>& matrix);

}  // namespace sparsejit::io
