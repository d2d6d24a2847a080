#include "cache/cache_store.hpp"

#include <chrono>

#include "base/log.hpp"
#include "cache/cubin_check.hpp"

namespace sparsejit::cache {
namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Binds the seven key columns to parameters first..first+6, in table order.
void bind_key(Statement& statement, int first, const KernelKey& key) {
  statement.bind(first, int64_t(key.schema_version))
      .bind(first + 1, key.library_version)
      .bind(first + 2, key.template_name)
      .bind(first + 3, key.source_sha256)
      .bind(first + 4, key.options)
      .bind(first + 5, key.arch)
      .bind(first + 6, key.nvrtc_version);
}

constexpr const char* kKeyMatch =
    "schema_version = ?1 AND library_version = ?2 AND template_name = ?3 AND source_sha256 = ?4 AND "
    "options = ?5 AND arch = ?6 AND nvrtc_version = ?7";

constexpr const char* kDeviceMatch =
    "device_name = ?1 AND compute_capability = ?2 AND driver_version = ?3 AND library_version = ?4";

void bind_device(Statement& statement, const DeviceKey& device) {
  statement.bind(1, device.device_name)
      .bind(2, int64_t(device.compute_capability))
      .bind(3, int64_t(device.driver_version))
      .bind(4, device.library_version);
}

constexpr const char* kTuningColumns =
    "device_name, compute_capability, driver_version, library_version, op, feature_bucket, variant, "
    "params_json, time_ms, checked, created";

TuningRecord read_tuning_record(const Statement& row) {
  TuningRecord r;
  r.device = {row.column_text(0), int(row.column_int(1)), int(row.column_int(2)), row.column_text(3)};
  r.op = row.column_text(4);
  r.feature_bucket = row.column_text(5);
  r.variant = row.column_text(6);
  r.params = nlohmann::json::parse(row.column_text(7), nullptr, /*allow_exceptions=*/false);
  r.time_ms = row.column_double(8);
  r.checked = row.column_int(9) != 0;
  r.created = row.column_int(10);
  return r;
}

}  // namespace

CacheStore::CacheStore(const std::optional<std::string>& dir) : dir_(dir) {
  if (dir_) {
    try {
      db_ = open_cache_database(*dir_);
      return;
    } catch (const Error& e) {
      log(LogLevel::Warn, std::string("kernel cache disabled for this process, using memory only: ") + e.what());
    }
  }
  db_ = open_memory_database();
  in_memory_ = true;
}

bool CacheStore::on_disk() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !in_memory_;
}

bool CacheStore::read_only() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return db_.read_only;
}

std::string CacheStore::path() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return db_.connection->path();
}

void CacheStore::fall_back(const SqliteError& error) {
  if (in_memory_) {
    log(LogLevel::Warn, std::string("in-memory kernel cache failed: ") + error.what());
    return;
  }
  const std::string path = db_.connection->path();
  if (error.is_corruption()) {
    const FileId file = db_.file;
    db_.connection.reset();
    move_aside(path, file, error.what());
    try {
      db_ = open_cache_database(*dir_);
      return;
    } catch (const Error& e) {
      log(LogLevel::Warn, std::string("kernel cache disabled for this process, using memory only: ") + e.what());
    }
  } else {
    log(LogLevel::Warn, "kernel cache " + path + " failed (" + error.what() + "); using memory only from now on");
  }
  db_ = open_memory_database();
  in_memory_ = true;
}

void CacheStore::guarded(const std::function<void(Connection&)>& fn) {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    fn(*db_.connection);
    return;
  } catch (const SqliteError& e) {
    // Waiting out another process's long write is not a reason to give up the database.
    if (e.is_busy()) {
      log(LogLevel::Info, std::string("kernel cache busy, skipping: ") + e.what());
      return;
    }
    fall_back(e);
  }
  try {
    fn(*db_.connection);
  } catch (const SqliteError& e) {
    log(LogLevel::Warn, std::string("kernel cache operation skipped: ") + e.what());
  }
}

std::optional<StoredKernel> CacheStore::find_kernel(const KernelKey& key) {
  std::optional<StoredKernel> found;
  guarded([&](Connection& c) {
    found.reset();
    auto select = c.prepare(std::string("SELECT cubin, compile_ms FROM kernels WHERE ") + kKeyMatch);
    bind_key(select, 1, key);
    if (!select.step()) return;
    found = StoredKernel{select.column_blob(0), select.column_double(1)};
    if (const auto problem = cubin_problem(found->cubin)) {
      // A damaged blob is a miss: the caller compiles again and stores the fresh binary.
      found.reset();
      forget_damaged_kernel(c, key, *problem);
      return;
    }
    if (db_.read_only) return;  // hits and last_used are bookkeeping a read-only cache skips
    try {
      WriteTransaction transaction(c);
      auto touch = c.prepare(std::string("UPDATE kernels SET hits = hits + 1, last_used = ?8 WHERE ") + kKeyMatch);
      bind_key(touch, 1, key);
      touch.bind(8, now_ms()).step();
      transaction.commit();
    } catch (const SqliteError& e) {
      // The hit count is bookkeeping; the kernel itself was found. Only damage is worth acting
      // on: a busy, full or read-only database must not turn a hit into a recompile.
      if (e.is_corruption()) throw;
    }
  });
  return found;
}

