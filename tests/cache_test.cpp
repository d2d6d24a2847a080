// The SQLite kernel cache: SHA-256, hits and misses by key column, corruption recovery,
// memory-only mode, one compile per key across threads, eight processes on one database,
// tuning records and models, and the management operations.
#include <gtest/gtest.h>

#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cache/kernel_cache.hpp"
#include "base/sha256.hpp"
#include "sparsejit/cache.hpp"
#include "support/fake_cubin.hpp"
#include "support/test_support.hpp"

extern char** environ;

namespace sparsejit::cache {
namespace {

namespace fs = std::filesystem;

using test::ScopedEnv;

fs::path fresh_dir(const std::string& tag) { return test::fresh_dir("cache-" + tag); }

KernelKey test_key(const std::string& source, const std::string& arch = "sm_90",
                   const std::string& options = "-default-device -std=c++17") {
  KernelKey key = current_key_context();
  key.template_name = "test.cu";
  key.source_sha256 = sha256_hex(source);
  key.options = options;
  key.arch = arch;
  return key;
}

std::vector<char> elf_bytes(const std::string& tag) { return test::fake_cubin(tag); }

// A compile function that counts its calls.
struct FakeCompiler {
  std::atomic<int> calls{0};
  std::function<CompiledBinary()> returning(const std::string& tag, int sleep_ms = 0) {
    return [this, tag, sleep_ms] {
      ++calls;
      if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      return CompiledBinary{elf_bytes(tag), 1.5};
    };
  }
};

int count_warnings(const std::string& text) {
  int n = 0;
  for (size_t at = text.find("warning"); at != std::string::npos; at = text.find("warning", at + 1)) ++n;
  return n;
}

std::vector<fs::path> moved_aside(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.find("kernels-schema1.db.corrupt-") == 0 && name.find("-wal") == std::string::npos) out.push_back(e.path());
  }
  return out;
}

TEST(KernelCache, CompiledThenMemoryThenDiskInANewCache) {
  const fs::path dir = fresh_dir("hit");
  FakeCompiler compiler;
  const KernelKey key = test_key("source A");
  {
    KernelCache cache(dir.string());
    EXPECT_TRUE(cache.store().on_disk());
    const CacheResult first = cache.get_or_compile(key, compiler.returning("A"));
    EXPECT_EQ(first.source, KernelSource::Compiled);
    EXPECT_EQ(first.compile_ms, 1.5);
    EXPECT_EQ(*first.cubin, elf_bytes("A"));
    const CacheResult second = cache.get_or_compile(key, compiler.returning("A"));
    EXPECT_EQ(second.source, KernelSource::Memory);
    EXPECT_EQ(second.cubin, first.cubin);
  }
  KernelCache reopened(dir.string());
  const CacheResult third = reopened.get_or_compile(key, compiler.returning("A"));
  EXPECT_EQ(third.source, KernelSource::Disk);
  EXPECT_EQ(*third.cubin, elf_bytes("A"));
  EXPECT_EQ(third.compile_ms, 0);
  EXPECT_EQ(compiler.calls, 1);
  fs::remove_all(dir);
}

TEST(KernelCache, EveryKeyColumnSeparatesEntries) {
  const fs::path dir = fresh_dir("columns");
  FakeCompiler compiler;
  KernelCache cache(dir.string());
  const KernelKey base = test_key("source A");
  KernelKey other_library = base;
  other_library.library_version = "0.0.0-other";
  KernelKey other_nvrtc = base;
  other_nvrtc.nvrtc_version = "11.0";
  KernelKey other_schema = base;
  other_schema.schema_version = kSchemaVersion + 1;
  KernelKey other_template = base;
  other_template.template_name = "other.cu";
  const std::vector<KernelKey> keys = {base, test_key("source B"), test_key("source A", "sm_80"),
                                       test_key("source A", "sm_90", "--use_fast_math -default-device -std=c++17"),
                                       other_library, other_nvrtc, other_schema, other_template};
  for (size_t i = 0; i < keys.size(); ++i) {
    const CacheResult r = cache.get_or_compile(keys[i], compiler.returning(std::to_string(i)));
    EXPECT_EQ(r.source, KernelSource::Compiled) << keys[i].to_string();
    EXPECT_EQ(*r.cubin, elf_bytes(std::to_string(i)));
  }
  EXPECT_EQ(compiler.calls, int(keys.size()));
  EXPECT_EQ(cache_stats(dir.string()).entries, int64_t(keys.size()));
  fs::remove_all(dir);
}

