// cuSPARSE data-type tags and descriptor helpers shared by the SpMM and SDDMM wrappers.
#pragma once
#include <cusparse.h>

#include "sparsejit/device_matrix.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::vendor {

template <class T> struct cuda_data_type;
template <> struct cuda_data_type<float> { static constexpr cudaDataType value = CUDA_R_32F; };
template <> struct cuda_data_type<double> { static constexpr cudaDataType value = CUDA_R_64F; };

// A CSR descriptor over a handle's pattern and the given values array (its own or an output).
template <class T>
SpMatDescriptor make_csr_descriptor(const DeviceCsr<T>& matrix, CUdeviceptr values) {
  cusparseSpMatDescr_t descriptor = nullptr;
  SPARSEJIT_CUSPARSE(cusparseCreateCsr, &descriptor, matrix.rows(), matrix.cols(), matrix.nnz(),
                     matrix.row_ptr().template as<void>(), matrix.col_idx().template as<void>(),
                     reinterpret_cast<void*>(static_cast<std::uintptr_t>(values)), CUSPARSE_INDEX_32I,
                     CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO, cuda_data_type<T>::value);
  return SpMatDescriptor(descriptor);
}

template <class T>
DnMatDescriptor make_dense_descriptor(const DeviceDense<T>& matrix) {
  cusparseDnMatDescr_t descriptor = nullptr;
  SPARSEJIT_CUSPARSE(cusparseCreateDnMat, &descriptor, matrix.rows(), matrix.cols(), matrix.ld(), matrix.data(),
                     cuda_data_type<T>::value, CUSPARSE_ORDER_ROW);
  return DnMatDescriptor(descriptor);
}

}  // namespace sparsejit::vendor
