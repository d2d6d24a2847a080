#include "vendor/cusparse_spgemm.hpp"

#include <algorithm>
#include <string>

#include "cuda/driver_api.hpp"
#include "sparsejit/error.hpp"
#include "vendor/cusparse_types.hpp"

namespace sparsejit::vendor {

const char* to_string(SpgemmAlgorithm algorithm) {
  switch (algorithm) {
    case SpgemmAlgorithm::Alg1: return "alg1";
  }
  return "unknown";
}

namespace {

struct SpgemmDescriptor {
  SpgemmDescriptor() { SPARSEJIT_CUSPARSE(cusparseSpGEMM_createDescr, &get); }
  ~SpgemmDescriptor() { cusparseSpGEMM_destroyDescr(get); }
  SpgemmDescriptor(const SpgemmDescriptor&) = delete;
  SpgemmDescriptor& operator=(const SpgemmDescriptor&) = delete;
  cusparseSpGEMMDescr_t get = nullptr;
};

void* raw(const DeviceBuffer& buffer) { return buffer.as<void>(); }

}  // namespace

template <class T>
CusparseSpgemmResult cusparse_spgemm(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                     SpgemmAlgorithm algorithm, CUstream stream, const OutputArray& new_array) {
  if (a.cols() != b.rows())
    throw InvalidInputError("cuSPARSE SpGEMM: A is " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) + " but B is " +
                            std::to_string(b.rows()) + "x" + std::to_string(b.cols()));
  const cusparseSpGEMMAlg_t alg = CUSPARSE_SPGEMM_ALG1;
  (void)algorithm;  // one algorithm so far
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const cudaDataType type = cuda_data_type<T>::value;
  const T alpha = 1, beta = 0;
  handle.bind(stream);
  const SpMatDescriptor mat_a = make_csr_descriptor(a, a.values().ptr());
  const SpMatDescriptor mat_b = make_csr_descriptor(b, b.values().ptr());
  cusparseSpMatDescr_t c_descriptor = nullptr;
  SPARSEJIT_CUSPARSE(cusparseCreateCsr, &c_descriptor, a.rows(), b.cols(), 0, nullptr, nullptr, nullptr, CUSPARSE_INDEX_32I,
                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, type);
  const SpMatDescriptor mat_c(c_descriptor);
  const SpgemmDescriptor spgemm;

  std::size_t bytes1 = 0, bytes2 = 0;
  SPARSEJIT_CUSPARSE(cusparseSpGEMM_workEstimation, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(),
                     type, alg, spgemm.get, &bytes1, nullptr);
  // At least a byte: a null buffer would make the second call another size query.
  const DeviceBuffer buffer1(handle.context(), std::max<std::size_t>(bytes1, 1));
  SPARSEJIT_CUSPARSE(cusparseSpGEMM_workEstimation, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(),
                     type, alg, spgemm.get, &bytes1, raw(buffer1));
  SPARSEJIT_CUSPARSE(cusparseSpGEMM_compute, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type,
                     alg, spgemm.get, &bytes2, nullptr);
  const DeviceBuffer buffer2(handle.context(), std::max<std::size_t>(bytes2, 1));
  SPARSEJIT_CUSPARSE(cusparseSpGEMM_compute, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type,
                     alg, spgemm.get, &bytes2, raw(buffer2));

  int64_t rows = 0, cols = 0, nnz = 0;
  SPARSEJIT_CUSPARSE(cusparseSpMatGetSize, mat_c.get(), &rows, &cols, &nnz);
  CusparseSpgemmResult c;
  c.nnz = nnz;
  c.buffer_bytes = bytes1 + bytes2;
  c.row_ptr = new_array((std::size_t(a.rows()) + 1) * sizeof(int32_t));
  c.col_idx = new_array(std::size_t(nnz) * sizeof(int32_t));
  c.values = new_array(std::size_t(nnz) * sizeof(T));
  SPARSEJIT_CUSPARSE(cusparseCsrSetPointers, mat_c.get(), raw(c.row_ptr), raw(c.col_idx), raw(c.values));
  SPARSEJIT_CUSPARSE(cusparseSpGEMM_copy, handle.get(), op, op, &alpha, mat_a.get(), mat_b.get(), &beta, mat_c.get(), type, alg,
                     spgemm.get);
  // The work buffers are freed when this returns: wait for the copy that reads them first (as
  // the documented sequence's cudaFree does).
  SPARSEJIT_CU(cuStreamSynchronize, stream);
  return c;
}

void SpgemmDescrDeleter::operator()(cusparseSpGEMMDescr* descriptor) const { cusparseSpGEMM_destroyDescr(descriptor); }

