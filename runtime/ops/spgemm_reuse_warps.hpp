// SpGEMM's numeric phase by positions a warp a task (plan/spgemm_reuse.hpp takes it for large
// products; templates/spgemm_warp_positions.cu computes, formats/spgemm_warp_tasks.hpp cuts
// the work): the first spgemm_numeric on a C builds, on the host, the warps' tasks and their
// segments, and on the device each product's place in C and each step's schedule (one
// synchronization, to learn that every product found its column); both stay on C's handle.
// Every call then runs one numeric kernel: per product a 2-byte position, a value of B and a
// plain add in the warp's own sums in shared memory (atomic adds only for the rows cut into
// parts), no allocation and no synchronization.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "jit/kernel_spec.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/device_matrix.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::ops {

// The kernel of one pass ("build" or "numeric") of templates/spgemm_warp_positions.cu.
jit::KernelSpec warp_positions_spec(const char* pass, DType dtype, const plan::WarpTaskPlan& plan);

// What a C keeps for the numeric phase a warp a task.
template <class T>
struct WarpPositions;

// Builds them (work list, positions, schedules) for c = A·B of `products` products (the
// features' count), or returns none with the reason
// in `why` (they do not fit the memory after all, or a product's column is not in C's row).
// On success `why` describes them.
template <class T>
std::shared_ptr<WarpPositions<T>> build_warp_positions(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& operands,
                                                       const DeviceCsr<T>& c, const plan::WarpTaskPlan& plan, int64_t products,
                                                       std::optional<int64_t> memory_limit, std::string& why);

// C's values into `values` on the operands' stream.
template <class T>
void compute_warp_positions(const WarpPositions<T>& positions, const variants::SpgemmOperands<T>& operands, CUdeviceptr values);

}  // namespace sparsejit::ops
