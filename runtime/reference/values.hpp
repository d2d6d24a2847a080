// Value conversions shared by the CPU references: every product accumulates in double, and
// 16-bit inputs are widened to float once up front (exactly) so the inner loops do not pay a
// conversion call for every use of an element.
#pragma once
#include <cstdint>
#include <type_traits>
#include <vector>

#include "sparsejit/types.hpp"

namespace sparsejit::detail {

template <class T>
constexpr bool is_16bit_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

// The type an inner loop reads: float for the 16-bit formats, T itself otherwise.
template <class T>
using loop_type_t = std::conditional_t<is_16bit_v<T>, float, T>;

// A read-only array of loop_type_t<T>: the caller's storage for float/double, a widened copy
// for half/bfloat16.
template <class T>
class LoopValues {
 public:
  explicit LoopValues(const std::vector<T>& values) {
    if constexpr (is_16bit_v<T>) {
      widened_.assign(values.begin(), values.end());
      data_ = widened_.data();
    } else {
      data_ = values.data();
    }
  }
  LoopValues(const LoopValues&) = delete;
  LoopValues& operator=(const LoopValues&) = delete;
  const loop_type_t<T>* data() const { return data_; }

 private:
  std::vector<loop_type_t<T>> widened_;
  const loop_type_t<T>* data_ = nullptr;
};

// Asks for the first two cache lines of a dense row that a later nonzero will read: rows of B
// picked by column index are random accesses, and hiding their latency doubles throughput on
// scattered patterns.
template <class V>
inline void prefetch_row(const V* row) {
  __builtin_prefetch(row);
  __builtin_prefetch(reinterpret_cast<const char*>(row) + 64);
}

// How many nonzeros ahead to prefetch.
constexpr int32_t kPrefetchDistance = 8;

inline double to_double(double v) { return v; }
inline double to_double(float v) { return v; }
inline double to_double(half v) { return static_cast<float>(v); }
inline double to_double(bfloat16 v) { return static_cast<float>(v); }

// Rounds a double accumulator to the output type (16-bit formats through float).
template <class T>
T from_double(double v) {
  if constexpr (std::is_same_v<T, double>) {
    return v;
  } else {
    return T(static_cast<float>(v));
  }
}

}  // namespace sparsejit::detail
