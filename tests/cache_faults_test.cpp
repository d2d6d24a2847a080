// Issue 27's cache probes as tests: another build's schema is left alone, a damaged cubin is a
// miss and is compiled again, a disk that fills up or a writer killed mid-transaction loses
// nothing that was committed and fails no call, and prune salvages and removes what damage
// left behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "base/sha256.hpp"
#include "cache/kernel_cache.hpp"
#include "sparsejit/cache.hpp"
#include "support/fake_cubin.hpp"
#include "support/test_support.hpp"

namespace sparsejit::cache {
namespace {

namespace fs = std::filesystem;

KernelKey key_of(const std::string& source) {
  KernelKey key = current_key_context(90);
  key.template_name = "faults.cu";
  key.source_sha256 = sha256_hex(source);
  key.options = "-default-device -std=c++17";
  return key;
}

// A compile function that counts its calls and returns fake_cubin(tag).
struct CountingCompiler {
  int calls = 0;
  std::function<CompiledBinary()> returning(const std::string& tag) {
    return [this, tag] {
      ++calls;
      return CompiledBinary{test::fake_cubin(tag), 1.0};
    };
  }
};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

using test::run_sql;

int64_t count_kernels(const std::string& dir) { return cache_stats(dir).entries; }

// Two builds share ~/.cache: each schema has its own file, and a file of another schema under
// our name (copied by hand) is left as it is, not moved aside as damage.
TEST(CacheSchemas, OtherSchemasKeepTheirFiles) {
  const fs::path dir = test::fresh_dir("schemas");
  const fs::path legacy = dir / "kernels.db", newer = dir / ("kernels-schema" + std::to_string(kSchemaVersion + 1) + ".db");
  std::ofstream(legacy, std::ios::binary) << "the database of a build before per-schema files";
  std::ofstream(newer, std::ios::binary) << "the database of a newer build";
  CountingCompiler compiler;
  {
    KernelCache cache(dir.string());
    EXPECT_EQ(cache.get_or_compile(key_of("a"), compiler.returning("a")).source, KernelSource::Compiled);
  }
  EXPECT_EQ(KernelCache(dir.string()).get_or_compile(key_of("a"), compiler.returning("a")).source, KernelSource::Disk);
  EXPECT_EQ(read_file(legacy), "the database of a build before per-schema files");
  EXPECT_EQ(read_file(newer), "the database of a newer build");
  EXPECT_TRUE(fs::exists(database_path(dir.string())));
  fs::remove_all(dir);
}

TEST(CacheSchemas, AnotherSchemaVersionInOurFileIsLeftAloneWithOneWarning) {
  const fs::path dir = test::fresh_dir("schema-inside");
  CountingCompiler compiler;
  KernelCache(dir.string()).get_or_compile(key_of("kept"), compiler.returning("kept"));
  const std::string db = database_path(dir.string());
  run_sql(db, "UPDATE meta SET value = '7' WHERE key = 'schema_version'");
  testing::internal::CaptureStderr();
  {
    KernelCache cache(dir.string());
    EXPECT_FALSE(cache.store().on_disk());
    EXPECT_EQ(cache.get_or_compile(key_of("new"), compiler.returning("new")).source, KernelSource::Compiled);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("schema_version 7"), std::string::npos) << err;
  EXPECT_EQ(err.find("moved"), std::string::npos) << err;
  for (const auto& entry : fs::directory_iterator(dir))
    EXPECT_EQ(entry.path().filename().string().find(".corrupt-"), std::string::npos) << entry.path();
  run_sql(db, "UPDATE meta SET value = '" + std::to_string(kSchemaVersion) + "' WHERE key = 'schema_version'");
  EXPECT_EQ(count_kernels(dir.string()), 1);  // the file kept its kernel
  fs::remove_all(dir);
}

// A cubin cut short or zeroed in the database used to be handed to the driver ("disk,
// loaded"); now it is a miss, compiled again, and the fresh binary replaces it.
TEST(CacheDamage, DamagedCubinIsAMissAndIsReplaced) {
  for (const std::string damage : {"substr(cubin, 1, 40)", "zeroblob(length(cubin))", "x''"}) {
    const fs::path dir = test::fresh_dir("damaged-cubin");
    CountingCompiler compiler;
    KernelCache(dir.string()).get_or_compile(key_of("k"), compiler.returning("k"));
    run_sql(database_path(dir.string()), "UPDATE kernels SET cubin = " + damage);
    EXPECT_FALSE(cache_verify(dir.string()).ok) << damage;
    const CacheResult again = KernelCache(dir.string()).get_or_compile(key_of("k"), compiler.returning("k"));
    EXPECT_EQ(again.source, KernelSource::Compiled) << damage;
    EXPECT_EQ(*again.cubin, test::fake_cubin("k"));
    const CacheResult loaded = KernelCache(dir.string()).get_or_compile(key_of("k"), compiler.returning("k"));
    EXPECT_EQ(loaded.source, KernelSource::Disk) << damage;
    EXPECT_EQ(*loaded.cubin, test::fake_cubin("k"));
    EXPECT_EQ(compiler.calls, 2);
    EXPECT_TRUE(cache_verify(dir.string()).ok) << damage;
    fs::remove_all(dir);
  }
}

// A full disk, injected as SQLite's page limit: the insert fails with SQLITE_FULL, the call
// still returns its binary, and what was committed before is still there for the next process.
TEST(CacheFaults, DiskFullFailsNoCallAndLosesNothingCommitted) {
  const fs::path dir = test::fresh_dir("disk-full");
  CountingCompiler compiler;
  {
    KernelCache cache(dir.string());
    for (int i = 0; i < 5; ++i) cache.get_or_compile(key_of("before " + std::to_string(i)), compiler.returning("b"));
    cache.store().with_connection<bool>(
        [](Connection& c) {
          auto pages = c.prepare("PRAGMA page_count");
          pages.step();
          c.exec("PRAGMA max_page_count = " + std::to_string(pages.column_int(0)));
          return true;
        },
        false);
    testing::internal::CaptureStderr();
    const std::string big(200000, 'x');
    for (int i = 0; i < 3; ++i) {
      const CacheResult r = cache.get_or_compile(key_of("after " + std::to_string(i)), compiler.returning(big));
      EXPECT_EQ(r.source, KernelSource::Compiled);
      EXPECT_EQ(*r.cubin, test::fake_cubin(big));
    }
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("full"), std::string::npos) << err;
  }
  EXPECT_EQ(count_kernels(dir.string()), 5);
  EXPECT_TRUE(cache_verify(dir.string()).ok);
  KernelCache later(dir.string());
  EXPECT_EQ(later.get_or_compile(key_of("before 3"), compiler.returning("b")).source, KernelSource::Disk);
  fs::remove_all(dir);
}

pid_t spawn_worker(const std::string& dir, int worker, int keys, int records) {
  const std::string id = std::to_string(worker), k = std::to_string(keys), r = std::to_string(records);
  char* argv[] = {const_cast<char*>(SPARSEJIT_CACHE_WORKER), const_cast<char*>(dir.c_str()), const_cast<char*>(id.c_str()),
                  const_cast<char*>(k.c_str()), const_cast<char*>(r.c_str()), nullptr};
  pid_t pid = 0;
  return posix_spawn(&pid, SPARSEJIT_CACHE_WORKER, nullptr, nullptr, argv, environ) == 0 ? pid : -1;
}

int wait_status(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

// 100 writers killed with SIGKILL at random points, some inside a write transaction holding
// the lock: the database stays sound, no committed kernel is lost, and the next process
// neither fails nor waits on a lock the dead one held.
TEST(CacheFaults, WritersKilledMidTransactionLoseNothingCommitted) {
  const fs::path dir = test::fresh_dir("killed");
  constexpr int kKeys = 40, kRecords = 40;
  std::mt19937 random(test::fresh_seed());
  int64_t committed = 0;
  for (int round = 0; round < 100; ++round) {
    const pid_t pid = spawn_worker(dir.string(), round, kKeys, kRecords);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, 40000)(random)));
    kill(pid, SIGKILL);
    wait_status(pid);
    const int64_t now = count_kernels(dir.string());
    EXPECT_GE(now, committed) << "round " << round;
    committed = now;
  }
  EXPECT_TRUE(cache_verify(dir.string()).ok);
  const auto start = std::chrono::steady_clock::now();
  const int status = wait_status(spawn_worker(dir.string(), 0, kKeys, kRecords));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // no stale lock waited out
  EXPECT_EQ(count_kernels(dir.string()), kKeys);
  fs::remove_all(dir);
}

