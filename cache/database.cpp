#include "cache/database.hpp"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <set>
#include <thread>

#include "base/log.hpp"
#include "sparsejit/cache.hpp"

namespace sparsejit::cache {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSchema = R"sql(
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE kernels (
  schema_version INTEGER NOT NULL,
  library_version TEXT NOT NULL,
  template_name TEXT NOT NULL,
  source_sha256 TEXT NOT NULL,
  options TEXT NOT NULL,
  arch TEXT NOT NULL,
  nvrtc_version TEXT NOT NULL,
  cubin BLOB NOT NULL,
  compile_ms REAL NOT NULL,
  created INTEGER NOT NULL,
  last_used INTEGER NOT NULL,
  hits INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (schema_version, library_version, template_name, source_sha256, options, arch, nvrtc_version)
);
CREATE TABLE tuning_records (
  id INTEGER PRIMARY KEY,
  kind TEXT NOT NULL DEFAULT 'tune',
  device_name TEXT NOT NULL,
  compute_capability INTEGER NOT NULL,
  multiprocessors INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  library_version TEXT NOT NULL,
  op TEXT NOT NULL,
  feature_bucket TEXT NOT NULL,
  variant TEXT NOT NULL,
  params_json TEXT NOT NULL,
  time_ms REAL NOT NULL,
  checked INTEGER NOT NULL,
  created INTEGER NOT NULL,
  fingerprint TEXT NOT NULL DEFAULT '',
  plan_key TEXT NOT NULL DEFAULT '',
  model_version TEXT NOT NULL DEFAULT '',
  features_json TEXT NOT NULL DEFAULT '{}',
  timings_json TEXT NOT NULL DEFAULT '[]'
);
CREATE INDEX tuning_records_lookup ON tuning_records
  (device_name, compute_capability, multiprocessors, driver_version, library_version, op, feature_bucket);
CREATE INDEX tuning_records_measured ON tuning_records (fingerprint, plan_key);
CREATE TABLE models (
  name TEXT NOT NULL,
  version INTEGER NOT NULL,
  device_name TEXT NOT NULL,
  compute_capability INTEGER NOT NULL,
  multiprocessors INTEGER NOT NULL,
  driver_version INTEGER NOT NULL,
  library_version TEXT NOT NULL,
  json TEXT NOT NULL,
  created INTEGER NOT NULL,
  PRIMARY KEY (name, device_name, compute_capability, multiprocessors, driver_version, library_version)
);
)sql";

FileId identify(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return {};
  return {info.st_dev, info.st_ino, true};
}

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Switching to WAL needs a moment of exclusive access; while other processes open the same
// file it can report busy, so retry for as long as the busy timeout would wait.
void enable_wal(Connection& connection) {
  for (int attempt = 0;; ++attempt) {
    try {
      connection.exec("PRAGMA journal_mode=WAL");
      connection.exec("PRAGMA synchronous=NORMAL");
      return;
    } catch (const SqliteError& e) {
      const int primary = e.code() & 0xff;
      if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || attempt >= 500) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

// Creates the schema in an empty database, accepts ours, rejects anything else. Runs inside
// one write transaction so concurrent openers see either no tables or all of them.
void ensure_schema(Connection& connection) {
  WriteTransaction transaction(connection);
  std::set<std::string> tables;
  auto list = connection.prepare("SELECT name FROM sqlite_master WHERE type = 'table'");
  while (list.step()) tables.insert(list.column_text(0));

  if (tables.empty()) {
    connection.exec(kSchema);
    connection.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?1)")
        .bind(1, std::to_string(kSchemaVersion))
        .step();
  } else if (tables.count("meta") == 0) {
    std::string names;
    for (const auto& t : tables) names += (names.empty() ? "" : ", ") + t;
    throw SqliteError(SQLITE_NOTADB, connection.path() + " is an SQLite database without sparsejit's meta table (tables: " +
                                         names + ")");
  } else {
    auto version = connection.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
    const std::string found = version.step() ? version.column_text(0) : "<none>";
    // Another schema is another build's cache, not damage: it is left as it is. (Each schema
    // has its own file, database_path(), so this takes a file copied or renamed by hand.)
    if (found != std::to_string(kSchemaVersion))
      throw IoError(connection.path() + " has cache schema_version " + found + "; this build uses " +
                    std::to_string(kSchemaVersion) + ", so it leaves that file alone");
  }
  transaction.commit();
}

// A read-only database must already be ours: the same checks as ensure_schema, without the
// write transaction it cannot take.
void check_schema_read_only(Connection& connection) {
  auto version = connection.prepare("SELECT value FROM meta WHERE key = 'schema_version'");
  const std::string found = version.step() ? version.column_text(0) : "<none>";
  if (found != std::to_string(kSchemaVersion))
    throw IoError(connection.path() + " (read-only) has cache schema_version " + found + "; this build uses " +
                  std::to_string(kSchemaVersion));
}

// The cache cannot be written here: the directory or the file is read-only (a prebuilt cache
// shipped with an install, a shared one on a cluster, a read-only mount).
bool is_read_only_location(const std::string& dir, const std::string& path) {
  if (::access(dir.c_str(), F_OK) != 0) return false;
  if (::access(path.c_str(), F_OK) != 0) return ::access(dir.c_str(), W_OK) != 0;
  return ::access(path.c_str(), W_OK) != 0 || ::access(dir.c_str(), W_OK) != 0;
}

bool is_read_only_error(int code) {
  const int primary = code & 0xff;
  return primary == SQLITE_READONLY || primary == SQLITE_CANTOPEN || primary == SQLITE_PERM;
}

// `path` with the characters a URI gives a meaning escaped.
std::string uri_path(const std::string& path) {
  std::string escaped;
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static constexpr char kHex[] = "0123456789ABCDEF";
      escaped += '%';
      escaped += kHex[static_cast<unsigned char>(c) >> 4];
      escaped += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      escaped += c;
    }
  }
  return escaped;
}

