// The process's handle on the cache database: compiled kernels, tuning records and models.
//
// Lifecycle: the constructor opens database_path(DIR) (see database.hpp: a bad file is moved
// aside; a read-only one serves lookups only, and writes are skipped with one info line). When the directory is unusable, or dir is nullopt (SPARSEJIT_CACHE_DIR=""), the
// store lives in a private in-memory database instead, so callers never branch on it.
// When the disk database fails later, the store warns once and continues in memory: a
// cache failure never fails the caller. Thread-safe; every write is a short BEGIN IMMEDIATE
// transaction and no transaction is held between calls.
#pragma once
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cache/database.hpp"
#include "sparsejit/cache.hpp"

namespace sparsejit::cache {

// What tuning records and models are keyed by; a record for another key is ignored.
struct DeviceKey {
  std::string device_name;     // e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;  // e.g. 90
  int driver_version = 0;      // cuDriverGetVersion, e.g. 13000
  std::string library_version;
};

struct TuningRecord {
  DeviceKey device;
  std::string op;              // "spmm", "sddmm", ...
  std::string feature_bucket;  // the planner's bucket of the matrix features
  std::string variant;         // the kernel variant that was measured
  nlohmann::json params = nlohmann::json::object();
  double time_ms = 0;
  bool checked = false;        // output matched the CPU reference
  int64_t created = 0;         // unix ms; 0 means "now" on insert
};

struct ModelRecord {
  std::string name;
  int version = 0;
  DeviceKey device;
  nlohmann::json json;
  int64_t created = 0;  // unix ms; 0 means "now" on insert
};

struct StoredKernel {
  std::vector<char> cubin;
  double compile_ms = 0;
};

class CacheStore {
 public:
  // dir: the cache directory, or nullopt for memory only.
  explicit CacheStore(const std::optional<std::string>& dir);

  bool on_disk() const;
  // The database is used for lookups only (see database.hpp); writes are skipped.
  bool read_only() const;
  // The database file, or ":memory:".
  std::string path() const;

  // A stored kernel (its hit count and last_used are updated), or nullopt. A stored cubin
  // that fails cubin_problem() is a miss, and is deleted so the recompiled one takes its place.
  std::optional<StoredKernel> find_kernel(const KernelKey& key);
  // Keeps an existing entry for the same key (another process may have stored it first).
  void insert_kernel(const KernelKey& key, const std::vector<char>& cubin, double compile_ms);

  void insert_tuning_record(const TuningRecord& record);
  // Records for exactly this device key, op and bucket, fastest first.
  std::vector<TuningRecord> find_tuning_records(const DeviceKey& device, const std::string& op,
                                                const std::string& feature_bucket);
  std::vector<TuningRecord> all_tuning_records();

  // Replaces the model with the same name and device key.
  void put_model(const ModelRecord& model);
  std::optional<ModelRecord> find_model(const std::string& name, const DeviceKey& device);

  // Runs fn on the connection under the store's lock, with the same fallback as the other
  // calls; used by the management functions. The fallback value is returned when even the
  // in-memory database fails.
  template <typename T>
  T with_connection(const std::function<T(Connection&)>& fn, T fallback) {
    T result = fallback;
    guarded([&](Connection& c) { result = fn(c); });
    return result;
  }

 private:
  // Runs fn; on a database error switches to a fresh disk database (corruption) or to memory
  // (anything else), warns once, and runs fn again there.
  void guarded(const std::function<void(Connection&)>& fn);
  void fall_back(const SqliteError& error);
  // Deletes a kernel whose blob is damaged (not in a read-only cache), saying so at info level.
  void forget_damaged_kernel(Connection& c, const KernelKey& key, const std::string& problem);
  // True for a read-only database, saying so once at info level.
  bool skips_writes();

  mutable std::mutex mutex_;
  std::optional<std::string> dir_;
  OpenedDatabase db_;
  bool in_memory_ = false;
  bool told_read_only_ = false;
};

}  // namespace sparsejit::cache
