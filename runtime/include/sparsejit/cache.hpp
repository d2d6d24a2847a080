// The compile cache on disk: what identifies a cached kernel, where the cache lives, and the
// management operations behind `sparsejit cache stats|list|verify|prune|clear`.
//
// Location (first that applies):
//   SPARSEJIT_CACHE_DIR=DIR   DIR; set but empty disables the disk cache
//   XDG_CACHE_HOME=DIR        DIR/sparsejit
//   HOME                      ~/.cache/sparsejit
// The database in that folder is kernels-schema<kSchemaVersion>.db: builds of other schemas
// keep their own files beside it. A folder or file this process cannot write is used for
// lookups only (a prebuilt or shared cache); new kernels then stay in memory.
// Timestamps are unix milliseconds.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace sparsejit::cache {

// Bumped whenever the tables change; it names the database file (database_path).
// 2: tuning records gained measured selections (kind, fingerprint, plan key, model version,
//    features, timings) and records and models the device's SM count.
constexpr int kSchemaVersion = 2;

// What tuning records and tuned models are keyed by; a record for another key is ignored.
struct DeviceKey {
  std::string device_name;     // e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability = 0;  // e.g. 90
  int driver_version = 0;      // cuDriverGetVersion, e.g. 13000
  std::string library_version;
  int multiprocessors = 0;     // SM count: a MIG slice or a cut-down part of the same name differs
  bool operator==(const DeviceKey& other) const;
  bool operator!=(const DeviceKey& other) const { return !(*this == other); }
};

// What identifies a compiled kernel. Each field is its own column of the kernels table, so a
// lookup that misses can say which part differed.
struct KernelKey {
  int schema_version = 0;
  std::string library_version;  // sparsejit version that rendered the source
  std::string template_name;    // e.g. "spmm_csr_rowwarp.cu"
  std::string source_sha256;    // of the rendered source, 64 hex digits
  std::string options;          // normalized NVRTC options, space separated
  std::string arch;             // "sm_90"
  std::string nvrtc_version;    // "13.0"

  bool operator==(const KernelKey& other) const;
  bool operator!=(const KernelKey& other) const { return !(*this == other); }
  bool operator<(const KernelKey& other) const;
  // "spmm_csr_rowwarp.cu sm_90 sha256=1a2b3c4d5e6f... nvrtc 13.0 lib 0.1.0 schema 1 [options]"
  std::string to_string() const;
};

// How a kernel binary was obtained.
enum class KernelSource {
  Memory,    // this process already had it (or waited for another thread's compile)
  Disk,      // loaded from the SQLite cache
  Compiled,  // compiled by NVRTC in this call
};
const char* to_string(KernelSource source);

// "column: entry X, wanted Y" for each column of entry that differs from wanted. Empty
// strings (and schema_version 0) in wanted match anything.
std::vector<std::string> key_mismatches(const KernelKey& entry, const KernelKey& wanted);

// This process's side of a key: schema, library and NVRTC versions, and the arch of sm when
// sm > 0. Template, source hash and options are left empty (they match anything).
KernelKey current_key_context(int sm = 0);

// The cache directory from the environment (see the top of this file); nullopt when
// SPARSEJIT_CACHE_DIR is set to "" (disk cache disabled) or no HOME is known.
std::optional<std::string> default_cache_dir();
// DIR/kernels-schema<kSchemaVersion>.db
std::string database_path(const std::string& dir);

struct CacheStats {
  std::string path;            // the database file
  bool exists = false;         // false: nothing cached yet (the other counts are 0)
  int64_t entries = 0;         // compiled kernels
  int64_t bytes = 0;           // sum of their cubin sizes
  int64_t hits = 0;            // disk hits over all kernels
  int64_t tuning_records = 0;    // every record: `sparsejit tune`'s and measured selections
  int64_t measured_records = 0;  // of them, measured selections
  int64_t models = 0;
  int64_t file_bytes = 0;      // the database file (and its WAL) on disk
};

struct CacheEntry {
  KernelKey key;
  int64_t bytes = 0;
  double compile_ms = 0;
  int64_t created = 0;
  int64_t last_used = 0;
  int64_t hits = 0;
  std::vector<std::string> mismatches;  // key_mismatches(key, wanted) from cache_list
};

