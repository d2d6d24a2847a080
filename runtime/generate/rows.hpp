// Shared machinery of the sparse generators: drawing sets of columns, assembling a CSR row by
// row in parallel (each row from its own random stream, so the result is the same for every
// thread count), and the parameter checks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "generate/random.hpp"
#include "reference/parallel.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit::generate::detail {

inline void require(bool ok, const char* generator, const std::string& what) {
  if (!ok) throw InvalidInputError(std::string(generator) + ": " + what);
}

inline void require_non_negative(int64_t value, const char* generator, const char* name) {
  require(value >= 0, generator, std::string(name) + " " + std::to_string(value) + " must not be negative");
}

// The largest nonzero count the generator may produce must fit int32 offsets.
inline void require_nnz_fits(int64_t rows, int64_t per_row, const char* generator) {
  const int64_t limit = std::numeric_limits<int32_t>::max();
  require(per_row == 0 || rows <= limit / per_row, generator,
          std::to_string(rows) + " rows of up to " + std::to_string(per_row) + " nonzeros exceed " +
              std::to_string(limit) + " nonzeros (int32 offsets)");
}

// Appends `count` draws from [lo, lo + range), sorted, duplicates merged (so fewer may come).
inline void draw_merged(Rng& rng, int32_t lo, int32_t range, int32_t count, std::vector<int32_t>& out) {
  const std::size_t start = out.size();
  for (int32_t i = 0; i < count; ++i) out.push_back(lo + int32_t(rng.below(uint32_t(range))));
  std::sort(out.begin() + std::ptrdiff_t(start), out.end());
  out.erase(std::unique(out.begin() + std::ptrdiff_t(start), out.end()), out.end());
}

// Appends exactly `count` distinct values of [0, range), sorted; count ≤ range.
inline void draw_distinct(Rng& rng, int32_t range, int32_t count, std::vector<int32_t>& out) {
  if (int64_t(count) * 4 > range) {
    // Dense request: walk the range once, keeping each value with the probability that still
    // yields exactly `count` (selection sampling); re-drawing would loop too often.
    int32_t needed = count;
    for (int32_t v = 0; v < range && needed > 0; ++v)
      if (double(range - v) * rng.unit() < double(needed)) {
        out.push_back(v);
        --needed;
      }
    return;
  }
  // Sparse request: draw, sort, drop repeats, and draw again for the ones dropped.
  const std::size_t start = out.size();
  while (out.size() - start < std::size_t(count)) {
    const int32_t missing = count - int32_t(out.size() - start);
    for (int32_t i = 0; i < missing; ++i) out.push_back(int32_t(rng.below(uint32_t(range))));
    std::sort(out.begin() + std::ptrdiff_t(start), out.end());
    out.erase(std::unique(out.begin() + std::ptrdiff_t(start), out.end()), out.end());
  }
}

// A run of excluded columns [begin, begin + length).
struct ColumnRun {
  int32_t begin, length;
};

// Appends `count` distinct columns of [0, cols) outside the sorted, disjoint `excluded` runs.
inline void draw_distinct_outside(Rng& rng, int32_t cols, const std::vector<ColumnRun>& excluded, int32_t count,
                                  std::vector<int32_t>& out) {
  int32_t excluded_total = 0;
  for (const ColumnRun& run : excluded) excluded_total += run.length;
  const std::size_t start = out.size();
  draw_distinct(rng, cols - excluded_total, count, out);
  // Shift each draw past the runs before it: a monotone map from the free columns onto [0, cols).
  for (std::size_t i = start; i < out.size(); ++i)
    for (const ColumnRun& run : excluded)
      if (out[i] >= run.begin) out[i] += run.length;
}

// Rows [begin, end) of a generated matrix, held by one thread until stitching.
struct RowBlock {
  std::vector<int32_t> row_sizes;
  std::vector<int32_t> col_idx;
  std::vector<double> values;
};

// Builds a CSR of bounds.back() rows and `cols` columns: row_columns(row, rng, out) appends the
// sorted distinct columns of `row`, drawing from that row's own stream, after which the row's
// values are drawn from the same stream. Part p (one thread) builds rows [bounds[p],
// bounds[p + 1]); the result does not depend on the bounds. About `entries` nonzeros in all are
// expected (for reserving).
template <class RowColumns>
Csr<double> build_rows_in_parts(const char* generator, int32_t cols, uint64_t seed, const std::vector<int64_t>& bounds,
                                int64_t entries, RowColumns row_columns) {
  const int32_t rows = int32_t(bounds.back());
  const int parts = int(bounds.size()) - 1;
  std::vector<RowBlock> blocks(static_cast<std::size_t>(parts));
  sparsejit::detail::run_parts(bounds, [&](int part, int64_t begin, int64_t end) {
    RowBlock& block = blocks[std::size_t(part)];
    block.row_sizes.reserve(std::size_t(end - begin));
    block.col_idx.reserve(std::size_t(std::max<int64_t>(end - begin, entries / parts)));
    block.values.reserve(block.col_idx.capacity());
    for (int64_t row = begin; row < end; ++row) {
      Rng rng(seed, Stream::Row, uint64_t(row));
      const std::size_t start = block.col_idx.size();
      row_columns(int32_t(row), rng, block.col_idx);
      block.row_sizes.push_back(int32_t(block.col_idx.size() - start));
      for (std::size_t e = start; e < block.col_idx.size(); ++e) block.values.push_back(rng.symmetric());
    }
  });
  int64_t nnz = 0;
  for (const RowBlock& block : blocks) nnz += int64_t(block.col_idx.size());
  require_nnz_fits(nnz, 1, generator);
  Csr<double> m;
  m.rows = rows;
  m.cols = cols;
  m.row_ptr.reserve(std::size_t(rows) + 1);
  m.col_idx.reserve(std::size_t(nnz));
  m.values.reserve(std::size_t(nnz));
  for (RowBlock& block : blocks) {
    for (int32_t size : block.row_sizes) m.row_ptr.push_back(m.row_ptr.back() + size);
    m.col_idx.insert(m.col_idx.end(), block.col_idx.begin(), block.col_idx.end());
    m.values.insert(m.values.end(), block.values.begin(), block.values.end());
    block = RowBlock();  // release as we go: generated matrices reach tens of millions of entries
  }
  return m;
}

// build_rows_in_parts over rows cut evenly, for generators whose rows cost about the same;
// `work_per_row` (about the nonzeros per row) sizes the split.
template <class RowColumns>
Csr<double> build_rows(const char* generator, int32_t rows, int32_t cols, uint64_t seed, int64_t work_per_row,
                       RowColumns row_columns) {
  const int64_t entries = int64_t(rows) * std::max<int64_t>(1, work_per_row);
  return build_rows_in_parts(generator, cols, seed,
                             sparsejit::detail::even_bounds(rows, sparsejit::detail::part_count(entries)), entries,
                             row_columns);
}

}  // namespace sparsejit::generate::detail