void CacheStore::forget_damaged_kernel(Connection& c, const KernelKey& key, const std::string& problem) {
  log(LogLevel::Info, "kernel cache " + c.path() + ": " + problem + " for " + key.to_string() + "; compiling it again");
  if (db_.read_only) return;
  WriteTransaction transaction(c);
  auto remove = c.prepare(std::string("DELETE FROM kernels WHERE ") + kKeyMatch);
  bind_key(remove, 1, key);
  remove.step();
  transaction.commit();
}

bool CacheStore::skips_writes() {
  if (!db_.read_only) return false;
  if (!told_read_only_) {
    log(LogLevel::Info, "kernel cache " + db_.connection->path() +
                            " is read-only: used for lookups; what this process compiles or measures is not stored");
    told_read_only_ = true;
  }
  return true;
}

void CacheStore::insert_kernel(const KernelKey& key, const std::vector<char>& cubin, double compile_ms) {
  guarded([&](Connection& c) {
    if (skips_writes()) return;
    WriteTransaction transaction(c);
    auto insert = c.prepare(
        "INSERT OR IGNORE INTO kernels (schema_version, library_version, template_name, source_sha256, options, "
        "arch, nvrtc_version, cubin, compile_ms, created, last_used, hits) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, 0)");
    bind_key(insert, 1, key);
    insert.bind_blob(8, cubin).bind(9, compile_ms).bind(10, now_ms()).step();
    transaction.commit();
  });
}

void CacheStore::insert_tuning_record(const TuningRecord& record) {
  guarded([&](Connection& c) {
    if (skips_writes()) return;
    WriteTransaction transaction(c);
    auto insert = c.prepare(std::string("INSERT INTO tuning_records (") + kTuningColumns +
                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
    bind_device(insert, record.device);
    insert.bind(5, record.op)
        .bind(6, record.feature_bucket)
        .bind(7, record.variant)
        .bind(8, record.params.dump())
        .bind(9, record.time_ms)
        .bind(10, int64_t(record.checked ? 1 : 0))
        .bind(11, record.created != 0 ? record.created : now_ms())
        .step();
    transaction.commit();
  });
}

std::vector<TuningRecord> CacheStore::find_tuning_records(const DeviceKey& device, const std::string& op,
                                                          const std::string& feature_bucket) {
  std::vector<TuningRecord> records;
  guarded([&](Connection& c) {
    records.clear();
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns + " FROM tuning_records WHERE " + kDeviceMatch +
                            " AND op = ?5 AND feature_bucket = ?6 ORDER BY time_ms, variant, id");
    bind_device(select, device);
    select.bind(5, op).bind(6, feature_bucket);
    while (select.step()) records.push_back(read_tuning_record(select));
  });
  return records;
}

std::vector<TuningRecord> CacheStore::all_tuning_records() {
  std::vector<TuningRecord> records;
  guarded([&](Connection& c) {
    records.clear();
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns + " FROM tuning_records ORDER BY id");
    while (select.step()) records.push_back(read_tuning_record(select));
  });
  return records;
}

void CacheStore::put_model(const ModelRecord& model) {
  guarded([&](Connection& c) {
    if (skips_writes()) return;
    WriteTransaction transaction(c);
    auto insert = c.prepare(
        "INSERT OR REPLACE INTO models (device_name, compute_capability, driver_version, library_version, name, "
        "version, json, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    bind_device(insert, model.device);
    insert.bind(5, model.name)
        .bind(6, int64_t(model.version))
        .bind(7, model.json.dump())
        .bind(8, model.created != 0 ? model.created : now_ms())
        .step();
    transaction.commit();
  });
}

std::optional<ModelRecord> CacheStore::find_model(const std::string& name, const DeviceKey& device) {
  std::optional<ModelRecord> found;
  guarded([&](Connection& c) {
    found.reset();
    auto select = c.prepare(std::string("SELECT version, json, created FROM models WHERE ") + kDeviceMatch +
                            " AND name = ?5");
    bind_device(select, device);
    select.bind(5, name);
    if (!select.step()) return;
    found = ModelRecord{name, int(select.column_int(0)), device,
                        nlohmann::json::parse(select.column_text(1), nullptr, false), select.column_int(2)};
  });
  return found;
}

}  // namespace sparsejit::cache
