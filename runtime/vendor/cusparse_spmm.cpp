#include "vendor/cusparse_spmm.hpp"

#include <string>

#include "sparsejit/error.hpp"
#include "vendor/cusparse_types.hpp"

namespace sparsejit::vendor {

const char* to_string(SpmmAlgorithm algorithm) {
  switch (algorithm) {
    case SpmmAlgorithm::CsrAlg1: return "csr_alg1";
    case SpmmAlgorithm::CsrAlg2: return "csr_alg2";
    case SpmmAlgorithm::CsrAlg3: return "csr_alg3";
  }
  return "unknown";
}

namespace {

cusparseSpMMAlg_t cusparse_algorithm(SpmmAlgorithm algorithm) {
  switch (algorithm) {
    case SpmmAlgorithm::CsrAlg1: return CUSPARSE_SPMM_CSR_ALG1;
    case SpmmAlgorithm::CsrAlg2: return CUSPARSE_SPMM_CSR_ALG2;
    case SpmmAlgorithm::CsrAlg3: return CUSPARSE_SPMM_CSR_ALG3;
  }
  throw InvalidInputError("unknown SpMM algorithm " + std::to_string(int(algorithm)));
}

std::string shape(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

template <class T>
void check_shapes(const DeviceCsr<T>& a, bool transpose_a, const DeviceDense<T>& b, const DeviceDense<T>& c) {
  const int64_t m = transpose_a ? a.cols() : a.rows();
  const int64_t inner = transpose_a ? a.rows() : a.cols();
  const std::string op = transpose_a ? "Aᵀ" : "A";
  if (b.rows() != inner)
    throw InvalidInputError("SpMM: " + op + " is " + shape(m, inner) + " but B is " + shape(b.rows(), b.cols()));
  if (c.rows() != m || c.cols() != b.cols())
    throw InvalidInputError("SpMM: C is " + shape(c.rows(), c.cols()) + ", expected " + shape(m, b.cols()));
}

}  // namespace

template <class T>
CusparseSpmm<T>::CusparseSpmm(const CusparseHandle& handle, const DeviceCsr<T>& a, bool transpose_a,
                              const DeviceDense<T>& b, DeviceDense<T>& c, SpmmAlgorithm algorithm, CUstream stream)
    : handle_(handle),
      op_a_(transpose_a ? CUSPARSE_OPERATION_TRANSPOSE : CUSPARSE_OPERATION_NON_TRANSPOSE),
      algorithm_(cusparse_algorithm(algorithm)) {
  check_shapes(a, transpose_a, b, c);
  handle_.bind(stream);
  a_ = make_csr_descriptor(a, a.values().ptr());
  b_ = make_dense_descriptor(b);
  c_ = make_dense_descriptor(c);
  const T alpha = 1, beta = 0;
  std::size_t bytes = 0;
  SPARSEJIT_CUSPARSE(cusparseSpMM_bufferSize, handle_.get(), op_a_, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                     a_.get(), b_.get(), &beta, c_.get(), cuda_data_type<T>::value, algorithm_, &bytes);
  workspace_ = DeviceBuffer(handle_.context(), bytes);
  SPARSEJIT_CUSPARSE(cusparseSpMM_preprocess, handle_.get(), op_a_, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha,
                     a_.get(), b_.get(), &beta, c_.get(), cuda_data_type<T>::value, algorithm_,
                     workspace_.as<void>());
}

template <class T>
void CusparseSpmm<T>::run(CUstream stream) {
  handle_.bind(stream);
  const T alpha = 1, beta = 0;
  SPARSEJIT_CUSPARSE(cusparseSpMM, handle_.get(), op_a_, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, a_.get(),
                     b_.get(), &beta, c_.get(), cuda_data_type<T>::value, algorithm_, workspace_.as<void>());
}

template class CusparseSpmm<float>;
template class CusparseSpmm<double>;

}  // namespace sparsejit::vendor
