// The JIT facade: KernelSpec + sm -> CUBIN, through render, key, memory, SQLite and NVRTC.
//
//   jit::Compiler& compiler = jit::default_compiler();
//   jit::CompiledKernel k = compiler.get_kernel(spec, 90);
//   // k.cubin -> cuModuleLoadData; k.kernel_name -> cuModuleGetFunction;
//   // k.source, k.compile_ms, k.load_ms, k.key -> the plan's Decision record
//
// Thread-safe. A spec seen before by this Compiler skips rendering (the key is remembered
// per spec and sm). Compile errors (CompileError) and bad specs (InvalidInputError) reach
// the caller; cache failures never do.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/kernel_cache.hpp"
#include "jit/kernel_spec.hpp"
#include "sparsejit/cache.hpp"

namespace sparsejit::jit {

struct CompiledKernel {
  std::shared_ptr<const std::vector<char>> cubin;  // ELF image for exactly key.arch
  std::string kernel_name;                         // entry point to look up in the module
  cache::KernelSource source = cache::KernelSource::Compiled;
  double compile_ms = 0;  // NVRTC time in this call (0 unless source == Compiled)
  double load_ms = 0;     // render + lookup time (memory, waiting, or database)
  cache::KernelKey key;
};

class Compiler {
 public:
  // cache_dir: the cache directory; nullopt for memory only.
  explicit Compiler(const std::optional<std::string>& cache_dir);

  CompiledKernel get_kernel(const KernelSpec& spec, int sm);

  // Whether get_kernel would find the kernel without NVRTC (KernelCache::holds).
  bool has_kernel(const KernelSpec& spec, int sm);

  // The key spec would have for sm (renders the template; compiles nothing).
  cache::KernelKey key_for(const KernelSpec& spec, int sm);

  cache::KernelCache& cache() { return cache_; }

 private:
  struct Rendered {
    cache::KernelKey key;
    std::string source;
  };
  Rendered render_and_key(const KernelSpec& spec, int sm);
  // The key of spec for sm, rendered once per spec identity.
  cache::KernelKey remembered_key(const KernelSpec& spec, int sm);

  cache::KernelCache cache_;
  std::mutex keys_mutex_;
  std::map<std::string, cache::KernelKey> keys_;  // spec identity + sm -> key
};

// The process-wide Compiler on cache::default_cache_dir(), created on first use.
Compiler& default_compiler();

}  // namespace sparsejit::jit
