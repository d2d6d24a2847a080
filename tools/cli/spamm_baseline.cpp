#include "cli/spamm_baseline.hpp"

#include <vector>

namespace sparsejit::cli {

namespace {

vendor::GemmPrecision class_of(DType dtype, SpammPrecision precision, bool from_f32) {
  if (dtype == DType::F64) return vendor::GemmPrecision::F64;
  switch (precision) {
    case SpammPrecision::Full: return vendor::GemmPrecision::F32;
    case SpammPrecision::TF32: return vendor::GemmPrecision::TF32;
    case SpammPrecision::FP16: return from_f32 ? vendor::GemmPrecision::F32_FAST_F16 : vendor::GemmPrecision::F16;
    case SpammPrecision::BF16: return from_f32 ? vendor::GemmPrecision::F32_FAST_BF16 : vendor::GemmPrecision::BF16;
  }
  return vendor::GemmPrecision::F32;
}

template <class S>
DeviceBuffer upload_as(const Context& context, const Dense<double>& m) {
  return DeviceBuffer::from_host(context, cast<S>(m).data);
}

DeviceBuffer operand(const Context& context, const Dense<double>& m, vendor::GemmPrecision p) {
  switch (p) {
    case vendor::GemmPrecision::F64: return upload_as<double>(context, m);
    case vendor::GemmPrecision::F16: return upload_as<half>(context, m);
    case vendor::GemmPrecision::BF16: return upload_as<bfloat16>(context, m);
    default: return upload_as<float>(context, m);
  }
}

}  // namespace

ClassGemm::ClassGemm(const Context& context, const Dense<double>& a, const Dense<double>& b, DType dtype, SpammPrecision precision,
                     bool from_f32)
    : handle_(context),
      precision_(class_of(dtype, precision, from_f32)),
      a_(operand(context, a, precision_)),
      b_(operand(context, b, precision_)),
      c_(context, std::size_t(a.rows) * std::size_t(b.cols) * (precision_ == vendor::GemmPrecision::F64 ? 8 : 4)) {
  operands_.a = a_.ptr();
  operands_.b = b_.ptr();
  operands_.c = c_.ptr();
  operands_.lda = a.cols;
  operands_.ldb = operands_.ldc = b.cols;
  operands_.m = a.rows;
  operands_.k = a.cols;
  operands_.n = b.cols;
}

void ClassGemm::run(CUstream stream) { vendor::gemm_row_major(handle_, precision_, operands_, stream); }

std::vector<double> ClassGemm::result() const {
  const std::size_t count = std::size_t(operands_.m) * std::size_t(operands_.n);
  if (precision_ == vendor::GemmPrecision::F64) return c_.download_as<double>(count);
  const std::vector<float> values = c_.download_as<float>(count);
  return std::vector<double>(values.begin(), values.end());
}

std::string ClassGemm::name() const { return std::string("cuBLAS ") + vendor::to_string(precision_); }

}  // namespace sparsejit::cli
