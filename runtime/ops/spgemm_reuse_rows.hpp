// SpGEMM's numeric phase by rows (plan/spgemm_reuse.hpp times it on the first call;
// templates/spgemm_row_sums.cu computes): Gustavson's row by row product over C's own columns,
// with nothing kept per product. The first spgemm_numeric on a C bins C's rows on the host by
// their entries and products (C's row offsets downloaded once, A's and B's patterns are on the
// host already), uploads the binned row list (4 bytes a row) and runs the kernels once to check
// that every product found its column (one synchronization). Every call then launches one
// kernel a non-empty bin: a group of threads a row gathers the row's products from A and B
// again and adds each into a table of the row's C columns in shared memory, then stores the
// row. No positions, no sort, no allocation, no synchronization.
#pragma once

#include <memory>
#include <string>

#include "jit/kernel_spec.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/device_matrix.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::ops {

// The kernel of templates/spgemm_row_sums.cu for one bin.
jit::KernelSpec row_sums_spec(DType dtype, const plan::RowSumsBin& bin);

// What a C keeps for the numeric phase by rows.
template <class T>
struct RowSums;

// Builds them for c = A·B, computing C's values once on the way, or returns none with the
// reason in `why` (a row of C wider than every table, or a product whose column C's row lacks).
// On success `why` describes them. C's arrays must be complete in the stream's order.
template <class T>
std::shared_ptr<RowSums<T>> build_row_sums(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& operands,
                                           const DeviceCsr<T>& c, const plan::RowSumsPlan& plan, std::string& why);

// C's values into `values` on the operands' stream: a kernel a non-empty bin.
template <class T>
void compute_row_sums(const RowSums<T>& sums, const variants::SpgemmOperands<T>& operands, CUdeviceptr values);

}  // namespace sparsejit::ops
