// `sparsejit cache stats|list|verify|prune|clear` behind the public sparsejit/cache.hpp.
#include <chrono>
#include <filesystem>
#include <memory>

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cache/cache_store.hpp"
#include "cache/cubin_check.hpp"
#include "sparsejit/cache.hpp"

namespace sparsejit::cache {
namespace {

namespace fs = std::filesystem;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t file_size_or_zero(const std::string& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return ec ? 0 : int64_t(size);
}

// Opens the store on dir; an unusable directory is an error here (the user asked about that
// cache specifically), unlike in the runtime, which silently falls back to memory.
std::unique_ptr<CacheStore> open_store(const std::string& dir) {
  auto store = std::make_unique<CacheStore>(dir);
  if (!store->on_disk()) throw IoError("cannot open the kernel cache in " + dir + " (see the warning above)");
  return store;
}

// The truth about a cache folder before looking inside: a path that is a file, or a folder
// this process cannot read, is an IoError naming it (not an empty cache). Returns whether the
// database file exists.
bool database_exists(const std::string& dir) {
  std::error_code ec;
  const fs::file_status folder = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw IoError("cannot read cache directory " + dir + ": " + ec.message());
  if (!fs::exists(folder)) return false;
  if (!fs::is_directory(folder)) throw IoError("cache directory " + dir + " is not a directory");
  const std::string path = database_path(dir);
  const bool exists = fs::exists(path, ec);
  if (ec) throw IoError("cannot read " + path + ": " + ec.message());
  if (exists && ::access(path.c_str(), R_OK) != 0) throw IoError("cannot read " + path + ": " + std::strerror(errno));
  return exists;
}

int64_t count(Connection& c, const std::string& sql) {
  auto statement = c.prepare(sql);
  return statement.step() ? statement.column_int(0) : 0;
}

constexpr const char* kKeyColumns =
    "schema_version, library_version, template_name, source_sha256, options, arch, nvrtc_version";

KernelKey read_key(const Statement& row) {
  return {int(row.column_int(0)), row.column_text(1), row.column_text(2), row.column_text(3),
          row.column_text(4),     row.column_text(5), row.column_text(6)};
}

void delete_rowid(Connection& c, int64_t rowid) {
  c.prepare("DELETE FROM kernels WHERE rowid = ?1").bind(1, rowid).step();
}

// The files move_aside() left: "<database>.corrupt-<unix ms>-<pid>" and their -wal files.
std::vector<fs::path> moved_aside_files(const std::string& dir) {
  const std::string prefix = fs::path(database_path(dir)).filename().string() + ".corrupt-";
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) files.push_back(entry.path());
  return files;
}

// Copies the tuning records and models SQLite can still read from a moved-aside file into the
// cache (they cost GPU time to measure; kernels are only compiled again), skipping records
// already there. A file SQLite cannot read gives nothing. Returns the records copied.
int64_t salvage_tuning(CacheStore& store, const fs::path& file) {
  return store.with_connection<int64_t>(
      [&](Connection& c) {
        int64_t copied = 0;
        try {
          c.prepare("ATTACH DATABASE ?1 AS moved").bind(1, file.string()).step();
        } catch (const SqliteError&) {
          return copied;
        }
        try {
          WriteTransaction transaction(c);
          c.exec(std::string("INSERT INTO tuning_records (") + kTuningRecordColumns + ") SELECT " + kTuningRecordColumns +
                 " FROM moved.tuning_records AS m WHERE NOT EXISTS (SELECT 1 FROM tuning_records AS t WHERE "
                 "t.device_name = m.device_name AND t.compute_capability = m.compute_capability AND "
                 "t.driver_version = m.driver_version AND t.library_version = m.library_version AND "
                 "t.multiprocessors = m.multiprocessors AND t.op = m.op AND t.kind = m.kind AND "
                 "t.feature_bucket = m.feature_bucket AND t.fingerprint = m.fingerprint AND t.plan_key = m.plan_key AND "
                 "t.variant = m.variant AND t.params_json = m.params_json AND t.created = m.created)");
          copied = c.changes();
          c.exec(std::string("INSERT OR IGNORE INTO models (") + kModelColumns + ") SELECT " + kModelColumns +
                 " FROM moved.models");
          transaction.commit();
        } catch (const SqliteError&) {
          copied = 0;  // the moved file's tables are unreadable; the transaction rolled back
        }
        try {
          c.exec("DETACH DATABASE moved");
        } catch (const SqliteError&) {
        }
        return copied;
      },
      0);
}

// Salvages and removes the moved-aside files (with their -wal and -shm) last changed more
// than `days` days ago. Returns the files removed.
std::vector<std::string> remove_old_moved_aside(CacheStore& store, const std::string& dir, double days) {
  std::vector<std::string> removed;
  const auto cutoff = fs::file_time_type::clock::now() -
                      std::chrono::duration_cast<fs::file_time_type::duration>(std::chrono::duration<double>(days * 86400.0));
  for (const fs::path& file : moved_aside_files(dir)) {
    const std::string name = file.string();
    if (name.size() > 4 && (name.compare(name.size() - 4, 4, "-wal") == 0 || name.compare(name.size() - 4, 4, "-shm") == 0))
      continue;  // removed with their database file
    std::error_code ec;
    if (fs::last_write_time(file, ec) > cutoff || ec) continue;
    salvage_tuning(store, file);
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(name + suffix, ec);
    removed.push_back(name);
  }
  return removed;
}

RecordEntry to_entry(const TuningRecord& r) {
  RecordEntry e;
  e.device = r.device;
  e.op = r.op;
  e.fingerprint = r.fingerprint;
  e.plan_key = r.plan_key;
  e.model_version = r.model_version;
  e.variant = r.variant;
  e.params = r.params.dump();
  e.time_ms = r.time_ms;
  e.timed = int64_t(r.timings.size());
  e.created = r.created;
  return e;
}

}  // namespace

