// Steps every op executor shares: the handle's cached features, the plan-cache key of a
// call, and recording how a kernel was obtained in the Decision.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "ops/kernel_loader.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::ops {

// The features of a handle's pattern, measured on first use and cached on the handle.
template <class T>
std::shared_ptr<const Features> cached_features(const DeviceCsr<T>& matrix) {
  return matrix.template get_or_create<Features>(
      "features", [&] { return std::make_shared<Features>(inspect(matrix.host_pattern())); });
}

// Identifies a prepared plan on a matrix handle: everything the planner's answer depends on
// besides the pattern (op, value type, K, transpose, a forced choice and the runtime).
std::string plan_key(Op op, DType dtype, int32_t k, bool transpose, const Options& options, uint64_t runtime_id);

void record_kernel(Decision& decision, const LoadedKernel& loaded);

// Grid size for `work` items at `per_block` items per block; UnsupportedError past the grid limit.
unsigned blocks_for(int64_t work, int64_t per_block);

}  // namespace sparsejit::ops