// Opens an existing database for lookups only. A WAL database whose -shm index cannot be
// created in a read-only folder opens as immutable (nothing may change it meanwhile, as for a
// shipped cache).
OpenedDatabase open_read_only(const std::string& path) {
  OpenedDatabase opened;
  opened.read_only = true;
  try {
    opened.connection = std::make_unique<Connection>(path, /*create=*/false, /*read_only=*/true);
    check_schema_read_only(*opened.connection);
  } catch (const SqliteError& e) {
    if (!is_read_only_error(e.code())) throw;
    opened.connection = std::make_unique<Connection>("file:" + uri_path(path) + "?immutable=1", /*create=*/false,
                                                     /*read_only=*/true);
    check_schema_read_only(*opened.connection);
  }
  opened.file = identify(path);
  return opened;
}

}  // namespace

std::string move_aside(const std::string& path, const FileId& file, const std::string& reason) {
  const FileId now = identify(path);
  if (!now.valid || (file.valid && (now.device != file.device || now.inode != file.inode))) return "";
  const std::string suffix = ".corrupt-" + std::to_string(now_ms()) + "-" + std::to_string(::getpid());
  std::error_code ec;
  fs::rename(path, path + suffix, ec);
  if (ec) {
    log(LogLevel::Warn, "kernel cache " + path + " is unusable (" + reason + ") and could not be moved aside (" +
                            ec.message() + ")");
    return "";
  }
  fs::rename(path + "-wal", path + suffix + "-wal", ec);
  fs::remove(path + "-shm", ec);
  log(LogLevel::Warn, "kernel cache " + path + " is unusable (" + reason + "); moved it to " + path + suffix +
                          " and started a fresh one");
  return path + suffix;
}

OpenedDatabase open_cache_database(const std::string& dir) {
  const std::string path = database_path(dir);
  if (is_read_only_location(dir, path) && fs::exists(path)) return open_read_only(path);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("cannot create cache directory " + dir + ": " + ec.message());
  // A second attempt only follows moving a bad file aside.
  for (int attempt = 0;; ++attempt) {
    OpenedDatabase opened;
    try {
      opened.connection = std::make_unique<Connection>(path, /*create=*/true);
      opened.file = identify(path);
      enable_wal(*opened.connection);
      ensure_schema(*opened.connection);
      return opened;
    } catch (const SqliteError& e) {
      opened.connection.reset();
      // A read-only file system answers only when written to (access() cannot tell it).
      if (is_read_only_error(e.code()) && fs::exists(path)) return open_read_only(path);
      if (!e.is_corruption() || attempt > 0) throw;
      move_aside(path, opened.file, e.what());
    }
  }
}

OpenedDatabase open_memory_database() {
  OpenedDatabase opened;
  opened.connection = std::make_unique<Connection>(":memory:", /*create=*/true);
  ensure_schema(*opened.connection);
  return opened;
}

}  // namespace sparsejit::cache