// A database moved aside as damaged keeps the tuning records SQLite can read: prune copies
// them into the cache, then removes the old file; younger moved-aside files stay.
TEST(CachePrune, SalvagesTuningRecordsThenRemovesOldMovedAsideFiles) {
  const fs::path dir = test::fresh_dir("salvage");
  {
    KernelCache cache(dir.string());
    TuningRecord record;
    record.device = {"Test GPU", 90, 13000, "test"};
    record.op = "spmm";
    record.feature_bucket = "b";
    record.variant = "rs";
    record.time_ms = 1.5;
    cache.store().insert_tuning_record(record);
  }
  const std::string db = database_path(dir.string());
  const std::string old = db + ".corrupt-1-1", young = db + ".corrupt-2-2";
  fs::rename(db, old);
  std::ofstream(young, std::ios::binary) << "not readable at all";
  fs::last_write_time(old, fs::file_time_type::clock::now() - std::chrono::hours(24 * 30));
  CountingCompiler compiler;
  KernelCache(dir.string()).get_or_compile(key_of("fresh"), compiler.returning("fresh"));
  const PruneReport report = cache_prune(dir.string(), PruneOptions{});
  ASSERT_EQ(report.moved_aside_removed, std::vector<std::string>{old});
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(young));
  EXPECT_EQ(cache_stats(dir.string()).tuning_records, 1);
  EXPECT_EQ(cache_prune(dir.string(), PruneOptions{}).moved_aside_removed.size(), 0u);
  EXPECT_EQ(cache_stats(dir.string()).tuning_records, 1);
  fs::remove_all(dir);
}

// stats and verify used to answer "0 kernels" for a path that is a file or a folder that
// cannot be read.
TEST(CacheManagement, FolderThatIsAFileIsNamedNotEmpty) {
  const fs::path dir = test::fresh_dir("is-a-file");
  const fs::path file = dir / "cache";
  std::ofstream(file) << "a file";
  try {
    cache_stats(file.string());
    ADD_FAILURE() << "no exception";
  } catch (const IoError& e) {
    EXPECT_NE(std::string(e.what()).find(file.string() + " is not a directory"), std::string::npos) << e.what();
  }
  const VerifyReport report = cache_verify(file.string());
  EXPECT_FALSE(report.ok);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].find("is not a directory"), std::string::npos);
  const VerifyReport missing = cache_verify((dir / "none").string());
  EXPECT_TRUE(missing.ok);
  EXPECT_FALSE(missing.exists);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sparsejit::cache
