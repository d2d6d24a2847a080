#include "cache/kernel_cache.hpp"

#include <chrono>

namespace sparsejit::cache {
namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

KernelCache::KernelCache(const std::optional<std::string>& dir) : store_(dir) {}

size_t KernelCache::memory_entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return memory_.size();
}

bool KernelCache::holds(const KernelKey& key) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (memory_.count(key) != 0 || in_flight_.count(key) != 0) return true;
  }
  std::optional<StoredKernel> stored = store_.find_kernel(key);
  if (!stored) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  memory_.emplace(key, std::make_shared<const std::vector<char>>(std::move(stored->cubin)));
  return true;
}

CacheResult KernelCache::get_or_compile(const KernelKey& key, const std::function<CompiledBinary()>& compile) {
  const auto start = std::chrono::steady_clock::now();
  CacheResult result;
  std::promise<Binary> promise;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (auto hit = memory_.find(key); hit != memory_.end()) {
      result.cubin = hit->second;
      result.source = KernelSource::Memory;
      result.load_ms = ms_since(start);
      return result;
    }
    if (auto pending = in_flight_.find(key); pending != in_flight_.end()) {
      std::shared_future<Binary> future = pending->second;
      lock.unlock();
      result.cubin = future.get();  // rethrows the compile error of the owner
      result.source = KernelSource::Memory;
      result.load_ms = ms_since(start);
      return result;
    }
    in_flight_.emplace(key, promise.get_future().share());
  }

  // This thread owns the key now; whatever happens, waiters must be released.
  try {
    Binary binary = load_or_compile(key, compile, result);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      memory_.emplace(key, binary);
      in_flight_.erase(key);
    }
    promise.set_value(binary);
    result.cubin = binary;
  } catch (...) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      in_flight_.erase(key);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
  result.load_ms = ms_since(start) - result.compile_ms;
  return result;
}

KernelCache::Binary KernelCache::load_or_compile(const KernelKey& key, const std::function<CompiledBinary()>& compile,
                                                 CacheResult& result) {
  if (auto stored = store_.find_kernel(key)) {
    result.source = KernelSource::Disk;
    return std::make_shared<const std::vector<char>>(std::move(stored->cubin));
  }
  const auto start = std::chrono::steady_clock::now();
  CompiledBinary compiled = compile();
  result.compile_ms = compiled.compile_ms > 0 ? compiled.compile_ms : ms_since(start);
  result.source = KernelSource::Compiled;
  store_.insert_kernel(key, compiled.cubin, result.compile_ms);
  return std::make_shared<const std::vector<char>>(std::move(compiled.cubin));
}

}  // namespace sparsejit::cache
