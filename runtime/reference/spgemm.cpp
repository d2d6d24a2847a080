// CPU reference SpGEMM: C = A·B, both sparse. Gustavson's row-by-row product with a dense
// accumulator per thread; each output row is sorted. Rows run in parallel, balanced by the
// number of scalar products they need, and are stitched together in row order.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "reference/checks.hpp"
#include "reference/parallel.hpp"
#include "reference/values.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/reference.hpp"

namespace sparsejit::reference {
namespace {

// Rows [begin, end) of the product, held by one thread until stitching.
template <class T>
struct RowBlock {
  std::vector<int32_t> row_sizes;
  std::vector<int32_t> col_idx;
  std::vector<T> values;
};

// prefix[r] = scalar products needed by rows before r (the balance weight).
template <class T>
std::vector<int64_t> product_prefix(const Csr<T>& a, const Csr<T>& b) {
  std::vector<int64_t> prefix(std::size_t(a.rows) + 1, 0);
  for (int32_t r = 0; r < a.rows; ++r) {
    int64_t products = 0;
    for (int32_t e = a.row_ptr[std::size_t(r)]; e < a.row_ptr[std::size_t(r) + 1]; ++e) {
      const int32_t k = a.col_idx[std::size_t(e)];
      products += b.row_ptr[std::size_t(k) + 1] - b.row_ptr[std::size_t(k)];
    }
    prefix[std::size_t(r) + 1] = prefix[std::size_t(r)] + products;
  }
  return prefix;
}

template <class T>
RowBlock<T> multiply_rows(const Csr<T>& a, const Csr<T>& b, int64_t begin, int64_t end) {
  RowBlock<T> block;
  block.row_sizes.reserve(std::size_t(end - begin));
  std::vector<double> acc(std::size_t(b.cols), 0.0);
  std::vector<int32_t> last_row(std::size_t(b.cols), -1);  // row that last touched a column
  std::vector<int32_t> touched;
  for (int64_t r = begin; r < end; ++r) {
    touched.clear();
    for (int32_t e = a.row_ptr[std::size_t(r)]; e < a.row_ptr[std::size_t(r) + 1]; ++e) {
      const int32_t k = a.col_idx[std::size_t(e)];
      const double a_value = detail::to_double(a.values[std::size_t(e)]);
      for (int32_t f = b.row_ptr[std::size_t(k)]; f < b.row_ptr[std::size_t(k) + 1]; ++f) {
        const int32_t j = b.col_idx[std::size_t(f)];
        if (last_row[std::size_t(j)] != r) {
          last_row[std::size_t(j)] = int32_t(r);
          acc[std::size_t(j)] = 0.0;
          touched.push_back(j);
        }
        acc[std::size_t(j)] += a_value * detail::to_double(b.values[std::size_t(f)]);
      }
    }
    if (touched.size() > std::size_t(b.cols) / 16) {
      // A crowded row: one scan of the marks lists its columns in order faster than sorting.
      touched.clear();
      for (int32_t j = 0; j < b.cols; ++j)
        if (last_row[std::size_t(j)] == r) touched.push_back(j);
    } else {
      std::sort(touched.begin(), touched.end());
    }
    block.row_sizes.push_back(int32_t(touched.size()));
    for (int32_t j : touched) {
      block.col_idx.push_back(j);
      block.values.push_back(detail::from_double<T>(acc[std::size_t(j)]));
    }
  }
  return block;
}

template <class T>
Csr<T> stitch(int32_t rows, int32_t cols, std::vector<RowBlock<T>>& blocks) {
  int64_t nnz = 0;
  for (const RowBlock<T>& block : blocks) nnz += int64_t(block.col_idx.size());
  if (nnz > std::numeric_limits<int32_t>::max())
    throw InvalidInputError("spgemm: the product has " + std::to_string(nnz) +
                            " nonzeros, more than int32 row offsets can address");
  Csr<T> c;
  c.rows = rows;
  c.cols = cols;
  c.row_ptr.reserve(std::size_t(rows) + 1);
  c.col_idx.reserve(std::size_t(nnz));
  c.values.reserve(std::size_t(nnz));
  for (RowBlock<T>& block : blocks) {
    for (int32_t size : block.row_sizes) c.row_ptr.push_back(c.row_ptr.back() + size);
    c.col_idx.insert(c.col_idx.end(), block.col_idx.begin(), block.col_idx.end());
    c.values.insert(c.values.end(), block.values.begin(), block.values.end());
    block = RowBlock<T>();  // release as we go: the product can be large
  }
  return c;
}

}  // namespace

template <class T>
Csr<T> spgemm(const Csr<T>& a, const Csr<T>& b) {
  detail::check_csr(a, "spgemm", "A");
  detail::check_csr(b, "spgemm", "B");
  if (a.cols != b.rows)
    throw InvalidInputError("spgemm: A is " + detail::dims(a.rows, a.cols) + " but B has " + std::to_string(b.rows) +
                            " rows (A·B needs " + std::to_string(a.cols) + "; B is " + detail::dims(b.rows, b.cols) + ")");
  const std::vector<int64_t> prefix = product_prefix(a, b);
  const int parts = detail::part_count(prefix.back() + a.rows);
  const std::vector<int64_t> bounds = detail::balanced_row_bounds(prefix.data(), a.rows, parts, 1, 1);
  std::vector<RowBlock<T>> blocks(static_cast<std::size_t>(parts));
  detail::run_parts(bounds, [&](int part, int64_t begin, int64_t end) {
    blocks[std::size_t(part)] = multiply_rows(a, b, begin, end);
  });
  return stitch(a.rows, b.cols, blocks);
}

#define SPARSEJIT_INSTANTIATE(T) template Csr<T> spgemm(const Csr<T>&, const Csr<T>&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::reference
