// KernelSpec -> a loaded, launchable kernel in one context: the JIT compiler (memory, SQLite,
// NVRTC) for the cubin, then one module load per cubin per loader.
#pragma once
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda/module.hpp"
#include "jit/compiler.hpp"
#include "jit/kernel_spec.hpp"
#include "sparsejit/decision.hpp"

namespace sparsejit::ops {

struct LoadedKernel {
  cuda::Kernel kernel;
  KernelOrigin origin = KernelOrigin::None;
  double compile_ms = 0;
  double load_ms = 0;  // cache lookup + module load
};

class KernelLoader {
 public:
  explicit KernelLoader(Context context) : context_(std::move(context)) {}
  LoadedKernel load(const jit::KernelSpec& spec);

 private:
  Context context_;
  std::mutex mutex_;
  std::map<std::string, cuda::Kernel> loaded_;  // by cache key
};

// The JIT's answer for `spec` on `sm` without loading it (for explain without a GPU).
jit::CompiledKernel compile_only(const jit::KernelSpec& spec, int sm);
KernelOrigin to_origin(cache::KernelSource source);
// Whether every kernel of `specs` is in the JIT's cache for `sm` (loading them needs no NVRTC).
bool kernels_cached(const std::vector<jit::KernelSpec>& specs, int sm);

}  // namespace sparsejit::ops
