// CPU reference SpMM: C = A·B and C = Aᵀ·B, rows in parallel, double accumulators.
#include <algorithm>
#include <string>
#include <vector>

#include "reference/checks.hpp"
#include "reference/parallel.hpp"
#include "reference/values.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/reference.hpp"

namespace sparsejit::reference {
namespace {

using detail::loop_type_t;

// Rows [begin, end) of C = A·B; b is B's values (row-major, n columns).
template <class T>
void multiply_rows(const Csr<T>& a, const loop_type_t<T>* b, int32_t n, T* c, int64_t begin, int64_t end) {
  std::vector<double> acc(static_cast<std::size_t>(n));
  const int32_t last = a.row_ptr[std::size_t(end)];
  for (int64_t r = begin; r < end; ++r) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int32_t e = a.row_ptr[std::size_t(r)]; e < a.row_ptr[std::size_t(r) + 1]; ++e) {
      if (e + detail::kPrefetchDistance < last)
        detail::prefetch_row(b + std::size_t(a.col_idx[std::size_t(e + detail::kPrefetchDistance)]) * std::size_t(n));
      const double v = detail::to_double(a.values[std::size_t(e)]);
      const loop_type_t<T>* b_row = b + std::size_t(a.col_idx[std::size_t(e)]) * std::size_t(n);
      for (int32_t j = 0; j < n; ++j) acc[std::size_t(j)] += v * double(b_row[j]);
    }
    T* c_row = c + std::size_t(r) * std::size_t(n);
    for (int32_t j = 0; j < n; ++j) c_row[j] = detail::from_double<T>(acc[std::size_t(j)]);
  }
}

// C = A·B with A's shape already checked against B.
template <class T>
Dense<T> multiply(const Csr<T>& a, const Dense<T>& b) {
  Dense<T> c(a.rows, b.cols);
  const detail::LoopValues<T> b_values(b.data);
  const int64_t per_entry = std::max<int32_t>(1, b.cols);
  detail::parallel_for_rows(a.row_ptr.data(), a.rows, per_entry, per_entry,
                            [&](int, int64_t begin, int64_t end) {
                              multiply_rows(a, b_values.data(), b.cols, c.data.data(), begin, end);
                            });
  return c;
}

}  // namespace

template <class T>
void spmm(const Csr<T>& a, const Dense<T>& b, Dense<T>& c, bool transpose_a) {
  detail::check_csr(a, "spmm", "A");
  detail::check_dense(b, "spmm", "B");
  if (transpose_a) {
    if (b.rows != a.rows)
      throw InvalidInputError("spmm: A is " + detail::dims(a.rows, a.cols) + " but B has " + std::to_string(b.rows) +
                              " rows (Aᵀ·B needs " + std::to_string(a.rows) + ")");
    // Forming Aᵀ costs one pass over the nonzeros and makes the product row-parallel.
    c = multiply(transpose(a), b);
    return;
  }
  if (b.rows != a.cols)
    throw InvalidInputError("spmm: A is " + detail::dims(a.rows, a.cols) + " but B has " + std::to_string(b.rows) +
                            " rows (A·B needs " + std::to_string(a.cols) + ")");
  c = multiply(a, b);
}

#define SPARSEJIT_INSTANTIATE(T) template void spmm(const Csr<T>&, const Dense<T>&, Dense<T>&, bool);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::reference
