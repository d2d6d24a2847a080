#include "cache/sqlite.hpp"

#include <sqlite3.h>

namespace sparsejit::cache {
namespace {

[[noreturn]] void fail(sqlite3* db, int code, const std::string& what) {
  const std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  throw SqliteError(code, what + ": " + detail + " (SQLite code " + std::to_string(code) + ")");
}

}  // namespace

bool SqliteError::is_corruption() const {
  const int primary = code_ & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

bool SqliteError::is_busy() const {
  const int primary = code_ & 0xff;
  return primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
}

Statement::Statement(sqlite3* db, const std::string& sql) : db_(db), sql_(sql) {
  const int rc = sqlite3_prepare_v2(db_, sql.c_str(), int(sql.size()), &stmt_, nullptr);
  if (rc != SQLITE_OK) fail(db_, rc, "preparing \"" + sql_ + "\"");
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

Statement& Statement::bind(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) fail(db_, rc, "binding parameter " + std::to_string(index) + " of \"" + sql_ + "\"");
  return *this;
}

Statement& Statement::bind(int index, double value) {
  const int rc = sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) fail(db_, rc, "binding parameter " + std::to_string(index) + " of \"" + sql_ + "\"");
  return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
  const int rc = sqlite3_bind_text(stmt_, index, value.data(), int(value.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(db_, rc, "binding parameter " + std::to_string(index) + " of \"" + sql_ + "\"");
  return *this;
}

Statement& Statement::bind_blob(int index, const std::vector<char>& value) {
  const int rc = sqlite3_bind_blob(stmt_, index, value.data(), int(value.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(db_, rc, "binding parameter " + std::to_string(index) + " of \"" + sql_ + "\"");
  return *this;
}

bool Statement::step() {
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, rc, "running \"" + sql_ + "\"");
}

int64_t Statement::column_int(int index) const { return sqlite3_column_int64(stmt_, index); }
double Statement::column_double(int index) const { return sqlite3_column_double(stmt_, index); }

std::string Statement::column_text(int index) const {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
  return text == nullptr ? std::string() : std::string(text, size_t(sqlite3_column_bytes(stmt_, index)));
}

std::vector<char> Statement::column_blob(int index) const {
  const auto* data = static_cast<const char*>(sqlite3_column_blob(stmt_, index));
  const int size = sqlite3_column_bytes(stmt_, index);
  return data == nullptr ? std::vector<char>() : std::vector<char>(data, data + size);
}

Connection::Connection(const std::string& path, bool create, bool read_only, int busy_timeout_ms) : path_(path) {
  int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE;
  if (create && !read_only) flags |= SQLITE_OPEN_CREATE;
  // Serialized mode: SQLite itself guards a connection used from several threads.
  flags |= SQLITE_OPEN_FULLMUTEX;
  // "file:PATH?immutable=1" and the like (read-only caches); plain paths stay plain.
  if (path.rfind("file:", 0) == 0) flags |= SQLITE_OPEN_URI;
  const int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
    sqlite3_close(db_);
    db_ = nullptr;
    throw SqliteError(rc, "opening " + path + ": " + message);
  }
  sqlite3_busy_timeout(db_, busy_timeout_ms);
}

Connection::~Connection() { sqlite3_close(db_); }

void Connection::exec(const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  if (rc != SQLITE_OK) {
    const std::string message = error != nullptr ? error : sqlite3_errstr(rc);
    sqlite3_free(error);
    throw SqliteError(rc, "running \"" + sql + "\" on " + path_ + ": " + message);
  }
}

int64_t Connection::changes() const { return sqlite3_changes(db_); }

WriteTransaction::WriteTransaction(Connection& connection) : connection_(connection) {
  connection_.exec("BEGIN IMMEDIATE");
}

WriteTransaction::~WriteTransaction() {
  if (done_) return;
  try {
    connection_.exec("ROLLBACK");
  } catch (const SqliteError&) {
    // The transaction may already be gone (SQLite rolls back on some errors itself).
  }
}

void WriteTransaction::commit() {
  connection_.exec("COMMIT");
  done_ = true;
}

}  // namespace sparsejit::cache
