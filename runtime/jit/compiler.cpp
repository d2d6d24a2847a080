#include "jit/compiler.hpp"

#include <chrono>

#include "base/sha256.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "jit/render.hpp"
#include "jit/source_dump.hpp"

namespace sparsejit::jit {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// Everything that determines the rendered source and the options, as one string.
std::string spec_identity(const KernelSpec& spec, int sm) {
  std::string id = spec.template_name + '\n' + spec.kernel_name + '\n' + spec.params.dump() + '\n' + std::to_string(sm) +
                   (spec.arch_specific ? "a" : "");
  for (const auto& option : spec.extra_options) id += '\n' + option;
  return id;
}

}  // namespace

Compiler::Compiler(const std::optional<std::string>& cache_dir) : cache_(cache_dir) {}

Compiler::Rendered Compiler::render_and_key(const KernelSpec& spec, int sm) {
  Rendered r;
  r.source = render(spec);
  dump_source_if_requested(spec.template_name, r.source);
  r.key = cache::current_key_context(sm);
  if (spec.arch_specific) r.key.arch = arch_name(sm, true);
  r.key.template_name = spec.template_name;
  r.key.source_sha256 = sha256_hex(r.source);
  r.key.options = options_string(normalize_options(spec.extra_options));
  return r;
}

cache::KernelKey Compiler::key_for(const KernelSpec& spec, int sm) { return render_and_key(spec, sm).key; }

bool Compiler::has_kernel(const KernelSpec& spec, int sm) { return cache_.holds(remembered_key(spec, sm)); }

cache::KernelKey Compiler::remembered_key(const KernelSpec& spec, int sm) {
  const std::string identity = spec_identity(spec, sm);
  {
    std::lock_guard<std::mutex> lock(keys_mutex_);
    if (auto it = keys_.find(identity); it != keys_.end()) return it->second;
  }
  const cache::KernelKey key = render_and_key(spec, sm).key;
  std::lock_guard<std::mutex> lock(keys_mutex_);
  keys_.emplace(identity, key);
  return key;
}

CompiledKernel Compiler::get_kernel(const KernelSpec& spec, int sm) {
  const auto start = std::chrono::steady_clock::now();
  const cache::KernelKey key = remembered_key(spec, sm);
  // The source is only needed to compile: a known key with a cache hit never renders again.
  const auto compile = [&]() {
    const Rendered rendered = render_and_key(spec, sm);
    CompileResult result = compile_to_cubin(rendered.source, spec.template_name, sm, normalize_options(spec.extra_options),
                                            spec.arch_specific);
    return cache::CompiledBinary{std::move(result.cubin), result.compile_ms};
  };
  cache::CacheResult result = cache_.get_or_compile(key, compile);

  CompiledKernel kernel;
  kernel.cubin = std::move(result.cubin);
  const auto named = spec.params.find("kernel_name");
  kernel.kernel_name = named != spec.params.end() && named->is_string() ? named->get<std::string>() : spec.kernel_name;
  kernel.source = result.source;
  kernel.compile_ms = result.compile_ms;
  kernel.load_ms = ms_since(start) - result.compile_ms;
  kernel.key = key;
  return kernel;
}

Compiler& default_compiler() {
  static Compiler compiler(cache::default_cache_dir());
  return compiler;
}

}  // namespace sparsejit::jit