template <class T>
CusparseSpgemmReuse<T>::CusparseSpgemmReuse(const CusparseHandle& handle, const DeviceCsr<T>& a, const DeviceCsr<T>& b,
                                            CUstream stream)
    : handle_(handle) {
  if (a.cols() != b.rows())
    throw InvalidInputError("cuSPARSE SpGEMM reuse: A is " + std::to_string(a.rows()) + "x" + std::to_string(a.cols()) +
                            " but B is " + std::to_string(b.rows()) + "x" + std::to_string(b.cols()));
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const cusparseSpGEMMAlg_t alg = CUSPARSE_SPGEMM_ALG1;
  handle.bind(stream);
  a_ = make_csr_descriptor(a, a.values().ptr());
  b_ = make_csr_descriptor(b, b.values().ptr());
  cusparseSpMatDescr_t c_descriptor = nullptr;
  SPARSEJIT_CUSPARSE(cusparseCreateCsr, &c_descriptor, a.rows(), b.cols(), 0, nullptr, nullptr, nullptr, CUSPARSE_INDEX_32I,
                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, cuda_data_type<T>::value);
  c_ = SpMatDescriptor(c_descriptor);
  cusparseSpGEMMDescr_t spgemm_descriptor = nullptr;
  SPARSEJIT_CUSPARSE(cusparseSpGEMM_createDescr, &spgemm_descriptor);
  spgemm_.reset(spgemm_descriptor);
  const auto buffer = [&](std::size_t bytes) { return DeviceBuffer(handle.context(), std::max<std::size_t>(bytes, 1)); };
  std::size_t bytes1 = 0;
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_workEstimation, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(),
                     &bytes1, nullptr);
  const DeviceBuffer buffer1 = buffer(bytes1);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_workEstimation, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(),
                     &bytes1, raw(buffer1));
  std::size_t bytes2 = 0, bytes3 = 0, bytes4 = 0;
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_nnz, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes2,
                     nullptr, &bytes3, nullptr, &bytes4, nullptr);
  const DeviceBuffer buffer2 = buffer(bytes2), buffer3 = buffer(bytes3);
  kept_nnz_buffer_ = buffer(bytes4);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_nnz, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes2,
                     raw(buffer2), &bytes3, raw(buffer3), &bytes4, raw(kept_nnz_buffer_));
  int64_t rows = 0, cols = 0;
  SPARSEJIT_CUSPARSE(cusparseSpMatGetSize, c_.get(), &rows, &cols, &nnz_);
  row_ptr_ = DeviceBuffer(handle.context(), (std::size_t(a.rows()) + 1) * sizeof(int32_t));
  col_idx_ = DeviceBuffer(handle.context(), std::size_t(nnz_) * sizeof(int32_t));
  values_ = DeviceBuffer(handle.context(), std::size_t(nnz_) * sizeof(T));
  SPARSEJIT_CUSPARSE(cusparseCsrSetPointers, c_.get(), raw(row_ptr_), raw(col_idx_), raw(values_));
  std::size_t bytes5 = 0;
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_copy, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes5,
                     nullptr);
  kept_copy_buffer_ = buffer(bytes5);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_copy, handle.get(), op, op, a_.get(), b_.get(), c_.get(), alg, spgemm_.get(), &bytes5,
                     raw(kept_copy_buffer_));
  SPARSEJIT_CU(cuStreamSynchronize, stream);  // buffers 1 to 3 are freed on return
}

template <class T>
void CusparseSpgemmReuse<T>::compute(CUstream stream) const {
  const cusparseOperation_t op = CUSPARSE_OPERATION_NON_TRANSPOSE;
  const T alpha = 1, beta = 0;
  handle_.bind(stream);
  SPARSEJIT_CUSPARSE(cusparseSpGEMMreuse_compute, handle_.get(), op, op, &alpha, a_.get(), b_.get(), &beta, c_.get(),
                     cuda_data_type<T>::value, CUSPARSE_SPGEMM_ALG1, spgemm_.get());
}

template <class T>
std::vector<T> CusparseSpgemmReuse<T>::values(CUstream stream) const {
  SPARSEJIT_CU(cuStreamSynchronize, stream);
  return values_.download_as<T>(std::size_t(nnz_));
}

template class CusparseSpgemmReuse<float>;
template class CusparseSpgemmReuse<double>;

template CusparseSpgemmResult cusparse_spgemm<float>(const CusparseHandle&, const DeviceCsr<float>&, const DeviceCsr<float>&,
                                                     SpgemmAlgorithm, CUstream, const OutputArray&);
template CusparseSpgemmResult cusparse_spgemm<double>(const CusparseHandle&, const DeviceCsr<double>&, const DeviceCsr<double>&,
                                                      SpgemmAlgorithm, CUstream, const OutputArray&);

}  // namespace sparsejit::vendor
