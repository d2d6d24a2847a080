// Value types: float, double and the two 16-bit formats (stored as raw bits on the host,
// converted through float with round-to-nearest-even), plus the DType tag used by plans.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>

namespace sparsejit {

namespace detail {
inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }
}  // namespace detail

// IEEE binary16, host storage only (kernels use cuda_fp16's __half, same bits).
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a built-in float type
  operator float() const { return to_float(bits); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// bfloat16: the upper 16 bits of a float, rounded to nearest even.
struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  bfloat16(float f) : bits(from_float(f)) {}  // NOLINT: implicit like a built-in float type
  operator float() const { return detail::bits_float(uint32_t(bits) << 16); }
  static uint16_t from_float(float f) {
    uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return uint16_t(u >> 16);
  }
};

enum class DType { F16, BF16, F32, F64 };

const char* to_string(DType dtype);              // "f16", "bf16", "f32", "f64"
DType parse_dtype(const std::string& text);      // throws InvalidInputError naming the text
std::size_t size_of(DType dtype);
const char* cuda_type_name(DType dtype);         // "__half", "__nv_bfloat16", "float", "double"

template <class T> struct dtype_of;
template <> struct dtype_of<half> { static constexpr DType value = DType::F16; };
template <> struct dtype_of<bfloat16> { static constexpr DType value = DType::BF16; };
template <> struct dtype_of<float> { static constexpr DType value = DType::F32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::F64; };

}  // namespace sparsejit
