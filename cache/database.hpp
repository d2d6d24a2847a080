// Opening the cache database: directory, WAL mode, schema, and moving aside a file that is
// damaged or belongs to something else.
#pragma once
#include <sys/types.h>

#include <memory>
#include <string>

#include "cache/sqlite.hpp"

namespace sparsejit::cache {

// Which file a path named when it was opened, so a later move-aside does not rename a fresh
// database another process has put there since.
struct FileId {
  dev_t device = 0;
  ino_t inode = 0;
  bool valid = false;
};

struct OpenedDatabase {
  std::unique_ptr<Connection> connection;
  FileId file;
  bool read_only = false;  // lookups only: the file or its folder cannot be written
};

// Opens database_path(dir), creating the directory and the schema as needed. A file that is
// not an SQLite database, is damaged, or is an SQLite database without our meta table is
// moved aside with one warning and replaced by a fresh database. A database this process may
// not write (read-only folder, file or mount) is opened read-only. Throws SqliteError or
// IoError when the directory or a fresh database cannot be used, and IoError for a file of
// another schema_version, which is another build's cache and is left alone.
OpenedDatabase open_cache_database(const std::string& dir);

// A private in-memory database with the same schema (the disk cache is off or unusable).
OpenedDatabase open_memory_database();

// Renames path to path.corrupt-<unix ms>-<pid> (its WAL likewise; the shared-memory index
// is deleted) and warns, naming reason, unless path is no longer the file `file`. Returns
// the new path, or "" when nothing was moved.
std::string move_aside(const std::string& path, const FileId& file, const std::string& reason);

}  // namespace sparsejit::cache
