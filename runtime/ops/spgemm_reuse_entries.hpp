// SpGEMM's numeric phase by entries (plan/spgemm_reuse.hpp takes it for small products;
// templates/spgemm_entry_sums.cu computes, formats/spgemm_entry_products.hpp lists the work):
// the first spgemm_numeric on a C lists, on the device, every product under the C entry it
// lands on and cuts the list into warp ranges; both stay on C's handle. Every call then runs one
// kernel: per product two indices and two gathered values, each entry summed by a segmented
// scan in registers and stored once, no shared memory, no zeroing, no synchronization.
#pragma once

#include <memory>
#include <string>

#include "jit/kernel_spec.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/device_matrix.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::ops {

// The numeric kernel of templates/spgemm_entry_sums.cu for a plan.
jit::KernelSpec entry_sums_spec(DType dtype, const plan::EntrySumsPlan& plan);

// What a C keeps for the numeric phase by entries.
template <class T>
struct EntrySums;

// Builds them (product lists, ranges, the parts' sums) for c = A·B of `products` products on
// the operands' stream, with one synchronization (the plan has seen that they fit, the build's
// scratch included), or returns none with the reason in `why` (C is not A·B's pattern). On
// success `why` describes them. C's arrays must be complete in the stream's order
// (DeviceCsr::order_after_producer).
template <class T>
std::shared_ptr<EntrySums<T>> build_entry_sums(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& operands,
                                               const DeviceCsr<T>& c, const plan::EntrySumsPlan& plan, int64_t products,
                                               std::string& why);

// C's values into `values` on the operands' stream: one kernel launch.
template <class T>
void compute_entry_sums(const EntrySums<T>& sums, const variants::SpgemmOperands<T>& operands, CUdeviceptr values);

}  // namespace sparsejit::ops