struct VerifyReport {
  bool ok = true;
  std::string path;            // the database file
  bool exists = false;         // false: no database to check (ok unless the folder itself is a problem)
  int64_t entries_checked = 0;
  // A folder that is a file or cannot be read, integrity_check messages, and every cubin
  // that is not a whole CUDA ELF image (empty, no ELF magic, cut short, ...).
  std::vector<std::string> problems;
};

// A measured selection stored as a tuning record (`cache list --records`).
struct RecordEntry {
  DeviceKey device;
  std::string op;
  std::string fingerprint;    // the pattern's, fingerprint_hex
  std::string plan_key;       // the problem: op, value type, K, layout, options
  std::string model_version;  // the model whose shortlist was timed
  std::string variant;        // the choice
  std::string params;         // its parameters, JSON text
  double time_ms = 0;         // its time
  int64_t timed = 0;          // settings timed
  int64_t created = 0;
  // Why the record is stale against the context it was listed with (record_staleness);
  // empty: current, or not judged.
  std::vector<std::string> stale;
};

// What makes a measured-selection record current for this process, so that its planner would
// look it up: this build's library version and, where this process sees GPUs, the device key
// of one of them with the model version each op's planner uses on it now.
struct RecordContext {
  std::string library_version;
  struct Device {
    DeviceKey key;
    std::map<std::string, std::string> model_versions;  // op ("spmm") -> model version
  };
  // nullopt: no GPU is visible here, so device, driver and model are not judged.
  std::optional<std::vector<Device>> devices;
};

// "library_version: record '0.1.0', this build '0.2.0'" and the like, one per reason the
// record would be ignored in `context`: another library version; no GPU with its device name,
// compute capability and SM count; that GPU's driver; the model its op now plans with there.
// Empty when the record is current (or cannot be judged here).
std::vector<std::string> record_staleness(const RecordEntry& record, const RecordContext& context);

struct PruneOptions {
  // Remove kernels whose library or NVRTC version differs from current's.
  bool mismatched_versions = true;
  KernelKey current = current_key_context();
  // Remove kernels not used for this many days.
  std::optional<double> older_than_days;
  // Then remove least recently used kernels until their cubins total at most this.
  std::optional<int64_t> max_bytes;
  // Kernels whose cubin fails verification are always removed. Files a damaged database was
  // moved aside to (<database>.corrupt-*) are removed once older than this many days, after
  // their tuning records and models are copied into the cache where SQLite can read them.
  double moved_aside_days = 7;
  // Measured-selection records stale in this context (record_staleness) are removed; nullopt
  // keeps them all. The default judges the library version only.
  std::optional<RecordContext> records = RecordContext{current.library_version, std::nullopt};
};

struct PruneReport {
  int64_t removed = 0;      // kernels, damaged ones included
  int64_t bytes_freed = 0;
  int64_t damaged = 0;      // of the removed kernels, those whose cubin failed verification
  std::vector<std::string> moved_aside_removed;  // moved-aside database files removed
  int64_t records_removed = 0;  // stale measured-selection records
};

// All of these take the cache directory (default_cache_dir() for the user's cache). A
// database that is corrupt or foreign is moved aside with a warning, as on any open, except
// by cache_verify, which only reports. IoError when the directory cannot be used at all: it
// is a file, or cannot be read (cache_verify reports that as a problem instead).
CacheStats cache_stats(const std::string& dir);
std::vector<CacheEntry> cache_list(const std::string& dir, const KernelKey& wanted = {});
// The measured-selection records, newest first, each judged against `context` when given.
// A row whose JSON does not parse is left out (one warning).
std::vector<RecordEntry> cache_records(const std::string& dir, const std::optional<RecordContext>& context = std::nullopt);
VerifyReport cache_verify(const std::string& dir);
PruneReport cache_prune(const std::string& dir, const PruneOptions& options);
// Removes every compiled kernel (and the tuning records, measured selections included, and
// models too when include_tuning); returns the number of kernels removed.
int64_t cache_clear(const std::string& dir, bool include_tuning = false);

}  // namespace sparsejit::cache
