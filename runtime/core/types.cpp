#include "sparsejit/types.hpp"

#include "sparsejit/error.hpp"

namespace sparsejit {

uint16_t half::from_float(float f) {
  const uint32_t u = detail::float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return uint16_t(sign | 0x7e00u);             // NaN
  if (abs >= 0x477ff000u) return uint16_t(sign | 0x7c00u);            // overflow -> Inf
  if (abs < 0x38800000u) {                                            // subnormal or zero
    if (abs < 0x33000000u) return sign;                               // rounds to zero
    const uint32_t mant = (abs & 0x007fffffu) | 0x00800000u;
    const int shift = 126 - int(abs >> 23);                           // 14..24
    const uint32_t kept = mant >> shift;
    const uint32_t rest = mant & ((1u << shift) - 1u);
    const uint32_t halfway = 1u << (shift - 1);
    const uint32_t rounded = kept + ((rest > halfway || (rest == halfway && (kept & 1u))) ? 1u : 0u);
    return uint16_t(sign | rounded);
  }
  uint32_t v = abs - 0x38000000u;                                     // rebias 127 -> 15
  v += 0x0fffu + ((v >> 13) & 1u);                                    // round to nearest even
  return uint16_t(sign | (v >> 13));
}

float half::to_float(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return detail::bits_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return detail::bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return detail::bits_float(sign);
  int e = -1;                                                          // normalize subnormal
  do { ++e; mant <<= 1; } while ((mant & 0x400u) == 0);
  return detail::bits_float(sign | (uint32_t(112 - e) << 23) | ((mant & 0x3ffu) << 13));
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F32: return "f32";
    case DType::F64: return "f64";
  }
  return "?";
}

DType parse_dtype(const std::string& text) {
  if (text == "f16" || text == "fp16" || text == "half") return DType::F16;
  if (text == "bf16" || text == "bfloat16") return DType::BF16;
  if (text == "f32" || text == "fp32" || text == "float") return DType::F32;
  if (text == "f64" || text == "fp64" || text == "double") return DType::F64;
  throw InvalidInputError("unknown value type '" + text + "' (expected f16, bf16, f32 or f64)");
}

std::size_t size_of(DType dtype) {
  switch (dtype) {
    case DType::F16: case DType::BF16: return 2;
    case DType::F32: return 4;
    case DType::F64: return 8;
  }
  return 0;
}

const char* cuda_type_name(DType dtype) {
  switch (dtype) {
    case DType::F16: return "__half";
    case DType::BF16: return "__nv_bfloat16";
    case DType::F32: return "float";
    case DType::F64: return "double";
  }
  return "?";
}

}  // namespace sparsejit
