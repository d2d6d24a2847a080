// cuSPARSE SDDMM as a baseline: the SAMPLED DOT PRODUCTS of our SDDMM.
//
// Our SDDMM is P = S ∘ (A·Bᵀ): p_e = s_e · dot(A[i,:], B[j,:]) for each entry e = (i, j) of S.
// cuSPARSE computes C = alpha·(op(A)·op(B)) ∘ spy(C) + beta·C, where spy(C) is the PATTERN of C
// (ones), not its values. So this wrapper, run with alpha = 1 and beta = 0, produces
//     out[e] = dot(A[i,:], B[j,:])         (S's values are not read)
// and the caller multiplies by s_e to get P. The class is named for what it computes.
//
// A is M×K row-major, B is N×K row-major (used as op(B) = Bᵀ), S is M×N with int32 indices, out
// holds nnz(S) values in S's CSR order. CUSPARSE_SDDMM_ALG_DEFAULT with preprocess; construction
// prepares, run() is the timed call. The handle, A, B, S and out must outlive the object.
#pragma once
#include <cusparse.h>

#include <cstddef>

#include "sparsejit/device_matrix.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::vendor {

// T is float or double.
template <class T>
class CusparseSampledDots {
 public:
  // InvalidInputError on a shape mismatch or an `out` smaller than nnz(S) values; UnsupportedError
  // when cuSPARSE rejects the combination.
  CusparseSampledDots(const CusparseHandle& handle, const DeviceCsr<T>& pattern, const DeviceDense<T>& a,
                      const DeviceDense<T>& b, DeviceBuffer& out, CUstream stream);

  void run(CUstream stream);
  std::size_t workspace_bytes() const { return workspace_.bytes(); }

 private:
  const CusparseHandle& handle_;
  DnMatDescriptor a_;
  DnMatDescriptor b_;
  SpMatDescriptor c_;
  DeviceBuffer workspace_;
};

}  // namespace sparsejit::vendor
