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

// The five device-key columns, bound to parameters ?1..?5 (bind_device).
constexpr const char* kDeviceMatch =
    "device_name = ?1 AND compute_capability = ?2 AND driver_version = ?3 AND library_version = ?4 AND "
    "multiprocessors = ?5";

void bind_device(Statement& statement, const DeviceKey& device) {
  statement.bind(1, device.device_name)
      .bind(2, int64_t(device.compute_capability))
      .bind(3, int64_t(device.driver_version))
      .bind(4, device.library_version)
      .bind(5, int64_t(device.multiprocessors));
}

constexpr const char* kTuningColumns = kTuningRecordColumns;

RecordKind parse_kind(const std::string& text) { return text == "measured" ? RecordKind::Measured : RecordKind::Tune; }

// The JSON column `index` of `row`, or nullopt (with `problem` set) when it does not parse or
// is not of `shape`.
std::optional<nlohmann::json> json_column(const Statement& row, int index, nlohmann::json::value_t shape, const char* name,
                                          std::string& problem) {
  nlohmann::json value = nlohmann::json::parse(row.column_text(index), nullptr, /*allow_exceptions=*/false);
  if (value.type() == shape) return value;
  problem = std::string(name) + (value.is_discarded() ? " does not parse as JSON" : " has the wrong JSON type");
  return std::nullopt;
}

// What an unreadable row was about, for the warning: its op and pattern (or bucket).
std::string record_label(const Statement& row) {
  const std::string fingerprint = row.column_text(13);
  return row.column_text(5) + " " + (fingerprint.empty() ? row.column_text(6) : fingerprint);
}

// Every timing must name its variant: the readers of records index on it.
bool timings_well_formed(const nlohmann::json& timings) {
  for (const auto& t : timings)
    if (!t.is_object() || !t.contains("variant") || !t["variant"].is_string()) return false;
  return true;
}

// One row of kTuningColumns, or nullopt with `problem` naming what is unreadable.
std::optional<TuningRecord> read_tuning_record(const Statement& row, std::string& problem) {
  TuningRecord r;
  r.device = {row.column_text(0), int(row.column_int(1)), int(row.column_int(2)), row.column_text(3), int(row.column_int(4))};
  r.op = row.column_text(5);
  r.feature_bucket = row.column_text(6);
  r.variant = row.column_text(7);
  const auto params = json_column(row, 8, nlohmann::json::value_t::object, "params_json", problem);
  r.time_ms = row.column_double(9);
  r.checked = row.column_int(10) != 0;
  r.created = row.column_int(11);
  r.kind = parse_kind(row.column_text(12));
  r.fingerprint = row.column_text(13);
  r.plan_key = row.column_text(14);
  r.model_version = row.column_text(15);
  const auto features = json_column(row, 16, nlohmann::json::value_t::object, "features_json", problem);
  const auto timings = json_column(row, 17, nlohmann::json::value_t::array, "timings_json", problem);
  if (!params || !features || !timings) return std::nullopt;
  if (!timings_well_formed(*timings)) {
    problem = "timings_json has an entry without a variant";
    return std::nullopt;
  }
  r.params = *params;
  r.features = *features;
  r.timings = *timings;
  return r;
}

}  // namespace

const char* to_string(RecordKind kind) { return kind == RecordKind::Measured ? "measured" : "tune"; }

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
                            ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)");
    bind_device(insert, record.device);
    insert.bind(6, record.op)
        .bind(7, record.feature_bucket)
        .bind(8, record.variant)
        .bind(9, record.params.dump())
        .bind(10, record.time_ms)
        .bind(11, int64_t(record.checked ? 1 : 0))
        .bind(12, record.created != 0 ? record.created : now_ms())
        .bind(13, std::string(to_string(record.kind)))
        .bind(14, record.fingerprint)
        .bind(15, record.plan_key)
        .bind(16, record.model_version)
        .bind(17, record.features.dump())
        .bind(18, record.timings.dump())
        .step();
    transaction.commit();
  });
}

std::vector<TuningRecord> CacheStore::read_records(Statement& select) {
  std::vector<TuningRecord> records;
  while (select.step()) {
    std::string problem;
    if (auto record = read_tuning_record(select, problem)) {
      records.push_back(std::move(*record));
    } else if (!told_unreadable_row_) {
      // A row another build or a damaged write left: not worth failing a lookup for, and one
      // warning is enough however many lookups meet it.
      log(LogLevel::Warn, "kernel cache " + db_.connection->path() + ": skipping unreadable tuning records (" + problem +
                              " in a record of " + record_label(select) + ")");
      told_unreadable_row_ = true;
    }
  }
  return records;
}

