// The JIT kernels of the SpMM variants: a Decision's parameters -> KernelSpecs (the executor
// loads them, explain compiles them, the template tests compile every one of them).
#pragma once
#include <vector>

#include "jit/kernel_spec.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/types.hpp"

namespace sparsejit::ops {

// spmm_csr_rowwarp.cu for a csr_rowwarp decision.
jit::KernelSpec rowwarp_spec(const nlohmann::json& params, DType dtype);
// spmm_rs_light.cu (A·B) or spmm_rs_light_t.cu (Aᵀ·B) for a csr_vector or rs decision.
jit::KernelSpec light_spec(const nlohmann::json& params, DType dtype, bool transpose);
// spmm_rs_heavy.cu (A·B) or spmm_rs_heavy_t.cu (Aᵀ·B) for an rs decision.
jit::KernelSpec heavy_spec(const nlohmann::json& params, DType dtype, bool transpose);
// spmm_csr_merge.cu (A·B) or spmm_csr_merge_t.cu (Aᵀ·B) for a csr_merge decision.
jit::KernelSpec merge_spec(const nlohmann::json& params, DType dtype, bool transpose);
// spmm_csr_rowsplit.cu (A·B only) for a csr_rowsplit decision.
jit::KernelSpec rowsplit_spec(const nlohmann::json& params, DType dtype);
// Dynamic shared memory of the heavy kernel: panel_width rows of one K slice.
unsigned heavy_shared_bytes(const nlohmann::json& params, DType dtype);
// Columns of C one block of the light / heavy / merge / rowsplit kernel covers (its gridDim.y
// is ceil(K / this)).
int light_slice(const nlohmann::json& params);
int heavy_slice(const nlohmann::json& params);
int merge_slice(const nlohmann::json& params);
int rowsplit_slice(const nlohmann::json& params);

// Every kernel the decision's variant launches (none for cusparse).
std::vector<jit::KernelSpec> spmm_kernel_specs(const Decision& decision, DType dtype, bool transpose);

}  // namespace sparsejit::ops
