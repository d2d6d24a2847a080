#include "sparsejit/matrix.hpp"

#include <algorithm>
#include <numeric>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit {

template <class T>
Csr<T> to_csr(const Coo<T>& coo) {
  if (coo.rows < 0 || coo.cols < 0) throw InvalidInputError("negative matrix size " + std::to_string(coo.rows) + "x" + std::to_string(coo.cols));
  const std::size_t n = coo.row_idx.size();
  for (std::size_t e = 0; e < n; ++e) {
    if (coo.row_idx[e] < 0 || coo.row_idx[e] >= coo.rows)
      throw InvalidInputError("entry " + std::to_string(e) + ": row index " + std::to_string(coo.row_idx[e]) + " out of range [0, " + std::to_string(coo.rows) + ")");
    if (coo.col_idx[e] < 0 || coo.col_idx[e] >= coo.cols)
      throw InvalidInputError("entry " + std::to_string(e) + ": column index " + std::to_string(coo.col_idx[e]) + " out of range [0, " + std::to_string(coo.cols) + ")");
  }
  Csr<T> csr;
  csr.rows = coo.rows;
  csr.cols = coo.cols;
  csr.row_ptr.assign(std::size_t(coo.rows) + 1, 0);
  for (std::size_t e = 0; e < n; ++e) ++csr.row_ptr[std::size_t(coo.row_idx[e]) + 1];
  std::partial_sum(csr.row_ptr.begin(), csr.row_ptr.end(), csr.row_ptr.begin());
  csr.col_idx.resize(n);
  csr.values.resize(n);
  std::vector<int32_t> next(csr.row_ptr.begin(), csr.row_ptr.end() - 1);
  for (std::size_t e = 0; e < n; ++e) {
    const int32_t slot = next[std::size_t(coo.row_idx[e])]++;
    csr.col_idx[std::size_t(slot)] = coo.col_idx[e];
    csr.values[std::size_t(slot)] = coo.values[e];
  }
  sort_rows(csr);
  sum_duplicates(csr);
  return csr;
}

template <class T>
Coo<T> to_coo(const Csr<T>& csr) {
  Coo<T> coo;
  coo.rows = csr.rows;
  coo.cols = csr.cols;
  coo.row_idx.resize(csr.col_idx.size());
  for (int32_t r = 0; r < csr.rows; ++r)
    std::fill(coo.row_idx.begin() + csr.row_ptr[r], coo.row_idx.begin() + csr.row_ptr[r + 1], r);
  coo.col_idx = csr.col_idx;
  coo.values = csr.values;
  return coo;
}

template <class T>
Csr<T> transpose(const Csr<T>& csr) {
  Csr<T> t;
  t.rows = csr.cols;
  t.cols = csr.rows;
  t.row_ptr.assign(std::size_t(csr.cols) + 1, 0);
  for (int32_t c : csr.col_idx) ++t.row_ptr[std::size_t(c) + 1];
  std::partial_sum(t.row_ptr.begin(), t.row_ptr.end(), t.row_ptr.begin());
  t.col_idx.resize(csr.col_idx.size());
  t.values.resize(csr.values.size());
  std::vector<int32_t> next(t.row_ptr.begin(), t.row_ptr.end() - 1);
  for (int32_t r = 0; r < csr.rows; ++r) {  // rows visited in order, so each output row is sorted
    for (int32_t e = csr.row_ptr[r]; e < csr.row_ptr[r + 1]; ++e) {
      const int32_t slot = next[std::size_t(csr.col_idx[e])]++;
      t.col_idx[std::size_t(slot)] = r;
      t.values[std::size_t(slot)] = csr.values[std::size_t(e)];
    }
  }
  return t;
}