// Writes a database that is ours, with one kernel in it.
void write_valid_cache(const fs::path& dir) {
  FakeCompiler compiler;
  KernelCache cache(dir.string());
  for (int i = 0; i < 50; ++i) cache.get_or_compile(test_key("filler " + std::to_string(i)), compiler.returning(std::string(3000, 'x')));
}

void expect_recovers(const fs::path& dir, const std::string& what) {
  testing::internal::CaptureStderr();
  FakeCompiler compiler;
  {
    KernelCache cache(dir.string());
    const CacheResult r = cache.get_or_compile(test_key("after " + what), compiler.returning("fresh"));
    EXPECT_EQ(r.source, KernelSource::Compiled) << what;
    EXPECT_EQ(*r.cubin, elf_bytes("fresh"));
    EXPECT_TRUE(cache.store().on_disk()) << what;
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_warnings(err), 1) << what << ": " << err;
  EXPECT_NE(err.find("moved it to"), std::string::npos) << err;
  EXPECT_EQ(moved_aside(dir).size(), 1u) << what;
  // The fresh database works and kept the new kernel.
  KernelCache reopened(dir.string());
  EXPECT_EQ(reopened.get_or_compile(test_key("after " + what), compiler.returning("fresh")).source, KernelSource::Disk);
  EXPECT_EQ(compiler.calls, 1);
}

TEST(Corruption, TruncatedDatabaseIsMovedAside) {
  const fs::path dir = fresh_dir("truncated");
  write_valid_cache(dir);
  const fs::path db = database_path(dir.string());
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
  ASSERT_GT(fs::file_size(db), 20000u);
  fs::resize_file(db, 1000);
  expect_recovers(dir, "truncated");
  fs::remove_all(dir);
}

