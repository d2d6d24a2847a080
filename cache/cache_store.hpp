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

// Two kinds of tuning record share one table:
//   Tune      `sparsejit tune`: one candidate measured on one case (params carry
//             plan::kMeasuredOn), timings its one measurement.
//   Measured  a measured selection of the runtime: the shortlist timed for one pattern and
//             problem; variant, params and time_ms are the choice, timings every setting timed.
//             Looked up by device key, fingerprint, plan key and model version (exactly).
enum class RecordKind { Tune, Measured };
const char* to_string(RecordKind kind);  // "tune", "measured"

struct TuningRecord {
  DeviceKey device;
  std::string op;              // "spmm", "sddmm", ...
  std::string feature_bucket;  // the planner's bucket of the matrix features
  std::string variant;         // the kernel variant that was measured (Measured: chosen)
  nlohmann::json params = nlohmann::json::object();
  double time_ms = 0;
  bool checked = false;        // output matched the CPU reference (Measured: not compared, false)
  int64_t created = 0;         // unix ms; 0 means "now" on insert
  RecordKind kind = RecordKind::Tune;
  std::string fingerprint;     // the pattern's fingerprint_hex
  std::string plan_key;        // Measured: the problem as the executor keys its plans
  std::string model_version;   // Measured: the model that priced the shortlist
  nlohmann::json features = nlohmann::json::object();  // the planner's Decision features
  // [{"variant", "params", "ms" (null: did not run), "predicted_ms", "terms"}]
  nlohmann::json timings = nlohmann::json::array();
};

// The columns of tuning_records in the order records are read and written.
inline constexpr const char* kTuningRecordColumns =
    "device_name, compute_capability, driver_version, library_version, multiprocessors, op, feature_bucket, variant, "
    "params_json, time_ms, checked, created, kind, fingerprint, plan_key, model_version, features_json, timings_json";
inline constexpr const char* kModelColumns =
    "name, version, device_name, compute_capability, multiprocessors, driver_version, library_version, json, created";

// The exact key a measured selection is looked up by.
struct MeasuredKey {
  DeviceKey device;
  std::string fingerprint;
  std::string plan_key;
  std::string model_version;
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
  // Tune records for exactly this device key, op and bucket, fastest first.
  std::vector<TuningRecord> find_tuning_records(const DeviceKey& device, const std::string& op,
                                                const std::string& feature_bucket);
  // The newest measured selection stored under exactly this key, or nullopt.
  std::optional<TuningRecord> find_measured_record(const MeasuredKey& key);
  // Every record of both kinds for exactly this device key and op, oldest first.
  std::vector<TuningRecord> device_records(const DeviceKey& device, const std::string& op);
  std::vector<TuningRecord> all_tuning_records();
  // Every measured selection, newest first.
  std::vector<TuningRecord> measured_records();
  // Removes the measured selections `stale` picks, and unreadable ones; returns how many.
  int64_t remove_measured_records(const std::function<bool(const TuningRecord&)>& stale);
  // Rows whose JSON does not parse (or has the wrong shape) are skipped by every lookup,
  // with one warning per store.

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
  // The records `select` returns (columns kTuningColumns), unreadable rows skipped.
  std::vector<TuningRecord> read_records(Statement& select);

  mutable std::mutex mutex_;
  std::optional<std::string> dir_;
  OpenedDatabase db_;
  bool in_memory_ = false;
  bool told_read_only_ = false;
  bool told_unreadable_row_ = false;
};

}  // namespace sparsejit::cache
