#include "ops/kernel_loader.hpp"

#include <chrono>

namespace sparsejit::ops {

KernelOrigin to_origin(cache::KernelSource source) {
  switch (source) {
    case cache::KernelSource::Memory: return KernelOrigin::Memory;
    case cache::KernelSource::Disk: return KernelOrigin::Disk;
    case cache::KernelSource::Compiled: return KernelOrigin::Compiled;
  }
  return KernelOrigin::None;
}

jit::CompiledKernel compile_only(const jit::KernelSpec& spec, int sm) {
  return jit::default_compiler().get_kernel(spec, sm);
}

bool kernels_cached(const std::vector<jit::KernelSpec>& specs, int sm) {
  for (const jit::KernelSpec& spec : specs)
    if (!jit::default_compiler().has_kernel(spec, sm)) return false;
  return true;
}

LoadedKernel KernelLoader::load(const jit::KernelSpec& spec) {
  const jit::CompiledKernel compiled = jit::default_compiler().get_kernel(spec, context_.info().sm);
  const std::string key = compiled.key.to_string() + "|" + compiled.kernel_name;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = loaded_.find(key);
  double module_ms = 0;
  if (it == loaded_.end()) {
    const cuda::Module module(context_, std::string(compiled.cubin->begin(), compiled.cubin->end()));
    module_ms = module.load_ms();
    it = loaded_.emplace(key, module.function(compiled.kernel_name)).first;
  }
  return {it->second, to_origin(compiled.source), compiled.compile_ms, compiled.load_ms + module_ms};
}

}  // namespace sparsejit::ops
