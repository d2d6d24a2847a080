#include "vendor/cusparse_sddmm.hpp"

#include <string>

#include "sparsejit/error.hpp"
#include "vendor/cusparse_types.hpp"

namespace sparsejit::vendor {
namespace {

constexpr cusparseOperation_t kOpA = CUSPARSE_OPERATION_NON_TRANSPOSE;
constexpr cusparseOperation_t kOpB = CUSPARSE_OPERATION_TRANSPOSE;  // B is stored N×K; the product needs K×N

template <class T>
void check_shapes(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, const DeviceBuffer& out) {
  const auto shape = [](int64_t r, int64_t c) { return std::to_string(r) + "x" + std::to_string(c); };
  if (a.rows() != s.rows() || b.rows() != s.cols() || a.cols() != b.cols())
    throw InvalidInputError("SDDMM: S is " + shape(s.rows(), s.cols()) + ", A is " + shape(a.rows(), a.cols()) +
                            ", B is " + shape(b.rows(), b.cols()) + "; expected A M×K and B N×K for S M×N");
  const std::size_t needed = std::size_t(s.nnz()) * sizeof(T);
  if (out.bytes() < needed)
    throw InvalidInputError("SDDMM: output buffer of " + std::to_string(out.bytes()) + " bytes is below the " +
                            std::to_string(needed) + " bytes of " + std::to_string(s.nnz()) + " values");
}

}  // namespace

template <class T>
CusparseSampledDots<T>::CusparseSampledDots(const CusparseHandle& handle, const DeviceCsr<T>& pattern,
                                            const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceBuffer& out,
                                            CUstream stream)
    : handle_(handle) {
  check_shapes(pattern, a, b, out);
  handle_.bind(stream);
  a_ = make_dense_descriptor(a);
  b_ = make_dense_descriptor(b);
  c_ = make_csr_descriptor(pattern, out.ptr());
  const T alpha = 1, beta = 0;
  std::size_t bytes = 0;
  SPARSEJIT_CUSPARSE(cusparseSDDMM_bufferSize, handle_.get(), kOpA, kOpB, &alpha, a_.get(), b_.get(), &beta, c_.get(),
                     cuda_data_type<T>::value, CUSPARSE_SDDMM_ALG_DEFAULT, &bytes);
  workspace_ = DeviceBuffer(handle_.context(), bytes);
  SPARSEJIT_CUSPARSE(cusparseSDDMM_preprocess, handle_.get(), kOpA, kOpB, &alpha, a_.get(), b_.get(), &beta,
                     c_.get(), cuda_data_type<T>::value, CUSPARSE_SDDMM_ALG_DEFAULT, workspace_.as<void>());
}

template <class T>
void CusparseSampledDots<T>::run(CUstream stream) {
  handle_.bind(stream);
  const T alpha = 1, beta = 0;
  SPARSEJIT_CUSPARSE(cusparseSDDMM, handle_.get(), kOpA, kOpB, &alpha, a_.get(), b_.get(), &beta, c_.get(),
                     cuda_data_type<T>::value, CUSPARSE_SDDMM_ALG_DEFAULT, workspace_.as<void>());
}

template class CusparseSampledDots<float>;
template class CusparseSampledDots<double>;

}  // namespace sparsejit::vendor