CacheStats cache_stats(const std::string& dir) {
  CacheStats stats;
  stats.path = database_path(dir);
  if (!database_exists(dir)) return stats;
  auto store = open_store(dir);
  stats.exists = true;
  store->with_connection<bool>(
      [&](Connection& c) {
        stats.entries = count(c, "SELECT count(*) FROM kernels");
        stats.bytes = count(c, "SELECT coalesce(sum(length(cubin)), 0) FROM kernels");
        stats.hits = count(c, "SELECT coalesce(sum(hits), 0) FROM kernels");
        stats.tuning_records = count(c, "SELECT count(*) FROM tuning_records");
        stats.measured_records = count(c, "SELECT count(*) FROM tuning_records WHERE kind = 'measured'");
        stats.models = count(c, "SELECT count(*) FROM models");
        return true;
      },
      false);
  stats.file_bytes = file_size_or_zero(stats.path) + file_size_or_zero(stats.path + "-wal");
  return stats;
}

std::vector<CacheEntry> cache_list(const std::string& dir, const KernelKey& wanted) {
  std::vector<CacheEntry> entries;
  if (!database_exists(dir)) return entries;
  auto store = open_store(dir);
  store->with_connection<bool>(
      [&](Connection& c) {
        entries.clear();
        auto select = c.prepare(std::string("SELECT ") + kKeyColumns +
                                ", length(cubin), compile_ms, created, last_used, hits FROM kernels "
                                "ORDER BY template_name, arch, last_used DESC");
        while (select.step()) {
          CacheEntry e;
          e.key = read_key(select);
          e.bytes = select.column_int(7);
          e.compile_ms = select.column_double(8);
          e.created = select.column_int(9);
          e.last_used = select.column_int(10);
          e.hits = select.column_int(11);
          e.mismatches = key_mismatches(e.key, wanted);
          entries.push_back(std::move(e));
        }
        return true;
      },
      false);
  return entries;
}

std::vector<RecordEntry> cache_records(const std::string& dir, const std::optional<RecordContext>& context) {
  std::vector<RecordEntry> entries;
  if (!database_exists(dir)) return entries;
  for (const TuningRecord& record : open_store(dir)->measured_records()) {
    entries.push_back(to_entry(record));
    if (context) entries.back().stale = record_staleness(entries.back(), *context);
  }
  return entries;
}

