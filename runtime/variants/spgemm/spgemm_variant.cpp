#include "variants/spgemm/spgemm_variant.hpp"

#include <atomic>

#include "ops/runtime_state.hpp"

namespace sparsejit::variants {

namespace {
std::atomic<bool> poison_outputs{false};
}  // namespace

std::string SpgemmVariant::rejected(const SpgemmPlanInputs& in) const {
  const bool supported = in.problem.dtype == DType::F32 || in.problem.dtype == DType::F64;
  return supported ? "" : std::string("value type ") + to_string(in.problem.dtype) + " not supported";
}

void SpgemmVariant::check(const plan::SpgemmProblem&, const plan::DeviceTarget&, const nlohmann::json&) const {}

int64_t output_bytes(int64_t m, int64_t nnz, DType dtype) { return (m + 1) * 4 + nnz * (4 + int64_t(size_of(dtype))); }

WorkspaceFit SpgemmVariant::fit_workspace(const SpgemmPlanInputs& in, const nlohmann::json& params, int64_t) const {
  return {params, workspace_bytes(in, params)};
}

std::vector<jit::KernelSpec> SpgemmVariant::kernel_specs(const Decision&, const plan::SpgemmProblem&) const { return {}; }

DeviceBuffer new_output_array(const Context& context, cuda::ScratchPool* pool, std::size_t bytes, CUstream stream) {
  DeviceBuffer buffer = pool != nullptr ? pool->allocate_buffer(bytes, stream) : DeviceBuffer(context, bytes);
  if (poison_outputs.load(std::memory_order_relaxed) && bytes > 0) buffer.fill_bytes_async(0xFF, stream);
  return buffer;
}

ops::LoadedKernel load_kernel(detail::RuntimeState& rt, Decision& d, const jit::KernelSpec& spec) {
  const ops::LoadedKernel loaded = rt.loader.load(spec);
  if (int(loaded.origin) > int(d.kernel_origin)) d.kernel_origin = loaded.origin;
  d.compile_ms += loaded.compile_ms;
  d.load_ms += loaded.load_ms;
  return loaded;
}

void set_poison_outputs(bool on) { poison_outputs.store(on, std::memory_order_relaxed); }

}  // namespace sparsejit::variants
