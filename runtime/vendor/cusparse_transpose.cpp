#include "vendor/cusparse_transpose.hpp"

#include <algorithm>

#include "cuda/driver_api.hpp"
#include "sparsejit/error.hpp"
#include "vendor/cusparse_types.hpp"

namespace sparsejit::vendor {

template <class T>
TransposedArrays transpose_csr(const CusparseHandle& handle, const DeviceCsr<T>& a, CUstream stream) {
  handle.bind(stream);
  const Context& context = handle.context();
  TransposedArrays t{DeviceBuffer(context, (std::size_t(a.cols()) + 1) * sizeof(int32_t)),
                     DeviceBuffer(context, std::size_t(a.nnz()) * sizeof(int32_t)),
                     DeviceBuffer(context, std::size_t(a.nnz()) * sizeof(T))};
  if (a.nnz() == 0) {  // cuSPARSE wants entries: the offsets of an empty Aᵀ are all zero
    t.row_ptr.fill_bytes_async(0, stream);
    return t;
  }
  const cudaDataType type = cuda_data_type<T>::value;
  const cusparseAction_t action = CUSPARSE_ACTION_NUMERIC;
  const cusparseCsr2CscAlg_t alg = CUSPARSE_CSR2CSC_ALG1;
  std::size_t bytes = 0;
  SPARSEJIT_CUSPARSE(cusparseCsr2cscEx2_bufferSize, handle.get(), a.rows(), a.cols(), int(a.nnz()), a.values().template as<void>(),
                     a.row_ptr().template as<int>(), a.col_idx().template as<int>(), t.values.template as<void>(),
                     t.row_ptr.template as<int>(), t.col_idx.template as<int>(), type, action, CUSPARSE_INDEX_BASE_ZERO, alg,
                     &bytes);
  const DeviceBuffer buffer(context, std::max<std::size_t>(bytes, 1));
  SPARSEJIT_CUSPARSE(cusparseCsr2cscEx2, handle.get(), a.rows(), a.cols(), int(a.nnz()), a.values().template as<void>(),
                     a.row_ptr().template as<int>(), a.col_idx().template as<int>(), t.values.template as<void>(),
                     t.row_ptr.template as<int>(), t.col_idx.template as<int>(), type, action, CUSPARSE_INDEX_BASE_ZERO, alg,
                     buffer.template as<void>());
  SPARSEJIT_CU(cuStreamSynchronize, stream);  // the work buffer is freed on return
  return t;
}

template TransposedArrays transpose_csr<float>(const CusparseHandle&, const DeviceCsr<float>&, CUstream);
template TransposedArrays transpose_csr<double>(const CusparseHandle&, const DeviceCsr<double>&, CUstream);

}  // namespace sparsejit::vendor
