// `sparsejit cache stats|list|verify|prune|clear` behind the public sparsejit/cache.hpp.
#include <chrono>
#include <filesystem>
#include <memory>

#include "cache/cache_store.hpp"
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

}  // namespace

CacheStats cache_stats(const std::string& dir) {
  CacheStats stats;
  stats.path = database_path(dir);
  std::error_code ec;
  if (!fs::exists(stats.path, ec)) return stats;
  auto store = open_store(dir);
  stats.exists = true;
  store->with_connection<bool>(
      [&](Connection& c) {
        stats.entries = count(c, "SELECT count(*) FROM kernels");
        stats.bytes = count(c, "SELECT coalesce(sum(length(cubin)), 0) FROM kernels");
        stats.hits = count(c, "SELECT coalesce(sum(hits), 0) FROM kernels");
        stats.tuning_records = count(c, "SELECT count(*) FROM tuning_records");
        stats.models = count(c, "SELECT count(*) FROM models");
        return true;
      },
      false);
  stats.file_bytes = file_size_or_zero(stats.path) + file_size_or_zero(stats.path + "-wal");
  return stats;
}

std::vector<CacheEntry> cache_list(const std::string& dir, const KernelKey& wanted) {
  std::vector<CacheEntry> entries;
  std::error_code ec;
  if (!fs::exists(database_path(dir), ec)) return entries;
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

VerifyReport cache_verify(const std::string& dir) {
  VerifyReport report;
  const std::string path = database_path(dir);
  std::error_code ec;
  if (!fs::exists(path, ec)) return report;
  // Read-only and without the open-time repair: verify reports, it does not fix.
  try {
    Connection c(path, /*create=*/false, /*read_only=*/true);
    auto check = c.prepare("PRAGMA integrity_check");
    while (check.step()) {
      const std::string line = check.column_text(0);
      if (line != "ok") report.problems.push_back("integrity_check: " + line);
    }
    auto blobs = c.prepare(std::string("SELECT ") + kKeyColumns + ", substr(cubin, 1, 4), length(cubin) FROM kernels");
    while (blobs.step()) {
      ++report.entries_checked;
      const std::vector<char> head = blobs.column_blob(7);
      const int64_t size = blobs.column_int(8);
      const bool elf = head.size() == 4 && head[0] == 0x7f && head[1] == 'E' && head[2] == 'L' && head[3] == 'F';
      if (size == 0) {
        report.problems.push_back("empty cubin: " + read_key(blobs).to_string());
      } else if (!elf) {
        report.problems.push_back("cubin without ELF magic: " + read_key(blobs).to_string());
      }
    }
  } catch (const SqliteError& e) {
    report.problems.push_back(e.what());
  }
  report.ok = report.problems.empty();
  return report;
}

PruneReport cache_prune(const std::string& dir, const PruneOptions& options) {
  PruneReport report;
  std::error_code ec;
  if (!fs::exists(database_path(dir), ec)) return report;
  auto store = open_store(dir);
  store->with_connection<bool>(
      [&](Connection& c) {
        report = {};
        WriteTransaction transaction(c);
        const int64_t cutoff =
            options.older_than_days ? now_ms() - int64_t(*options.older_than_days * 86400000.0) : 0;
        // Least recently used first, so the byte budget keeps the most recently used ones.
        auto select = c.prepare(std::string("SELECT rowid, length(cubin), library_version, nvrtc_version, "
                                            "last_used FROM kernels ORDER BY last_used, created, rowid"));
        struct Row { int64_t rowid, bytes; bool remove; };
        std::vector<Row> rows;
        int64_t kept_bytes = 0;
        while (select.step()) {
          const bool stale_version =
              options.mismatched_versions &&
              ((!options.current.library_version.empty() && select.column_text(2) != options.current.library_version) ||
               (!options.current.nvrtc_version.empty() && select.column_text(3) != options.current.nvrtc_version));
          const bool too_old = options.older_than_days && select.column_int(4) < cutoff;
          rows.push_back({select.column_int(0), select.column_int(1), stale_version || too_old});
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
  return report;
}

int64_t cache_clear(const std::string& dir, bool include_tuning) {
  std::error_code ec;
  if (!fs::exists(database_path(dir), ec)) return 0;
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
