// SpGEMM's numeric phase by positions (plan/spgemm_reuse.hpp decides, templates/
// spgemm_positions.cu computes, formats/spgemm_positions.hpp cuts the tasks): the first
// spgemm_numeric on a C builds, on the host, the task list and each entry of A's first product
// number, and on the device each product's place in C (one synchronization, to learn that
// every product found its column); both stay on C's handle for C's life. Every call then zeroes
// the rows split over tasks (when there are any) and runs one numeric kernel: per product a
// 2- or 4-byte position, a value of B and an atomic add in shared memory, no hashing, no sort,
// no allocation and no synchronization. That is the kernel of blocks sharing a task; the plan
// takes entries for small products (ops/spgemm_reuse_entries.hpp) and a warp a task for large
// ones (ops/spgemm_reuse_warps.hpp), and this kernel where entries do not fit the memory.
#pragma once

#include <optional>
#include <string>

#include "jit/kernel_spec.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/device_matrix.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/options.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::ops {

// The kernel of one pass ("build", "numeric" or "zero") of templates/spgemm_positions.cu for a
// plan: 4-byte positions when long_positions (a task of more than 65536 C entries), else
// 2-byte; the blocks of wide rows (the plan's wide_block_threads and wide_entries) when
// wide_rows, else its block_threads and shared_entries.
jit::KernelSpec positions_spec(const char* pass, DType dtype, bool long_positions, bool wide_rows, const plan::SpgemmReusePlan& plan);

// Computes c's values for the current values of A and B by positions and returns true, or
// returns false when the plan keeps the variant's recompute (why says which and why; the
// caller then runs it). With Options::replay_launches the call's kernels are one replay of a
// graph kept with the positions, and launched_as_graph says so. c's pattern is A·B's (the caller checked its tag). The build's faults
// are CudaErrors; a product whose column is not in C's row (C not sorted) declines positions
// for this C, with the reason.
template <class T>
bool recompute_by_positions(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& operands, const DeviceCsr<T>& c,
                            const SpgemmFeatures& features, const Options& options, std::string& why, bool& launched_as_graph);

}  // namespace sparsejit::ops