std::vector<TuningRecord> CacheStore::find_tuning_records(const DeviceKey& device, const std::string& op,
                                                          const std::string& feature_bucket) {
  std::vector<TuningRecord> records;
  guarded([&](Connection& c) {
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns + " FROM tuning_records WHERE " + kDeviceMatch +
                            " AND op = ?6 AND feature_bucket = ?7 AND kind = 'tune' ORDER BY time_ms, variant, id");
    bind_device(select, device);
    select.bind(6, op).bind(7, feature_bucket);
    records = read_records(select);
  });
  return records;
}

std::optional<TuningRecord> CacheStore::find_measured_record(const MeasuredKey& key) {
  std::vector<TuningRecord> records;
  guarded([&](Connection& c) {
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns + " FROM tuning_records WHERE " + kDeviceMatch +
                            " AND kind = 'measured' AND fingerprint = ?6 AND plan_key = ?7 AND model_version = ?8 "
                            "ORDER BY created DESC, id DESC");
    bind_device(select, key.device);
    select.bind(6, key.fingerprint).bind(7, key.plan_key).bind(8, key.model_version);
    records = read_records(select);
  });
  if (records.empty()) return std::nullopt;
  return std::move(records.front());
}

std::vector<TuningRecord> CacheStore::device_records(const DeviceKey& device, const std::string& op) {
  std::vector<TuningRecord> records;
  guarded([&](Connection& c) {
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns + " FROM tuning_records WHERE " + kDeviceMatch +
                            " AND op = ?6 ORDER BY id");
    bind_device(select, device);
    select.bind(6, op);
    records = read_records(select);
  });
  return records;
}

std::vector<TuningRecord> CacheStore::measured_records() {
  std::vector<TuningRecord> records;
  guarded([&](Connection& c) {
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns +
                            " FROM tuning_records WHERE kind = 'measured' ORDER BY created DESC, id DESC");
    records = read_records(select);
  });
  return records;
}

int64_t CacheStore::remove_measured_records(const std::function<bool(const TuningRecord&)>& stale) {
  int64_t removed = 0;
  guarded([&](Connection& c) {
    removed = 0;
    if (skips_writes()) return;
    WriteTransaction transaction(c);
    // The rowid follows the record's columns, so read_tuning_record reads the row as it is.
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns + ", id FROM tuning_records WHERE kind = 'measured'");
    std::vector<int64_t> ids;
    while (select.step()) {
      std::string problem;
      const auto record = read_tuning_record(select, problem);
      if (!record || stale(*record)) ids.push_back(select.column_int(18));
    }
    for (const int64_t id : ids) c.prepare("DELETE FROM tuning_records WHERE id = ?1").bind(1, id).step();
    transaction.commit();
    removed = int64_t(ids.size());
  });
  return removed;
}

std::vector<TuningRecord> CacheStore::all_tuning_records() {
  std::vector<TuningRecord> records;
  guarded([&](Connection& c) {
    auto select = c.prepare(std::string("SELECT ") + kTuningColumns + " FROM tuning_records ORDER BY id");
    records = read_records(select);
  });
  return records;
}

void CacheStore::put_model(const ModelRecord& model) {
  guarded([&](Connection& c) {
    if (skips_writes()) return;
    WriteTransaction transaction(c);
    auto insert = c.prepare(
        "INSERT OR REPLACE INTO models (device_name, compute_capability, driver_version, library_version, "
        "multiprocessors, name, version, json, created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    bind_device(insert, model.device);
    insert.bind(6, model.name)
        .bind(7, int64_t(model.version))
        .bind(8, model.json.dump())
        .bind(9, model.created != 0 ? model.created : now_ms())
        .step();
    transaction.commit();
  });
}

std::optional<ModelRecord> CacheStore::find_model(const std::string& name, const DeviceKey& device) {
  std::optional<ModelRecord> found;
  guarded([&](Connection& c) {
    found.reset();
    auto select = c.prepare(std::string("SELECT version, json, created FROM models WHERE ") + kDeviceMatch +
                            " AND name = ?6");
    bind_device(select, device);
    select.bind(6, name);
    if (!select.step()) return;
    found = ModelRecord{name, int(select.column_int(0)), device,
                        nlohmann::json::parse(select.column_text(1), nullptr, false), select.column_int(2)};
  });
  return found;
}

}  // namespace sparsejit::cache
