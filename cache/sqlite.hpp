// A thin RAII layer over the sqlite3 C API: a connection, prepared statements, and an error
// that carries SQLite's result code so callers can tell corruption from a busy database.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sparsejit/error.hpp"

struct sqlite3;
struct sqlite3_stmt;

namespace sparsejit::cache {

class SqliteError : public IoError {
 public:
  SqliteError(int code, const std::string& message) : IoError(message), code_(code) {}
  int code() const { return code_; }
  // The file is not a database or its pages are damaged.
  bool is_corruption() const;
  // Another connection held the lock for longer than the busy timeout.
  bool is_busy() const;

 private:
  int code_;
};

class Statement {
 public:
  Statement(sqlite3* db, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are numbered from 1, as in SQLite.
  Statement& bind(int index, int64_t value);
  Statement& bind(int index, double value);
  Statement& bind(int index, const std::string& value);
  Statement& bind_blob(int index, const std::vector<char>& value);
  // True while a row is available.
  bool step();

  int64_t column_int(int index) const;
  double column_double(int index) const;
  std::string column_text(int index) const;
  std::vector<char> column_blob(int index) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  std::string sql_;
};

class Connection {
 public:
  // Opens (creating when create is set) the database at path; ":memory:" for a private
  // in-memory database. Sets the busy timeout.
  Connection(const std::string& path, bool create, bool read_only = false, int busy_timeout_ms = 5000);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void exec(const std::string& sql);
  Statement prepare(const std::string& sql) { return Statement(db_, sql); }
  int64_t changes() const;
  const std::string& path() const { return path_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

// BEGIN IMMEDIATE on construction; ROLLBACK on destruction unless commit() was called.
class WriteTransaction {
 public:
  explicit WriteTransaction(Connection& connection);
  ~WriteTransaction();
  WriteTransaction(const WriteTransaction&) = delete;
  WriteTransaction& operator=(const WriteTransaction&) = delete;
  void commit();

 private:
  Connection& connection_;
  bool done_ = false;
};

}  // namespace sparsejit::cache
