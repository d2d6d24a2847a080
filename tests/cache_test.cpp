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
#include <set>
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
using json = nlohmann::json;
using test::run_sql;

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
    const std::string prefix = fs::path(database_path(dir.string())).filename().string() + ".corrupt-";
    if (name.find(prefix) == 0 && name.find("-wal") == std::string::npos) out.push_back(e.path());
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

// holds answers without compiling: false for a key never compiled, true once it is, and true in
// a new cache over the same directory, whose next lookup is then a memory hit.
TEST(KernelCache, HoldsSaysWhetherALookupWouldCompile) {
  const fs::path dir = fresh_dir("holds");
  FakeCompiler compiler;
  const KernelKey key = test_key("source H");
  {
    KernelCache cache(dir.string());
    EXPECT_FALSE(cache.holds(key));
    cache.get_or_compile(key, compiler.returning("H"));
    EXPECT_TRUE(cache.holds(key));
    EXPECT_FALSE(cache.holds(test_key("source never compiled")));
  }
  KernelCache reopened(dir.string());
  EXPECT_TRUE(reopened.holds(key));
  const CacheResult found = reopened.get_or_compile(key, compiler.returning("H"));
  EXPECT_EQ(found.source, KernelSource::Memory);
  EXPECT_EQ(*found.cubin, elf_bytes("H"));
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
  EXPECT_EQ(database_path("/d"), "/d/kernels-schema" + std::to_string(kSchemaVersion) + ".db");
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

// Spawns cache_worker with `args` after the worker's path; its pid.
pid_t spawn_worker(const std::vector<std::string>& args) {
  std::vector<char*> argv = {const_cast<char*>(SPARSEJIT_CACHE_WORKER)};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  EXPECT_EQ(posix_spawn(&pid, SPARSEJIT_CACHE_WORKER, nullptr, nullptr, argv.data(), environ), 0);
  return pid;
}

int exit_status(pid_t pid) {
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + status;
}

TEST(KernelCache, EightProcessesShareOneDatabase) {
  const fs::path dir = fresh_dir("processes");
  constexpr int kWorkers = 8, kKeys = 12, kRecords = 5;
  std::vector<pid_t> pids;
  for (int w = 0; w < kWorkers; ++w)
    pids.push_back(spawn_worker({dir.string(), std::to_string(w), std::to_string(kKeys), std::to_string(kRecords)}));
  // 0: every binary matched and each worker found every measured selection it stored.
  for (pid_t pid : pids) EXPECT_EQ(exit_status(pid), 0);
  const CacheStats stats = cache_stats(dir.string());
  EXPECT_EQ(stats.entries, kKeys);
  EXPECT_EQ(stats.tuning_records, 2 * kWorkers * kRecords);
  EXPECT_EQ(stats.measured_records, kWorkers * kRecords);
  // Each key was stored once; later workers found it on disk, so hits = requests - 1 per key
  // unless a worker compiled a key concurrently with another (then its INSERT was ignored).
  EXPECT_LE(stats.hits, (kWorkers - 1) * kKeys);
  const VerifyReport verify = cache_verify(dir.string());
  EXPECT_TRUE(verify.ok) << (verify.problems.empty() ? "" : verify.problems[0]);
  EXPECT_EQ(verify.entries_checked, kKeys);

  CacheStore store(dir.string());
  const DeviceKey device{"Test GPU", 90, 13000, "test", 132};
  const auto bucket0 = store.find_tuning_records(device, "spmm", "bucket0");
  EXPECT_EQ(bucket0.size(), size_t(kWorkers * 2));  // records 0 and 3 of each worker
  for (const auto& r : bucket0) EXPECT_TRUE(r.checked);
  // No measured selection was lost or mixed up: every worker's is found again from here.
  std::set<std::string> patterns;
  for (const TuningRecord& r : store.measured_records()) patterns.insert(r.fingerprint);
  EXPECT_EQ(patterns.size(), size_t(kWorkers * kRecords));
  for (int w = 0; w < kWorkers; ++w)
    EXPECT_EQ(exit_status(spawn_worker({dir.string(), std::to_string(w), "0", std::to_string(kRecords), "--lookup-only"})), 0);
  fs::remove_all(dir);
}

// A cache on a read-only mount (a prebuilt or shared cache): measured selections are found,
// and storing one is skipped without a warning or a failure.
TEST(KernelCache, ReadOnlyCacheFindsMeasuredSelectionsAndStoresNone) {
  if (std::system("unshare -m true >/dev/null 2>&1") != 0) GTEST_SKIP() << "cannot make a private read-only mount here";
  const fs::path dir = fresh_dir("read-only-records");
  ASSERT_EQ(exit_status(spawn_worker({dir.string(), "0", "0", "2"})), 0);
  const std::string log = (fs::path(test::fresh_dir("read-only-log")) / "stderr").string();
  const std::string command = "unshare -m sh -c 'mount --bind \"$0\" \"$0\" && mount -o remount,ro,bind \"$0\" && exec \"$@\"' '" +
                              dir.string() + "' '" + SPARSEJIT_CACHE_WORKER + "' '" + dir.string() + "' 0 0 2 --lookup-only 2>'" +
                              log + "'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream in(log);
  const std::string err((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(count_warnings(err), 0) << err;
  EXPECT_EQ(cache_stats(dir.string()).measured_records, 2);  // the third was not stored
  fs::remove_all(dir);
  fs::remove_all(fs::path(log).parent_path());
}

TuningRecord tune_record(const DeviceKey& device, int group_size, double ms) {
  TuningRecord r;
  r.device = device;
  r.op = "sddmm";
  r.feature_bucket = "k64";
  r.variant = "flat";
  r.params = {{"group_size", group_size}};
  r.time_ms = ms;
  r.checked = true;
  return r;
}

TEST(CacheStore, TuningRecordsAndModelsRoundTrip) {
  const fs::path dir = fresh_dir("tuning");
  const DeviceKey h100{"NVIDIA H100", 90, 13000, "0.1.0", 132};
  const DeviceKey other_driver{"NVIDIA H100", 90, 12080, "0.1.0", 132};
  {
    CacheStore store(dir.string());
    store.insert_tuning_record(tune_record(h100, 8, 2.5));
    store.insert_tuning_record(tune_record(h100, 16, 1.25));
    store.insert_tuning_record(tune_record(other_driver, 4, 0.5));
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
  DeviceKey fewer_sms = h100;
  fewer_sms.multiprocessors = 66;  // a MIG slice of the same part
  EXPECT_FALSE(store.find_model("sddmm_tree", fewer_sms).has_value());
  EXPECT_TRUE(store.find_tuning_records(fewer_sms, "sddmm", "k64").empty());
  fs::remove_all(dir);
}

const DeviceKey kH200{"NVIDIA H200", 90, 13000, "0.3.0", 132};

// A measured selection of pattern `fingerprint`: the choice "b" among three timed settings.
TuningRecord measured_record(const std::string& fingerprint, const std::string& model_version = "spmm-default v7 abc") {
  TuningRecord r;
  r.kind = RecordKind::Measured;
  r.device = kH200;
  r.op = "spmm";
  r.feature_bucket = "spmm f32 k128";
  r.fingerprint = fingerprint;
  r.plan_key = "plan:spmm:f32:k128:n:ld4";
  r.model_version = model_version;
  r.variant = "b";
  r.params = {{"warps", 4}};
  r.time_ms = 0.5;
  r.features = {{"nnz", 12345}, {"k", 128}, {"value_bytes", 4}};
  r.timings = {{{"variant", "a"}, {"params", json::object()}, {"ms", 0.9}, {"predicted_ms", 0.7}, {"terms", {{"launch", 1}}}},
               {{"variant", "b"}, {"params", {{"warps", 4}}}, {"ms", 0.5}, {"predicted_ms", 0.8}, {"terms", {{"launch", 1}}}},
               {{"variant", "c"}, {"params", json::object()}, {"ms", nullptr}, {"predicted_ms", nullptr}, {"terms", json::object()}}};
  return r;
}

MeasuredKey key_of(const TuningRecord& r) { return {r.device, r.fingerprint, r.plan_key, r.model_version}; }

TEST(MeasuredRecords, StoreAndLookUpRoundTrip) {
  const fs::path dir = fresh_dir("measured");
  const TuningRecord stored = measured_record("0x00000000000000aa");
  {
    CacheStore store(dir.string());
    store.insert_tuning_record(tune_record(kH200, 8, 2.5));
    store.insert_tuning_record(stored);
  }
  CacheStore store(dir.string());  // another process's view: read back from the file
  const auto found = store.find_measured_record(key_of(stored));
  ASSERT_TRUE(found.has_value());
  EXPECT_EQ(found->kind, RecordKind::Measured);
  EXPECT_EQ(found->device, kH200);
  EXPECT_EQ(found->variant, "b");
  EXPECT_EQ(found->params, stored.params);
  EXPECT_EQ(found->time_ms, 0.5);
  EXPECT_EQ(found->features, stored.features);
  EXPECT_EQ(found->timings, stored.timings);
  EXPECT_TRUE(found->timings[2]["ms"].is_null());  // the setting that did not run
  EXPECT_GT(found->created, 0);
  // The two kinds stay apart: bucket lookups see tune records only.
  EXPECT_EQ(store.find_tuning_records(kH200, "sddmm", "k64").size(), 1u);
  EXPECT_TRUE(store.find_tuning_records(kH200, "spmm", "spmm f32 k128").empty());
  EXPECT_EQ(store.measured_records().size(), 1u);
  EXPECT_EQ(store.device_records(kH200, "spmm").size(), 1u);

  // Measured again (two processes at once, or after a prune): the newest is found.
  TuningRecord newer = stored;
  newer.variant = "a";
  newer.created = found->created + 1000;
  store.insert_tuning_record(newer);
  EXPECT_EQ(store.find_measured_record(key_of(stored))->variant, "a");
  fs::remove_all(dir);
}

// A record keyed by another library, driver, device (name, arch or SM count), model, pattern
// or problem is never found: stale records are ignored, not misapplied.
TEST(MeasuredRecords, AnotherKeyIsNeverFound) {
  const fs::path dir = fresh_dir("measured-stale");
  CacheStore store(dir.string());
  const TuningRecord stored = measured_record("0x00000000000000bb");
  store.insert_tuning_record(stored);
  ASSERT_TRUE(store.find_measured_record(key_of(stored)).has_value());
  std::vector<std::pair<std::string, MeasuredKey>> others;
  const auto with = [&](const std::string& what, const std::function<void(MeasuredKey&)>& change) {
    MeasuredKey key = key_of(stored);
    change(key);
    others.emplace_back(what, key);
  };
  with("library", [](MeasuredKey& k) { k.device.library_version = "0.4.0"; });
  with("driver", [](MeasuredKey& k) { k.device.driver_version = 12080; });
  with("device name", [](MeasuredKey& k) { k.device.device_name = "NVIDIA H100"; });
  with("arch", [](MeasuredKey& k) { k.device.compute_capability = 100; });
  with("SM count", [](MeasuredKey& k) { k.device.multiprocessors = 66; });
  with("model", [](MeasuredKey& k) { k.model_version = "spmm-tuned-NVIDIA-H200 v1 def"; });
  with("pattern", [](MeasuredKey& k) { k.fingerprint = "0x00000000000000bc"; });
  with("problem", [](MeasuredKey& k) { k.plan_key = "plan:spmm:f32:k64:n:ld4"; });
  for (const auto& [what, key] : others) EXPECT_FALSE(store.find_measured_record(key).has_value()) << what;
  fs::remove_all(dir);
}

// Rows whose JSON does not parse (or has the wrong shape) are skipped by every lookup, with one
// warning however many there are and however often they are met; the readable record of the
// same key is still found, and prune removes the unreadable ones.
TEST(MeasuredRecords, UnreadableRowsAreSkippedWithOneWarning) {
  const fs::path dir = fresh_dir("measured-corrupt");
  const TuningRecord good = measured_record("0x00000000000000cc");
  CacheStore(dir.string()).insert_tuning_record(good);
  const std::string later = "(SELECT max(created) + 1 FROM tuning_records)";
  for (const char* damage : {"timings_json = '[{\"variant\": '", "features_json = 'not json'",
                                     "timings_json = '[{\"ms\": 1}]'", "params_json = '[1, 2]'"})
    run_sql(database_path(dir.string()),
            "INSERT INTO tuning_records (kind, device_name, compute_capability, multiprocessors, driver_version, "
            "library_version, op, feature_bucket, variant, params_json, time_ms, checked, created, fingerprint, plan_key, "
            "model_version, features_json, timings_json) SELECT kind, device_name, compute_capability, multiprocessors, "
            "driver_version, library_version, op, feature_bucket, variant, params_json, time_ms, checked, " + later +
            ", fingerprint, plan_key, model_version, features_json, timings_json FROM tuning_records LIMIT 1; "
            "UPDATE tuning_records SET " + std::string(damage) + " WHERE id = (SELECT max(id) FROM tuning_records)");
  testing::internal::CaptureStderr();
  {
    CacheStore store(dir.string());
    for (int lookup = 0; lookup < 3; ++lookup) {
      const auto found = store.find_measured_record(key_of(good));
      ASSERT_TRUE(found.has_value());
      EXPECT_EQ(found->timings, good.timings);  // the newer rows are the damaged ones
    }
    EXPECT_EQ(store.measured_records().size(), 1u);
    EXPECT_EQ(store.device_records(kH200, "spmm").size(), 1u);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_warnings(err), 1) << err;
  EXPECT_NE(err.find("skipping unreadable tuning records"), std::string::npos) << err;
  EXPECT_EQ(cache_stats(dir.string()).measured_records, 5);
  PruneOptions keep_current;
  keep_current.records = RecordContext{};  // judges nothing: only the unreadable rows go
  testing::internal::CaptureStderr();
  EXPECT_EQ(cache_prune(dir.string(), keep_current).records_removed, 4);
  testing::internal::GetCapturedStderr();
  EXPECT_EQ(cache_stats(dir.string()).measured_records, 1);
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

// One measured selection per way of going stale, and a current one.
struct StaleCase {
  std::string why;  // the start of record_staleness's reason; "" for the current record
  TuningRecord record;
};
std::vector<StaleCase> stale_cases() {
  const auto changed = [](const std::string& fingerprint, const std::function<void(TuningRecord&)>& change) {
    TuningRecord r = measured_record(fingerprint);
    change(r);
    return r;
  };
  return {{"", measured_record("0x0000000000000001")},
          {"library_version: record '0.2.0', this build '0.3.0'",
           changed("0x0000000000000002", [](TuningRecord& r) { r.device.library_version = "0.2.0"; })},
          {"driver_version: record 12080, this GPU's driver 13000",
           changed("0x0000000000000003", [](TuningRecord& r) { r.device.driver_version = 12080; })},
          {"device: no GPU here is NVIDIA H100 (sm_90, 132 SMs)",
           changed("0x0000000000000004", [](TuningRecord& r) { r.device.device_name = "NVIDIA H100"; })},
          {"device: no GPU here is NVIDIA H200 (sm_90, 66 SMs)",
           changed("0x0000000000000005", [](TuningRecord& r) { r.device.multiprocessors = 66; })},
          {"model_version: record 'spmm-default v6 old', spmm plans with 'spmm-default v7 abc'",
           changed("0x0000000000000006", [](TuningRecord& r) { r.model_version = "spmm-default v6 old"; })}};
}

// This process has one H200 whose SpMM planner uses model "spmm-default v7 abc".
RecordContext h200_context() {
  return {kH200.library_version, std::vector<RecordContext::Device>{{kH200, {{"spmm", "spmm-default v7 abc"}}}}};
}

TEST(MeasuredRecords, StalenessNamesEachReason) {
  for (const StaleCase& c : stale_cases()) {
    RecordEntry entry;
    entry.device = c.record.device;
    entry.op = c.record.op;
    entry.model_version = c.record.model_version;
    const std::vector<std::string> reasons = record_staleness(entry, h200_context());
    if (c.why.empty()) {
      EXPECT_TRUE(reasons.empty()) << reasons[0];
    } else {
      ASSERT_EQ(reasons.size(), 1u) << c.why;
      EXPECT_EQ(reasons[0], c.why);
    }
    // Without a GPU in sight only the library version can be judged.
    const RecordContext no_gpu{kH200.library_version, std::nullopt};
    EXPECT_EQ(record_staleness(entry, no_gpu).empty(), c.why.rfind("library_version", 0) != 0) << c.why;
  }
}

TEST(Management, ListAndPruneStaleMeasuredRecords) {
  const fs::path dir = fresh_dir("records");
  {
    CacheStore store(dir.string());
    for (const StaleCase& c : stale_cases()) store.insert_tuning_record(c.record);
    store.insert_tuning_record(tune_record(kH200, 8, 2.5));  // install-time records are not judged
  }
  const std::vector<RecordEntry> listed = cache_records(dir.string(), h200_context());
  ASSERT_EQ(listed.size(), stale_cases().size());
  for (const RecordEntry& e : listed) {
    for (const StaleCase& c : stale_cases()) {
      if (c.record.fingerprint != e.fingerprint) continue;
      EXPECT_EQ(e.stale.empty() ? "" : e.stale[0], c.why);
      EXPECT_EQ(e.variant, "b");
      EXPECT_EQ(e.timed, 3);
      EXPECT_EQ(e.plan_key, "plan:spmm:f32:k128:n:ld4");
    }
  }
  // The default judges the library version only: this build is 0.3.0 here.
  PruneOptions library_only;
  library_only.records = RecordContext{kH200.library_version, std::nullopt};
  EXPECT_EQ(cache_prune(dir.string(), library_only).records_removed, 1);
  PruneOptions with_gpu;
  with_gpu.records = h200_context();
  EXPECT_EQ(cache_prune(dir.string(), with_gpu).records_removed, 4);
  const std::vector<RecordEntry> left = cache_records(dir.string(), h200_context());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].fingerprint, "0x0000000000000001");
  EXPECT_EQ(cache_stats(dir.string()).tuning_records, 2);
  PruneOptions keep;
  keep.records = std::nullopt;  // --keep-mismatched
  TuningRecord other = measured_record("0x0000000000000007");
  other.device.library_version = "0.0.1";
  CacheStore(dir.string()).insert_tuning_record(other);
  EXPECT_EQ(cache_prune(dir.string(), keep).records_removed, 0);
  // clear --tuning takes the measured selections with the rest.
  cache_clear(dir.string(), /*include_tuning=*/true);
  EXPECT_EQ(cache_stats(dir.string()).tuning_records, 0);
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
