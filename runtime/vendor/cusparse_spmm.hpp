// cuSPARSE SpMM as a baseline and dispatch candidate: C = op(A)·B with A a device CSR (int32
// indices), op(A) = A or Aᵀ, B and C row-major dense (CUSPARSE_ORDER_ROW), alpha = 1, beta = 0.
//
// Construction is the prepare step (descriptors, workspace, cusparseSpMM_preprocess), run() is
// the timed call: one cusparseSpMM on the caller's stream, nothing else. The plan keeps pointers
// into A, B and C: they must outlive it, and new values written into them are picked up by the
// next run(). The handle must outlive the plan too. Not thread-safe (see CusparseHandle).
#pragma once
#include <cusparse.h>

#include <cstddef>

#include "sparsejit/device_matrix.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::vendor {

enum class SpmmAlgorithm {
  CsrAlg1,  // CUSPARSE_SPMM_CSR_ALG1
  CsrAlg2,  // CUSPARSE_SPMM_CSR_ALG2
  CsrAlg3,  // CUSPARSE_SPMM_CSR_ALG3
};
const char* to_string(SpmmAlgorithm algorithm);  // "csr_alg1", "csr_alg2", "csr_alg3"

// T is float or double.
template <class T>
class CusparseSpmm {
 public:
  // Shapes: op(A) is m×n_inner; B is n_inner×k; C is m×k. InvalidInputError on a mismatch,
  // UnsupportedError when cuSPARSE rejects the combination (CUSPARSE_STATUS_NOT_SUPPORTED).
  CusparseSpmm(const CusparseHandle& handle, const DeviceCsr<T>& a, bool transpose_a, const DeviceDense<T>& b,
               DeviceDense<T>& c, SpmmAlgorithm algorithm, CUstream stream);
  CusparseSpmm(const CusparseSpmm&) = delete;
  CusparseSpmm& operator=(const CusparseSpmm&) = delete;

  void run(CUstream stream);
  std::size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  const CusparseHandle& handle_;
  cusparseOperation_t op_a_;
  cusparseSpMMAlg_t algorithm_;
  SpMatDescriptor a_;
  DnMatDescriptor b_;
  DnMatDescriptor c_;
  DeviceBuffer workspace_;
};

}  // namespace sparsejit::vendor