template <class T>
void sort_rows(Csr<T>& csr) {
  std::vector<std::pair<int32_t, T>> row;
  for (int32_t r = 0; r < csr.rows; ++r) {
    const int32_t begin = csr.row_ptr[r], end = csr.row_ptr[r + 1];
    if (std::is_sorted(csr.col_idx.begin() + begin, csr.col_idx.begin() + end)) continue;
    row.clear();
    for (int32_t e = begin; e < end; ++e) row.emplace_back(csr.col_idx[e], csr.values[e]);
    std::stable_sort(row.begin(), row.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (int32_t e = begin; e < end; ++e) {
      csr.col_idx[e] = row[std::size_t(e - begin)].first;
      csr.values[e] = row[std::size_t(e - begin)].second;
    }
  }
}

template <class T>
void sum_duplicates(Csr<T>& csr) {
  int32_t out = 0;
  int32_t begin = 0;
  for (int32_t r = 0; r < csr.rows; ++r) {
    const int32_t end = csr.row_ptr[r + 1];
    const int32_t row_start = out;
    for (int32_t e = begin; e < end; ++e) {
      if (out > row_start && csr.col_idx[out - 1] == csr.col_idx[e]) {
        csr.values[out - 1] = T(double(csr.values[out - 1]) + double(csr.values[e]));
      } else {
        csr.col_idx[out] = csr.col_idx[e];
        csr.values[out] = csr.values[e];
        ++out;
      }
    }
    begin = end;
    csr.row_ptr[r + 1] = out;
  }
  csr.col_idx.resize(std::size_t(out));
  csr.values.resize(std::size_t(out));
}

template <class T>
Coo<T> expand_symmetric(const Coo<T>& lower, bool skew) {
  Coo<T> full = lower;
  for (std::size_t e = 0; e < lower.row_idx.size(); ++e) {
    if (lower.row_idx[e] == lower.col_idx[e]) continue;
    full.row_idx.push_back(lower.col_idx[e]);
    full.col_idx.push_back(lower.row_idx[e]);
    full.values.push_back(skew ? T(-double(lower.values[e])) : lower.values[e]);
  }
  return full;
}

template <class To, class From>
Csr<To> cast(const Csr<From>& csr) {
  Csr<To> out;
  out.rows = csr.rows;
  out.cols = csr.cols;
  out.row_ptr = csr.row_ptr;
  out.col_idx = csr.col_idx;
  out.values.reserve(csr.values.size());
  for (const From& v : csr.values) out.values.push_back(To(static_cast<double>(v)));
  return out;
}

template <class To, class From>
Dense<To> cast(const Dense<From>& dense) {
  Dense<To> out;
  out.rows = dense.rows;
  out.cols = dense.cols;
  out.data.reserve(dense.data.size());
  for (const From& v : dense.data) out.data.push_back(To(static_cast<double>(v)));
  return out;
}

void validate(const PatternView& p, bool require_sorted) {
  if (p.rows < 0 || p.cols < 0)
    throw InvalidInputError("negative matrix size " + std::to_string(p.rows) + "x" + std::to_string(p.cols));
  if (p.row_ptr == nullptr) throw InvalidInputError("row offsets missing");
  if (p.row_ptr[0] != 0) throw InvalidInputError("row offsets start at " + std::to_string(p.row_ptr[0]) + ", expected 0");
  // Every offset first: the column pass reads col_idx up to each row's end, which is within
  // the nnz = row_ptr[rows] column indices only once the offsets are known to be monotone.
  for (int32_t r = 0; r < p.rows; ++r)
    if (p.row_ptr[r + 1] < p.row_ptr[r])
      throw InvalidInputError("row " + std::to_string(r) + ": offsets not monotone (" + std::to_string(p.row_ptr[r]) + " then " +
                              std::to_string(p.row_ptr[r + 1]) + ")");
  for (int32_t r = 0; r < p.rows; ++r) {
    const int32_t begin = p.row_ptr[r], end = p.row_ptr[r + 1];
    for (int32_t e = begin; e < end; ++e) {
      const int32_t c = p.col_idx[e];
      if (c < 0 || c >= p.cols)
        throw InvalidInputError("row " + std::to_string(r) + ": column index " + std::to_string(c) + " out of range [0, " + std::to_string(p.cols) + ")");
      if (require_sorted && e > begin && c <= p.col_idx[e - 1])
        throw InvalidInputError("row " + std::to_string(r) + ": column index " + std::to_string(c) +
                                (c == p.col_idx[e - 1] ? " repeated" : " out of order after " + std::to_string(p.col_idx[e - 1])));
    }
  }
}

template <class T>
void validate(const Csr<T>& csr, bool require_sorted) {
  if (csr.row_ptr.size() != std::size_t(std::max(csr.rows, 0)) + 1)
    throw InvalidInputError("row offsets have " + std::to_string(csr.row_ptr.size()) + " entries, expected rows + 1 = " + std::to_string(int64_t(csr.rows) + 1));
  if (csr.values.size() != csr.col_idx.size())
    throw InvalidInputError("values have " + std::to_string(csr.values.size()) + " entries, column indices " + std::to_string(csr.col_idx.size()));
  if (int64_t(csr.col_idx.size()) != int64_t(csr.row_ptr.back()))
    throw InvalidInputError("last row offset " + std::to_string(csr.row_ptr.back()) + " differs from nnz " + std::to_string(csr.col_idx.size()));
  validate(csr.pattern(), require_sorted);
}

#define SPARSEJIT_INSTANTIATE(T)                                  \
  template Csr<T> to_csr(const Coo<T>&);                          \
  template Coo<T> to_coo(const Csr<T>&);                          \
  template Csr<T> transpose(const Csr<T>&);                       \
  template void sort_rows(Csr<T>&);                               \
  template void sum_duplicates(Csr<T>&);                          \
  template Coo<T> expand_symmetric(const Coo<T>&, bool);          \
  template void validate(const Csr<T>&, bool);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

#define SPARSEJIT_INSTANTIATE_CAST(To, From)          \
  template Csr<To> cast<To, From>(const Csr<From>&);  \
  template Dense<To> cast<To, From>(const Dense<From>&);
#define SPARSEJIT_INSTANTIATE_CASTS(From)      \
  SPARSEJIT_INSTANTIATE_CAST(float, From)      \
  SPARSEJIT_INSTANTIATE_CAST(double, From)     \
  SPARSEJIT_INSTANTIATE_CAST(half, From)       \
  SPARSEJIT_INSTANTIATE_CAST(bfloat16, From)
SPARSEJIT_INSTANTIATE_CASTS(float)
SPARSEJIT_INSTANTIATE_CASTS(double)
SPARSEJIT_INSTANTIATE_CASTS(half)
SPARSEJIT_INSTANTIATE_CASTS(bfloat16)
#undef SPARSEJIT_INSTANTIATE_CASTS
#undef SPARSEJIT_INSTANTIATE_CAST

}  // namespace sparsejit
