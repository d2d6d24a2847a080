// The baseline `run` and `bench` time SpAMM against: cuBLAS's GEMM of the same precision class
// (SGEMM, DGEMM, TF32 GEMM, HGEMM or BF16 GEMM with f32 accumulation) on the whole product,
// its operands converted on the host beforehand, so only the GEMM is timed (cuSpAMM's
// baseline). Our own path converts f32 inputs to fp16/bf16 inside the call, and that is timed.
#pragma once
#include <string>
#include <vector>

#include "sparsejit/device.hpp"
#include "sparsejit/matrix.hpp"
#include "sparsejit/spamm.hpp"
#include "vendor/cublas_gemm_ex.hpp"

namespace sparsejit::cli {

class ClassGemm {
 public:
  // from_f32: for fp16 and bf16, cuBLAS is given the f32 operands and converts them itself
  // (CUBLAS_COMPUTE_32F_FAST_16F/_16BF): the class's GEMM for a caller holding f32 data, as
  // ours is given it. Without it the operands are converted on the host first.
  ClassGemm(const Context& context, const Dense<double>& a, const Dense<double>& b, DType dtype, SpammPrecision precision,
            bool from_f32 = false);
  void run(CUstream stream);
  // e.g. "cuBLAS HGEMM (f32 accumulation)"
  std::string name() const;
  // C of the last run (f64 for DGEMM, else f32), as doubles; waits for the device.
  std::vector<double> result() const;

 private:
  vendor::CublasHandle handle_;
  vendor::GemmPrecision precision_;
  DeviceBuffer a_, b_, c_;
  vendor::GemmOperands operands_;
};

}  // namespace sparsejit::cli
