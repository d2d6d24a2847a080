// run and bench build their dense operands on the host and then on the GPU: sizes the GPU
// cannot hold are refused first, naming them, instead of filling host memory for a call that
// must fail (or being killed for it).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <utility>

#include "sparsejit/device.hpp"
#include "sparsejit/types.hpp"

namespace sparsejit::cli {

// The planner's stated ranges (plan::check_dense_operands), then the dense operands (each
// rows x k of dtype) plus `sparse_bytes` against the device's memory. InvalidInputError past
// the ranges, UnsupportedError naming the bytes when they exceed the device's.
void check_operands_fit(const DeviceInfo& device, const char* op, int64_t k, DType dtype,
                        std::initializer_list<std::pair<const char*, int64_t>> operands, int64_t sparse_bytes);

}  // namespace sparsejit::cli