// With the header and schema intact but later pages overwritten, the damage shows only when
// a lookup reaches a bad page; the store recovers then.
TEST(Corruption, DamageFoundDuringALookupIsMovedAside) {
  const fs::path dir = fresh_dir("damaged-late");
  write_valid_cache(dir);
  const fs::path db = database_path(dir.string());
  fs::remove(db.string() + "-wal");
  fs::remove(db.string() + "-shm");
  const auto size = fs::file_size(db);
  {
    std::fstream file(db, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(12 * 4096);
    file << std::string(size - 12 * 4096, '\xff');
  }
  testing::internal::CaptureStderr();
  FakeCompiler compiler;
  KernelCache cache(dir.string());
  for (int i = 0; i < 50; ++i) {
    const CacheResult r = cache.get_or_compile(test_key("filler " + std::to_string(i)), compiler.returning("again"));
    EXPECT_FALSE(r.cubin->empty());
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_warnings(err), 1) << err;
  EXPECT_EQ(moved_aside(dir).size(), 1u);
  EXPECT_TRUE(cache.store().on_disk());
  EXPECT_TRUE(cache_verify(dir.string()).ok);
  fs::remove_all(dir);
}

TEST(Corruption, GarbageFileIsMovedAside) {
  const fs::path dir = fresh_dir("garbage");
  std::ofstream(database_path(dir.string()), std::ios::binary) << std::string(8192, '\x5a') << "not a database";
  expect_recovers(dir, "garbage");
  fs::remove_all(dir);
}

TEST(Corruption, ForeignSqliteDatabaseIsMovedAside) {
  const fs::path dir = fresh_dir("foreign");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(database_path(dir.string()).c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE photos (id INTEGER, path TEXT); INSERT INTO photos VALUES (1, 'a.jpg')",
                         nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_recovers(dir, "foreign");
  // The other application's data is still there, under the new name.
  ASSERT_EQ(sqlite3_open(moved_aside(dir)[0].c_str(), &db), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT path FROM photos", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "a.jpg");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  fs::remove_all(dir);
}

TEST(Location, EnvironmentOrder) {
  {
    ScopedEnv cache_dir("SPARSEJIT_CACHE_DIR", "/some/where");
    EXPECT_EQ(default_cache_dir(), std::optional<std::string>("/some/where"));
  }
  {
    ScopedEnv cache_dir("SPARSEJIT_CACHE_DIR", "");
    EXPECT_EQ(default_cache_dir(), std::nullopt);
  }
  {
    ScopedEnv cache_dir("SPARSEJIT_CACHE_DIR", nullptr);
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(default_cache_dir(), std::optional<std::string>("/xdg/sparsejit"));
    ScopedEnv no_xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", "/home/u");
    EXPECT_EQ(default_cache_dir(), std::optional<std::string>("/home/u/.cache/sparsejit"));
  }
  EXPECT_EQ(database_path("/d"), "/d/kernels-schema1.db");
}

TEST(KernelCache, EmptyCacheDirMeansMemoryOnly) {
  ScopedEnv cache_dir("SPARSEJIT_CACHE_DIR", "");
  FakeCompiler compiler;
  KernelCache cache(default_cache_dir());
  EXPECT_FALSE(cache.store().on_disk());
  EXPECT_EQ(cache.store().path(), ":memory:");
  EXPECT_EQ(cache.get_or_compile(test_key("m"), compiler.returning("m")).source, KernelSource::Compiled);
  EXPECT_EQ(cache.get_or_compile(test_key("m"), compiler.returning("m")).source, KernelSource::Memory);
  EXPECT_EQ(compiler.calls, 1);
}

TEST(KernelCache, UnusableDirectoryFallsBackToMemoryWithOneWarning) {
  const fs::path dir = fresh_dir("unusable");
  std::ofstream(dir / "file") << "a file where the cache directory should be";
  testing::internal::CaptureStderr();
  FakeCompiler compiler;
  KernelCache cache((dir / "file" / "sub").string());
  EXPECT_FALSE(cache.store().on_disk());
  EXPECT_EQ(*cache.get_or_compile(test_key("u"), compiler.returning("u")).cubin, elf_bytes("u"));
  EXPECT_EQ(count_warnings(testing::internal::GetCapturedStderr()), 1);
  fs::remove_all(dir);
}

TEST(KernelCache, ManyThreadsOneKeyCompileOnce) {
  const fs::path dir = fresh_dir("threads");
  FakeCompiler compiler;
  KernelCache cache(dir.string());
  const KernelKey key = test_key("shared");
  std::vector<CacheResult> results(16);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] { results[t] = cache.get_or_compile(key, compiler.returning("shared", 100)); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(compiler.calls, 1);
  int compiled = 0;
  for (const auto& r : results) {
    EXPECT_EQ(*r.cubin, elf_bytes("shared"));
    compiled += r.source == KernelSource::Compiled;
  }
  EXPECT_EQ(compiled, 1);
  fs::remove_all(dir);
}

TEST(KernelCache, CompileErrorReachesEveryWaiterAndIsNotCached) {
  KernelCache cache(std::nullopt);
  std::atomic<int> calls{0};
  const auto failing = [&]() -> CompiledBinary {
    ++calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    throw CompileError("bad kernel", "log", "source");
  };
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      try {
        cache.get_or_compile(test_key("bad"), failing);
      } catch (const CompileError&) {
        ++errors;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors, 4);
  EXPECT_EQ(calls, 1);
  FakeCompiler compiler;
  EXPECT_EQ(cache.get_or_compile(test_key("bad"), compiler.returning("ok")).source, KernelSource::Compiled);
}

TEST(KernelCache, EightProcessesShareOneDatabase) {
  const fs::path dir = fresh_dir("processes");
  constexpr int kWorkers = 8, kKeys = 12, kRecords = 5;
  std::vector<pid_t> pids;
  for (int w = 0; w < kWorkers; ++w) {
    const std::string id = std::to_string(w), keys = std::to_string(kKeys), records = std::to_string(kRecords);
    const std::string dir_arg = dir.string();
    char* argv[] = {const_cast<char*>(SPARSEJIT_CACHE_WORKER), const_cast<char*>(dir_arg.c_str()),
                    const_cast<char*>(id.c_str()), const_cast<char*>(keys.c_str()),
                    const_cast<char*>(records.c_str()), nullptr};
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, SPARSEJIT_CACHE_WORKER, nullptr, nullptr, argv, environ), 0);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker status " << status;
  }
  const CacheStats stats = cache_stats(dir.string());
  EXPECT_EQ(stats.entries, kKeys);
  EXPECT_EQ(stats.tuning_records, kWorkers * kRecords);
  // Each key was stored once; later workers found it on disk, so hits = requests - 1 per key
  // unless a worker compiled a key concurrently with another (then its INSERT was ignored).
  EXPECT_LE(stats.hits, (kWorkers - 1) * kKeys);
  const VerifyReport verify = cache_verify(dir.string());
  EXPECT_TRUE(verify.ok) << (verify.problems.empty() ? "" : verify.problems[0]);
  EXPECT_EQ(verify.entries_checked, kKeys);

  CacheStore store(dir.string());
  const DeviceKey device{"Test GPU", 90, 13000, "test"};
  const auto bucket0 = store.find_tuning_records(device, "spmm", "bucket0");
  EXPECT_EQ(bucket0.size(), size_t(kWorkers * 2));  // records 0 and 3 of each worker
  for (const auto& r : bucket0) EXPECT_TRUE(r.checked);
  fs::remove_all(dir);
}

TEST(CacheStore, TuningRecordsAndModelsRoundTrip) {
  const fs::path dir = fresh_dir("tuning");
  const DeviceKey h100{"NVIDIA H100", 90, 13000, "0.1.0"};
  const DeviceKey other_driver{"NVIDIA H100", 90, 12080, "0.1.0"};
  {
    CacheStore store(dir.string());
    store.insert_tuning_record({h100, "sddmm", "k64", "flat", {{"group_size", 8}}, 2.5, true, 0});
    store.insert_tuning_record({h100, "sddmm", "k64", "flat", {{"group_size", 16}}, 1.25, true, 0});
    store.insert_tuning_record({other_driver, "sddmm", "k64", "flat", {{"group_size", 4}}, 0.5, true, 0});
    store.put_model({"sddmm_tree", 1, h100, {{"leaf", "flat"}}, 0});
    store.put_model({"sddmm_tree", 2, h100, {{"leaf", "tiled"}}, 0});
  }
  CacheStore store(dir.string());
  const auto records = store.find_tuning_records(h100, "sddmm", "k64");
  ASSERT_EQ(records.size(), 2u);  // the other driver's record is not for this device key
  EXPECT_EQ(records[0].params.at("group_size"), 16);  // fastest first
  EXPECT_EQ(records[0].time_ms, 1.25);
  EXPECT_GT(records[0].created, 0);
  EXPECT_EQ(store.all_tuning_records().size(), 3u);
  const auto model = store.find_model("sddmm_tree", h100);
  ASSERT_TRUE(model.has_value());
  EXPECT_EQ(model->version, 2);
  EXPECT_EQ(model->json.at("leaf"), "tiled");
  EXPECT_FALSE(store.find_model("sddmm_tree", other_driver).has_value());
  fs::remove_all(dir);
}

TEST(Management, StatsListVerifyPruneClear) {
  const fs::path dir = fresh_dir("manage");
  EXPECT_FALSE(cache_stats(dir.string()).exists);
  FakeCompiler compiler;
  KernelKey stale = test_key("stale");
  stale.nvrtc_version = "11.8";
  {
    KernelCache cache(dir.string());
    cache.get_or_compile(test_key("one"), compiler.returning("1111"));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    cache.get_or_compile(test_key("two"), compiler.returning("2222"));
    cache.get_or_compile(stale, compiler.returning("stale"));
  }
  KernelCache(dir.string()).get_or_compile(test_key("one"), compiler.returning("1111"));  // a disk hit

  const CacheStats stats = cache_stats(dir.string());
  EXPECT_TRUE(stats.exists);
  EXPECT_EQ(stats.path, database_path(dir.string()));
  EXPECT_EQ(stats.entries, 3);
  EXPECT_EQ(stats.bytes, 3 * 64 + 4 + 4 + 5);  // an ELF header each, and the tags
  EXPECT_EQ(stats.hits, 1);
  EXPECT_GT(stats.file_bytes, 0);

  // Listing against the current context names the column that keeps the stale entry out.
  const auto entries = cache_list(dir.string(), current_key_context(90));
  ASSERT_EQ(entries.size(), 3u);
  int mismatched = 0;
  for (const auto& e : entries) {
    if (e.key == stale) {
      ASSERT_EQ(e.mismatches.size(), 1u);
      EXPECT_NE(e.mismatches[0].find("nvrtc_version: entry '11.8'"), std::string::npos) << e.mismatches[0];
      ++mismatched;
    } else {
      EXPECT_TRUE(e.mismatches.empty());
    }
  }
  EXPECT_EQ(mismatched, 1);
  EXPECT_EQ(cache_list(dir.string(), test_key("two", "sm_80"))[0].mismatches.size() > 0, true);

  EXPECT_TRUE(cache_verify(dir.string()).ok);
  {
    KernelCache cache(dir.string());
    cache.get_or_compile(test_key("not elf"), [] { return CompiledBinary{{'n', 'o', 'p', 'e'}, 1}; });
  }
  const VerifyReport bad = cache_verify(dir.string());
  EXPECT_FALSE(bad.ok);
  ASSERT_EQ(bad.problems.size(), 1u);
  EXPECT_NE(bad.problems[0].find("without ELF magic"), std::string::npos) << bad.problems[0];

  // Prune: the stale NVRTC version and the damaged cubin go; then a byte budget keeps the
  // most recently used ("one", hit on disk last).
  PruneOptions by_version;
  PruneReport pruned = cache_prune(dir.string(), by_version);
  EXPECT_EQ(pruned.removed, 2);
  EXPECT_EQ(pruned.damaged, 1);
  EXPECT_EQ(pruned.bytes_freed, 64 + 5 + 4);
  EXPECT_TRUE(cache_verify(dir.string()).ok);
  PruneOptions by_budget;
  by_budget.max_bytes = 68;
  pruned = cache_prune(dir.string(), by_budget);
  EXPECT_EQ(pruned.removed, 1);
  const auto left = cache_list(dir.string());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].key, test_key("one"));

  EXPECT_EQ(cache_clear(dir.string()), 1);
  EXPECT_EQ(cache_stats(dir.string()).entries, 0);
  fs::remove_all(dir);
}

TEST(Management, PruneByAge) {
  const fs::path dir = fresh_dir("age");
  FakeCompiler compiler;
  {
    KernelCache cache(dir.string());
    cache.get_or_compile(test_key("old"), compiler.returning("old"));
  }
  PruneOptions keep;
  keep.older_than_days = 1;
  EXPECT_EQ(cache_prune(dir.string(), keep).removed, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  PruneOptions all;
  all.older_than_days = 0.0000001;  // about 9 ms
  EXPECT_EQ(cache_prune(dir.string(), all).removed, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sparsejit::cache
