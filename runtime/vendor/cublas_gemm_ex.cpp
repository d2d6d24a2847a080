#include "vendor/cublas_gemm_ex.hpp"

#include <limits>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::vendor {

namespace {

void check_ld(const char* name, int64_t ld, int32_t cols) {
  if (ld < cols || ld > std::numeric_limits<int>::max() || ld < 1)
    throw InvalidInputError(std::string("gemm_row_major: ") + name + " = " + std::to_string(ld) + " must be in [max(1, " +
                            std::to_string(cols) + "), 2^31-1]");
}

}  // namespace

const char* to_string(GemmPrecision precision) {
  switch (precision) {
    case GemmPrecision::F32: return "SGEMM";
    case GemmPrecision::F64: return "DGEMM";
    case GemmPrecision::TF32: return "TF32 GEMM";
    case GemmPrecision::F16: return "HGEMM (f32 accumulation)";
    case GemmPrecision::BF16: return "BF16 GEMM (f32 accumulation)";
    case GemmPrecision::F32_FAST_F16: return "f32 GEMM on fp16 tensor cores (FAST_16F)";
    case GemmPrecision::F32_FAST_BF16: return "f32 GEMM on bf16 tensor cores (FAST_16BF)";
  }
  return "?";
}

void gemm_row_major(CublasHandle& handle, GemmPrecision precision, const GemmOperands& o, CUstream stream) {
  check_ld("lda", o.lda, o.k);
  check_ld("ldb", o.ldb, o.n);
  check_ld("ldc", o.ldc, o.n);
  if (o.m == 0 || o.n == 0) return;
  handle.bind(stream);
  cudaDataType_t operand_type = CUDA_R_32F, out_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  switch (precision) {
    case GemmPrecision::F32: break;
    case GemmPrecision::F64: operand_type = out_type = CUDA_R_64F; compute = CUBLAS_COMPUTE_64F; break;
    case GemmPrecision::TF32: compute = CUBLAS_COMPUTE_32F_FAST_TF32; break;
    case GemmPrecision::F16: operand_type = CUDA_R_16F; break;
    case GemmPrecision::BF16: operand_type = CUDA_R_16BF; break;
    case GemmPrecision::F32_FAST_F16: compute = CUBLAS_COMPUTE_32F_FAST_16F; break;
    case GemmPrecision::F32_FAST_BF16: compute = CUBLAS_COMPUTE_32F_FAST_16BF; break;
  }
  const float one_f = 1, zero_f = 0;
  const double one_d = 1, zero_d = 0;
  const bool f64 = precision == GemmPrecision::F64;
  const void* one = f64 ? static_cast<const void*>(&one_d) : &one_f;
  const void* zero = f64 ? static_cast<const void*>(&zero_d) : &zero_f;
  // Column-major: Cᵀ (n x m) = Bᵀ (n x k) · Aᵀ (k x m).
  SPARSEJIT_CUBLAS(cublasGemmEx, handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, o.n, o.m, o.k, one, reinterpret_cast<const void*>(o.b),
                   operand_type, int(o.ldb), reinterpret_cast<const void*>(o.a), operand_type, int(o.lda), zero,
                   reinterpret_cast<void*>(o.c), out_type, int(o.ldc), compute, CUBLAS_GEMM_DEFAULT);
}

}  // namespace sparsejit::vendor