VerifyReport cache_verify(const std::string& dir) {
  VerifyReport report;
  report.path = database_path(dir);
  try {
    report.exists = database_exists(dir);
  } catch (const IoError& e) {
    report.problems.push_back(e.what());
  }
  if (!report.exists) {
    report.ok = report.problems.empty();
    return report;
  }
  // Read-only and without the open-time repair: verify reports, it does not fix.
  try {
    Connection c(report.path, /*create=*/false, /*read_only=*/true);
    auto check = c.prepare("PRAGMA integrity_check");
    while (check.step()) {
      const std::string line = check.column_text(0);
      if (line != "ok") report.problems.push_back("integrity_check: " + line);
    }
    auto blobs = c.prepare(std::string("SELECT ") + kKeyColumns + ", cubin FROM kernels");
    while (blobs.step()) {
      ++report.entries_checked;
      if (const auto problem = cubin_problem(blobs.column_blob(7)))
        report.problems.push_back(*problem + ": " + read_key(blobs).to_string());
    }
  } catch (const SqliteError& e) {
    report.problems.push_back(e.what());
  }
  report.ok = report.problems.empty();
  return report;
}

PruneReport cache_prune(const std::string& dir, const PruneOptions& options) {
  PruneReport report;
  if (!database_exists(dir)) return report;
  auto store = open_store(dir);
  store->with_connection<bool>(
      [&](Connection& c) {
        report = {};
        WriteTransaction transaction(c);
        const int64_t cutoff =
            options.older_than_days ? now_ms() - int64_t(*options.older_than_days * 86400000.0) : 0;
        // Least recently used first, so the byte budget keeps the most recently used ones.
        auto select = c.prepare(std::string("SELECT rowid, length(cubin), library_version, nvrtc_version, "
                                            "last_used, cubin FROM kernels ORDER BY last_used, created, rowid"));
        struct Row { int64_t rowid, bytes; bool remove; };
        std::vector<Row> rows;
        int64_t kept_bytes = 0;
        while (select.step()) {
          const bool stale_version =
              options.mismatched_versions &&
              ((!options.current.library_version.empty() && select.column_text(2) != options.current.library_version) ||
               (!options.current.nvrtc_version.empty() && select.column_text(3) != options.current.nvrtc_version));
          const bool too_old = options.older_than_days && select.column_int(4) < cutoff;
          const bool damaged = cubin_problem(select.column_blob(5)).has_value();
          report.damaged += damaged;
          rows.push_back({select.column_int(0), select.column_int(1), stale_version || too_old || damaged});
          if (!rows.back().remove) kept_bytes += rows.back().bytes;
        }
        for (auto& row : rows) {
          if (!row.remove && options.max_bytes && kept_bytes > *options.max_bytes) {
            row.remove = true;
            kept_bytes -= row.bytes;
          }
          if (!row.remove) continue;
          delete_rowid(c, row.rowid);
          ++report.removed;
          report.bytes_freed += row.bytes;
        }
        transaction.commit();
        return true;
      },
      false);
  if (options.records)
    report.records_removed = store->remove_measured_records(
        [&](const TuningRecord& r) { return !record_staleness(to_entry(r), *options.records).empty(); });
  report.moved_aside_removed = remove_old_moved_aside(*store, dir, options.moved_aside_days);
  return report;
}

int64_t cache_clear(const std::string& dir, bool include_tuning) {
  if (!database_exists(dir)) return 0;
  auto store = open_store(dir);
  return store->with_connection<int64_t>(
      [&](Connection& c) {
        WriteTransaction transaction(c);
        c.exec("DELETE FROM kernels");
        const int64_t removed = c.changes();
        if (include_tuning) c.exec("DELETE FROM tuning_records; DELETE FROM models");
        transaction.commit();
        return removed;
      },
      0);
}

}  // namespace sparsejit::cache
