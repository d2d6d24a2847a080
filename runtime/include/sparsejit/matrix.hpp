// Host matrix containers: CSR, COO and row-major dense, int32 indices, values of any of the
// four value types (float, double, half, bfloat16), and the transforms between them.
#pragma once
#include <cstdint>
#include <vector>

#include "sparsejit/types.hpp"

namespace sparsejit {

// A non-owning view of a CSR sparsity pattern; features and plans look only at this.
struct PatternView {
  int32_t rows = 0;
  int32_t cols = 0;
  const int32_t* row_ptr = nullptr;  // rows + 1 offsets, row_ptr[0] == 0
  const int32_t* col_idx = nullptr;  // row_ptr[rows] column indices
  int64_t nnz() const { return rows == 0 ? 0 : row_ptr[rows]; }
};

template <class T>
struct Csr {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> row_ptr{0};
  std::vector<int32_t> col_idx;
  std::vector<T> values;

  int64_t nnz() const { return static_cast<int64_t>(col_idx.size()); }
  PatternView pattern() const { return {rows, cols, row_ptr.data(), col_idx.data()}; }
};

template <class T>
struct Coo {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<int32_t> row_idx;
  std::vector<int32_t> col_idx;
  std::vector<T> values;

  int64_t nnz() const { return static_cast<int64_t>(row_idx.size()); }
};

// Row-major, leading dimension == cols.
template <class T>
struct Dense {
  int32_t rows = 0;
  int32_t cols = 0;
  std::vector<T> data;

  Dense() = default;
  Dense(int32_t r, int32_t c, T fill = T(0)) : rows(r), cols(c), data(std::size_t(r) * std::size_t(c), fill) {}
  T& at(int64_t r, int64_t c) { return data[std::size_t(r) * std::size_t(cols) + std::size_t(c)]; }
  const T& at(int64_t r, int64_t c) const { return data[std::size_t(r) * std::size_t(cols) + std::size_t(c)]; }
};

// COO -> CSR: entries sorted by (row, column); duplicates summed.
template <class T> Csr<T> to_csr(const Coo<T>& coo);
// CSR -> COO in CSR order.
template <class T> Coo<T> to_coo(const Csr<T>& csr);
// Aᵀ as a CSR with sorted rows.
template <class T> Csr<T> transpose(const Csr<T>& csr);
// Sorts column indices (and values) inside every row.
template <class T> void sort_rows(Csr<T>& csr);
// Sums entries with the same (row, column); rows must be sorted.
template <class T> void sum_duplicates(Csr<T>& csr);
// Mirrors every off-diagonal entry (a_ji = a_ij, or -a_ij when skew) of a triangle-stored COO.
template <class T> Coo<T> expand_symmetric(const Coo<T>& lower, bool skew);
// Converts the value type.
template <class To, class From> Csr<To> cast(const Csr<From>& csr);
template <class To, class From> Dense<To> cast(const Dense<From>& dense);

// Throws InvalidInputError naming the first violation: negative sizes, offsets that do not
// start at 0 or are not monotone, column indices out of range and, when require_sorted,
// unsorted or duplicate columns in a row.
void validate(const PatternView& pattern, bool require_sorted = true);
template <class T> void validate(const Csr<T>& csr, bool require_sorted = true);

}  // namespace sparsejit
