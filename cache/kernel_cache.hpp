// Compiled kernels by key: a memory layer in front of the CacheStore, with one compile per
// key in flight per process.
//
// get_or_compile, in order:
//   1. memory (this process)                          -> KernelSource::Memory
//   2. a compile of the same key already in flight    -> wait for it, KernelSource::Memory
//   3. the database (disk, or memory-only store)      -> KernelSource::Disk
//   4. compile() outside any lock or transaction, then INSERT OR IGNORE
//                                                     -> KernelSource::Compiled
// An exception from compile() reaches this caller and every thread waiting on the same key;
// nothing is cached for it. Database failures are absorbed by the CacheStore.
#pragma once
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_store.hpp"
#include "sparsejit/cache.hpp"

namespace sparsejit::cache {

struct CompiledBinary {
  std::vector<char> cubin;
  double compile_ms = 0;
};

struct CacheResult {
  std::shared_ptr<const std::vector<char>> cubin;
  KernelSource source = KernelSource::Compiled;
  double compile_ms = 0;  // time compile() took in this call (0 unless Compiled)
  double load_ms = 0;     // time spent looking up memory, waiting, and reading the database
};

class KernelCache {
 public:
  // dir: cache directory, or nullopt for memory only (see CacheStore).
  explicit KernelCache(const std::optional<std::string>& dir);

  CacheResult get_or_compile(const KernelKey& key, const std::function<CompiledBinary()>& compile);
  // Whether get_or_compile would find `key` without compiling: in memory, being compiled, or in
  // the database (then read into memory, so the call that follows is a memory hit).
  bool holds(const KernelKey& key);

  CacheStore& store() { return store_; }
  size_t memory_entries() const;

 private:
  using Binary = std::shared_ptr<const std::vector<char>>;
  // Steps 3 and 4 for the thread that owns the key's in-flight slot.
  Binary load_or_compile(const KernelKey& key, const std::function<CompiledBinary()>& compile,
                         CacheResult& result);

  CacheStore store_;
  mutable std::mutex mutex_;
  std::map<KernelKey, Binary> memory_;
  std::map<KernelKey, std::shared_future<Binary>> in_flight_;
};

}  // namespace sparsejit::cache
