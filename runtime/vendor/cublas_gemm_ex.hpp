// cuBLAS GEMM of row-major dense operands in a chosen precision: SpAMM's vendor candidate and
// the benchmark's baseline. C = A·B with A m×k, B k×n, C m×n row-major (computed as
// Cᵀ = Bᵀ·Aᵀ in cuBLAS's column-major view), alpha = 1, beta = 0.
//   F32   SGEMM (CUBLAS_COMPUTE_32F: no TF32), A, B, C f32
//   F64   DGEMM, all f64
//   TF32  f32 operands on TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32), C f32
//   F16   fp16 A and B, f32 accumulation and C (cublasGemmEx, CUBLAS_COMPUTE_32F)
//   BF16  bf16 A and B, likewise
//   F32_FAST_F16, F32_FAST_BF16  f32 A, B and C, cuBLAS converting the operands to fp16/bf16
//         itself (CUBLAS_COMPUTE_32F_FAST_16F / _16BF): the class's GEMM as a caller holding
//         f32 data runs it, conversion included
// The caller holds the handle's lock (RuntimeState::cublas_mutex).
#pragma once
#include <cstdint>

#include "vendor/cublas_gemm.hpp"

namespace sparsejit::vendor {

enum class GemmPrecision { F32, F64, TF32, F16, BF16, F32_FAST_F16, F32_FAST_BF16 };
const char* to_string(GemmPrecision precision);

struct GemmOperands {
  CUdeviceptr a = 0, b = 0, c = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int32_t m = 0, k = 0, n = 0;
};

// InvalidInputError naming the value for a leading dimension below its row length or past
// int32; CudaError from cuBLAS.
void gemm_row_major(CublasHandle& handle, GemmPrecision precision, const GemmOperands& operands, CUstream stream);

}  // namespace sparsejit::vendor
