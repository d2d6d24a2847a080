// CPU reference SDDMM: P = S ∘ (A·Bᵀ), one dot product per nonzero of S, rows in parallel.
#include <algorithm>
#include <string>

#include "reference/checks.hpp"
#include "reference/parallel.hpp"
#include "reference/values.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/reference.hpp"

namespace sparsejit::reference {
namespace {

template <class V>
double dot(const V* x, const V* y, int32_t k) {
  double sum = 0.0;
  for (int32_t i = 0; i < k; ++i) sum += double(x[i]) * double(y[i]);
  return sum;
}

template <class T>
void check_sddmm_shapes(const Csr<T>& s, const Dense<T>& a, const Dense<T>& b) {
  detail::check_csr(s, "sddmm", "S");
  detail::check_dense(a, "sddmm", "A");
  detail::check_dense(b, "sddmm", "B");
  const std::string shapes = "S is " + detail::dims(s.rows, s.cols) + ", A is " + detail::dims(a.rows, a.cols) +
                             ", B is " + detail::dims(b.rows, b.cols);
  if (a.rows != s.rows) throw InvalidInputError("sddmm: A must have S's row count: " + shapes);
  if (b.rows != s.cols) throw InvalidInputError("sddmm: B must have as many rows as S has columns: " + shapes);
  if (a.cols != b.cols) throw InvalidInputError("sddmm: A and B must have the same column count: " + shapes);
}

}  // namespace

template <class T>
void sddmm(const Csr<T>& s, const Dense<T>& a, const Dense<T>& b, Csr<T>& p) {
  check_sddmm_shapes(s, a, b);
  Csr<T> out;  // built aside so that p may alias s
  out.rows = s.rows;
  out.cols = s.cols;
  out.row_ptr = s.row_ptr;
  out.col_idx = s.col_idx;
  out.values.resize(s.values.size());
  const detail::LoopValues<T> a_values(a.data), b_values(b.data);
  const int32_t k = a.cols;
  detail::parallel_for_rows(s.row_ptr.data(), s.rows, std::max<int32_t>(1, k), 1,
                            [&](int, int64_t begin, int64_t end) {
    const int32_t last = s.row_ptr[std::size_t(end)];
    for (int64_t r = begin; r < end; ++r) {
      const auto* a_row = a_values.data() + std::size_t(r) * std::size_t(k);
      for (int32_t e = s.row_ptr[std::size_t(r)]; e < s.row_ptr[std::size_t(r) + 1]; ++e) {
        if (e + detail::kPrefetchDistance < last)
          detail::prefetch_row(b_values.data() + std::size_t(s.col_idx[std::size_t(e + detail::kPrefetchDistance)]) * std::size_t(k));
        const auto* b_row = b_values.data() + std::size_t(s.col_idx[std::size_t(e)]) * std::size_t(k);
        const double scale = detail::to_double(s.values[std::size_t(e)]);
        out.values[std::size_t(e)] = detail::from_double<T>(scale * dot(a_row, b_row, k));
      }
    }
  });
  p = std::move(out);
}

#define SPARSEJIT_INSTANTIATE(T) template void sddmm(const Csr<T>&, const Dense<T>&, const Dense<T>&, Csr<T>&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::reference
