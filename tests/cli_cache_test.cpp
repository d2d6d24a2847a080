// `sparsejit info` and `sparsejit cache ...`, run as a user would: the kernels are compiled
// into a temporary cache by this process through the library, then the built CLI looks at that
// cache with --dir.
#include <cublas_v2.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/nvrtc_target.hpp"
#include "cache/cache_store.hpp"
#include "cache/kernel_cache.hpp"
#include "jit/compiler.hpp"
#include "models/model_store.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/device.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using test::run_cli;
using Result = test::CliResult;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

std::size_t count_of(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

std::size_t line_count(const std::string& text) { return std::size_t(std::count(text.begin(), text.end(), '\n')); }

// A directory removed with everything in it when the test ends.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = fs::temp_directory_path() /
            ("sparsejit_cli_cache_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  std::string quoted() const { return "'" + path_.string() + "'"; }

 private:
  fs::path path_;
};

// ---------------------------------------------------------------------------------------------
// info

TEST(CliInfo, PrintsVersionsDriverAndCache) {
  TempDir dir;
  const Result r = run_cli("info", "SPARSEJIT_CACHE_DIR=" + dir.quoted() + " SPARSEJIT_LOG=debug");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "nvrtc:     " + nvrtc_version() + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, std::string("sqlite:    ") + sqlite3_libversion() + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, std::string("zlib:      ") + zlibVersion() + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "cusparse:  ")) << r.out;
  EXPECT_FALSE(contains(r.out, "cusparseGetProperty failed")) << r.out;
  EXPECT_TRUE(contains(r.out, "cublas:    " + std::to_string(CUBLAS_VER_MAJOR) + "." + std::to_string(CUBLAS_VER_MINOR) + ".")) << r.out;
  // Whatever this machine has: each GPU, or the reason there is none.
  if (driver_available()) {
    EXPECT_TRUE(contains(r.out, "gpu " + to_string(device_info(0)))) << r.out;
  } else {
    EXPECT_TRUE(contains(r.out, "cuda driver: not available: " + driver_unavailable_reason())) << r.out;
  }
  EXPECT_TRUE(contains(r.out, "cache dir: " + dir.str() + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "cache db:  " + cache::database_path(dir.str()) + "\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  SPARSEJIT_LOG=debug\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "spmm_csr_rowwarp.cu")) << r.out;
}

TEST(CliInfo, JsonAgreesWithTheLibrary) {
  const Result r = run_cli("info --json", "SPARSEJIT_FORCE=spmm:rowwarp SPARSEJIT_CACHE_DIR=/tmp/somewhere");
  ASSERT_EQ(r.status, 0) << r.out;
  const json info = json::parse(r.out);
  EXPECT_EQ(info["nvrtc"], nvrtc_version());
  EXPECT_EQ(info["sqlite"], sqlite3_libversion());
  EXPECT_EQ(info["zlib"], zlibVersion());
  EXPECT_FALSE(info["sparsejit"].get<std::string>().empty());
  EXPECT_FALSE(info["build_type"].get<std::string>().empty());
  EXPECT_EQ(info["cuda_driver"]["available"], driver_available());
  EXPECT_EQ(info["cuda_driver"]["devices"].size(), std::size_t(device_count()));
  EXPECT_EQ(info["cache"]["dir"], "/tmp/somewhere");
  EXPECT_EQ(info["cache"]["database"], cache::database_path("/tmp/somewhere"));
  EXPECT_EQ(info["environment"], (json{{"SPARSEJIT_FORCE", "spmm:rowwarp"}, {"SPARSEJIT_CACHE_DIR", "/tmp/somewhere"}}));
  EXPECT_EQ(info["models"].get<std::vector<std::string>>(), models::shipped_model_names());
  const auto templates = info["templates"].get<std::vector<std::string>>();
  EXPECT_NE(std::find(templates.begin(), templates.end(), "sddmm_coo_flat.cu"), templates.end()) << r.out;
}

TEST(CliInfo, EmptyCacheDirMeansDisabled) {
  const Result r = run_cli("info", "SPARSEJIT_CACHE_DIR=");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "cache:     disabled (SPARSEJIT_CACHE_DIR is empty)\n")) << r.out;
}

// ---------------------------------------------------------------------------------------------
// cache

TEST(CliCache, StatsOnAnEmptyDirectory) {
  TempDir dir;
  const Result text = run_cli("cache stats --dir " + dir.quoted());
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_TRUE(contains(text.out, "entries:        0 kernels, 0 bytes")) << text.out;
  EXPECT_TRUE(contains(text.out, "(no database yet)")) << text.out;
  const Result j = run_cli("cache stats --json --dir " + dir.quoted());
  ASSERT_EQ(j.status, 0) << j.out;
  const json stats = json::parse(j.out);
  EXPECT_EQ(stats["entries"], 0);
  EXPECT_EQ(stats["exists"], false);
  EXPECT_EQ(stats["path"], cache::database_path(dir.str()));
}

TEST(CliCache, DisabledCacheNeedsDir) {
  const Result r = run_cli("cache stats", "SPARSEJIT_CACHE_DIR=");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_EQ(line_count(r.out), 1u) << r.out;
  EXPECT_TRUE(contains(r.out, "SPARSEJIT_CACHE_DIR")) << r.out;
}

// Two real kernels compiled once for sm_90 into a cache; each test works on its own copy.
// Compiled by the first test's SetUp, not in SetUpTestSuite: an exception there would leave
// every test "skipped" for ctest instead of failed.
class CliCacheWithKernels : public ::testing::Test {
 protected:
  static void compile_kernels() {
    source_ = std::make_unique<TempDir>();
    jit::Compiler compiler(source_->str());
    const jit::KernelSpec spmm{"spmm_csr_rowwarp.cu", "k1",
                               {{"value_t", "float"}, {"acc_t", "float"}, {"warps_per_block", 4},
                                {"cols_per_lane", 1}, {"fp16", false}, {"bf16", false}},
                               {}};
    const jit::KernelSpec sddmm{"sddmm_coo_flat.cu", "k2",
                                {{"value_t", "float"}, {"acc_t", "float"}, {"group_size", 32}, {"nnz_per_group", 1},
                                 {"block_size", 128}, {"vec4", false}, {"fp16", false}, {"bf16", false}},
                                {}};
    kernels_ = {compiler.get_kernel(spmm, 90), compiler.get_kernel(sddmm, 90)};
    // The Compiler (and its connection) goes away here, which folds the WAL into the database
    // file, so copying that one file copies the cache.
  }
  static void TearDownTestSuite() {
    kernels_.clear();
    source_.reset();
  }

  void SetUp() override {
    if (kernels_.empty()) compile_kernels();
    ASSERT_EQ(kernels_.size(), 2u);
    ASSERT_FALSE(fs::exists(cache::database_path(source_->str()) + "-wal"));
    fs::copy_file(cache::database_path(source_->str()), db());
  }

  std::string db() const { return cache::database_path(dir_.str()); }
  std::string with_dir(const std::string& args) const { return args + " --dir " + dir_.quoted(); }
  static int64_t cubin_bytes(std::size_t i) { return int64_t(kernels_[i].cubin->size()); }
  static std::string sha_prefix(std::size_t i) { return kernels_[i].key.source_sha256.substr(0, 12); }

  static std::unique_ptr<TempDir> source_;
  static std::vector<jit::CompiledKernel> kernels_;
  TempDir dir_;
};
std::unique_ptr<TempDir> CliCacheWithKernels::source_;
std::vector<jit::CompiledKernel> CliCacheWithKernels::kernels_;

TEST_F(CliCacheWithKernels, StatsCountsBothKernels) {
  const Result r = run_cli(with_dir("cache stats --json"));
  ASSERT_EQ(r.status, 0) << r.out;
  const json stats = json::parse(r.out);
  EXPECT_EQ(stats["exists"], true);
  EXPECT_EQ(stats["entries"], 2);
  EXPECT_EQ(stats["bytes"], cubin_bytes(0) + cubin_bytes(1));
  EXPECT_EQ(stats["file_bytes"], int64_t(fs::file_size(db())));
  const Result text = run_cli(with_dir("cache stats"));
  ASSERT_EQ(text.status, 0) << text.out;
  EXPECT_TRUE(contains(text.out, "entries:        2 kernels, " + std::to_string(cubin_bytes(0) + cubin_bytes(1)) +
                                     " bytes of cubin\n"))
      << text.out;
}

TEST_F(CliCacheWithKernels, ListShowsBothKernels) {
  const Result r = run_cli(with_dir("cache list"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(line_count(r.out), 2u) << r.out;
  EXPECT_TRUE(contains(r.out, "spmm_csr_rowwarp.cu  sm_90  " + sha_prefix(0) + "  nvrtc " + nvrtc_version()))
      << r.out;
  EXPECT_TRUE(contains(r.out, "sddmm_coo_flat.cu  sm_90  " + sha_prefix(1))) << r.out;
  EXPECT_TRUE(contains(r.out, "  " + std::to_string(cubin_bytes(0)) + " bytes")) << r.out;

  const Result j = run_cli(with_dir("cache list --json"));
  ASSERT_EQ(j.status, 0) << j.out;
  const json entries = json::parse(j.out);
  ASSERT_EQ(entries.size(), 2u);
  // Listed by template name: sddmm before spmm.
  EXPECT_EQ(entries[0]["sha256"], kernels_[1].key.source_sha256);
  EXPECT_EQ(entries[1]["sha256"], kernels_[0].key.source_sha256);
  EXPECT_EQ(entries[1]["bytes"], cubin_bytes(0));
  EXPECT_FALSE(entries[0].contains("mismatches"));
}

TEST_F(CliCacheWithKernels, ListWhySaysTheArchDiffers) {
  const Result other = run_cli(with_dir("cache list --why --arch sm_80"));
  ASSERT_EQ(other.status, 0) << other.out;
  EXPECT_EQ(count_of(other.out, "  differs: arch: entry 'sm_90', wanted 'sm_80'\n"), 2u) << other.out;
  EXPECT_EQ(count_of(other.out, "differs:"), 2u) << other.out;  // nothing but the arch
  EXPECT_TRUE(contains(other.out, "compared with: ")) << other.out;

  const Result same = run_cli(with_dir("cache list --why --arch sm_90"));
  ASSERT_EQ(same.status, 0) << same.out;
  EXPECT_EQ(count_of(same.out, "  matches\n"), 2u) << same.out;
  EXPECT_FALSE(contains(same.out, "differs")) << same.out;

  const Result j = run_cli(with_dir("cache list --why --arch sm_80 --json"));
  ASSERT_EQ(j.status, 0) << j.out;
  const json entries = json::parse(j.out);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0]["mismatches"], json::array({"arch: entry 'sm_90', wanted 'sm_80'"}));
}

TEST_F(CliCacheWithKernels, VerifyPassesThenFailsOnCorruption) {
  const Result ok = run_cli(with_dir("cache verify"));
  EXPECT_EQ(ok.status, 0) << ok.out;
  EXPECT_TRUE(contains(ok.out, ": ok, 2 kernels checked, 0 problems\n")) << ok.out;

  // Garbage over the middle half of the file: b-tree and overflow pages alike.
  const auto size = fs::file_size(db());
  {
    std::fstream file(db(), std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(std::streamoff(size / 4));
    const std::vector<char> garbage(size / 2, char(0xA5));
    file.write(garbage.data(), std::streamsize(garbage.size()));
  }
  const Result bad = run_cli(with_dir("cache verify"));
  EXPECT_EQ(bad.status, 1) << bad.out;
  EXPECT_TRUE(contains(bad.out, "problem: ")) << bad.out;
  EXPECT_TRUE(contains(bad.out, "NOT ok")) << bad.out;

  const Result j = run_cli(with_dir("cache verify --json"));
  EXPECT_EQ(j.status, 1) << j.out;
  const json report = json::parse(j.out);
  EXPECT_EQ(report["ok"], false);
  EXPECT_FALSE(report["problems"].empty());
}

TEST_F(CliCacheWithKernels, PruneKeepsMatchingKernelsByDefault) {
  const Result r = run_cli(with_dir("cache prune"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "pruned 0 kernels, 0 bytes freed\n");
}

TEST_F(CliCacheWithKernels, PruneByBytesRemovesLeastRecentlyUsedFirst) {
  // Room for the second kernel only: the first, compiled earlier, was used least recently.
  const Result r = run_cli(with_dir("cache prune --max-bytes " + std::to_string(cubin_bytes(1))));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "removed spmm_csr_rowwarp.cu sm_90 sha256=" + sha_prefix(0))) << r.out;
  EXPECT_TRUE(contains(r.out, "pruned 1 kernels, " + std::to_string(cubin_bytes(0)) + " bytes freed\n")) << r.out;

  const Result all = run_cli(with_dir("cache prune --max-bytes 0 --json"));
  ASSERT_EQ(all.status, 0) << all.out;
  const json report = json::parse(all.out);
  EXPECT_EQ(report["removed"], 1);
  EXPECT_EQ(report["bytes_freed"], cubin_bytes(1));
  ASSERT_EQ(report["kernels"].size(), 1u);
  EXPECT_EQ(report["kernels"][0]["template"], "sddmm_coo_flat.cu");
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["entries"], 0);
}

TEST_F(CliCacheWithKernels, PruneMaxBytesZeroRemovesAll) {
  const Result r = run_cli(with_dir("cache prune --max-bytes 0"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_of(r.out, "removed "), 2u) << r.out;
  EXPECT_TRUE(contains(r.out, "pruned 2 kernels, " + std::to_string(cubin_bytes(0) + cubin_bytes(1)))) << r.out;
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["entries"], 0);
}

TEST_F(CliCacheWithKernels, ClearRemovesEveryKernel) {
  const Result r = run_cli(with_dir("cache clear --tuning"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "removed 2 kernels, 0 tuning records, 0 models from " + db() + "\n");
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["entries"], 0);
  const Result again = run_cli(with_dir("cache clear --json"));
  ASSERT_EQ(again.status, 0) << again.out;
  EXPECT_EQ(json::parse(again.out)["kernels"], 0);
}

// A kernel left by an older sparsejit (same binary, other library version) and a tuning
// record, added beside the two current kernels.
class CliCacheWithOldKernel : public CliCacheWithKernels {
 protected:
  void SetUp() override {
    CliCacheWithKernels::SetUp();
    cache::KernelCache cache(dir_.str());
    old_key_ = kernels_[0].key;
    old_key_.library_version = "0.0.1";
    cache.get_or_compile(old_key_, [] { return cache::CompiledBinary{*kernels_[0].cubin, 1.0}; });
    cache::TuningRecord record;
    record.device = {"Test GPU", 90, 13000, old_key_.library_version};
    record.op = "spmm";
    record.feature_bucket = "bucket0";
    record.variant = "rowwarp";
    record.time_ms = 1.5;
    record.checked = true;
    cache.store().insert_tuning_record(record);
  }
  cache::KernelKey old_key_;
};

TEST_F(CliCacheWithOldKernel, ListWhySaysTheLibraryVersionDiffers) {
  const Result r = run_cli(with_dir("cache list --why --arch sm_90"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_of(r.out, "  matches\n"), 2u) << r.out;
  EXPECT_EQ(count_of(r.out, "  differs: library_version: entry '0.0.1', wanted '" + kernels_[0].key.library_version +
                                "'\n"),
            1u)
      << r.out;
}

TEST_F(CliCacheWithOldKernel, PruneRemovesOtherVersionsUnlessKept) {
  const Result kept = run_cli(with_dir("cache prune --keep-mismatched"));
  ASSERT_EQ(kept.status, 0) << kept.out;
  EXPECT_EQ(kept.out, "pruned 0 kernels, 0 bytes freed\n");

  const Result r = run_cli(with_dir("cache prune"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out, "removed " + old_key_.to_string() + "\npruned 1 kernels, " + std::to_string(cubin_bytes(0)) +
                       " bytes freed\n");
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["entries"], 2);
}

TEST_F(CliCacheWithOldKernel, ClearKeepsTuningRecordsUnlessAsked) {
  const Result stats = run_cli(with_dir("cache stats"));
  EXPECT_TRUE(contains(stats.out, "tuning records: 1\n")) << stats.out;

  const Result kernels_only = run_cli(with_dir("cache clear"));
  ASSERT_EQ(kernels_only.status, 0) << kernels_only.out;
  EXPECT_EQ(kernels_only.out, "removed 3 kernels from " + db() + "\n");
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["tuning_records"], 1);

  const Result everything = run_cli(with_dir("cache clear --tuning --json"));
  ASSERT_EQ(everything.status, 0) << everything.out;
  EXPECT_EQ(json::parse(everything.out), (json{{"format_version", 1}, {"kernels", 0}, {"tuning_records", 1}, {"models", 0}}));
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["tuning_records"], 0);
}

// Measured selections beside the kernels: one of this build, one of an older library.
class CliCacheWithRecords : public CliCacheWithKernels {
 protected:
  static cache::TuningRecord selection(const std::string& library, const std::string& fingerprint) {
    cache::TuningRecord r;
    r.kind = cache::RecordKind::Measured;
    r.device = {"Test GPU", 90, 13000, library, 132};
    r.op = "spmm";
    r.fingerprint = fingerprint;
    r.plan_key = "plan:spmm:f32:k64:n:ld4";
    r.model_version = "spmm-default v7 abc";
    r.variant = "csr_rowwarp";
    r.params = {{"warps_per_block", 4}};
    r.time_ms = 0.25;
    r.features = {{"k", 64}};
    r.timings = {{{"variant", "csr_rowwarp"}, {"params", {{"warps_per_block", 4}}}, {"ms", 0.25}},
                 {{"variant", "cusparse"}, {"params", json::object()}, {"ms", 0.5}}};
    return r;
  }
  void SetUp() override {
    CliCacheWithKernels::SetUp();
    cache::CacheStore store(dir_.str());
    store.insert_tuning_record(selection(kernels_[0].key.library_version, "0x00000000000000a1"));
    store.insert_tuning_record(selection("0.0.1", "0x00000000000000a2"));
  }
  // Whether this machine judges devices too (with a GPU, "Test GPU" is not one of them).
  static bool judges_devices() { return driver_available(); }
};

TEST_F(CliCacheWithRecords, ListRecordsSaysWhichAreStale) {
  const Result r = run_cli(with_dir("cache list --records"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(count_of(r.out, "plan:spmm:f32:k64:n:ld4  csr_rowwarp {\"warps_per_block\":4}  0.25 ms  2 timed  Test GPU sm_90 132 SMs"),
            2u)
      << r.out;
  EXPECT_EQ(count_of(r.out, "  stale: library_version: record '0.0.1', this build '" + kernels_[0].key.library_version + "'"), 1u)
      << r.out;
  if (!judges_devices()) {
    EXPECT_EQ(count_of(r.out, "stale:"), 1u) << r.out;
  }

  const Result j = run_cli(with_dir("cache list --records --json"));
  ASSERT_EQ(j.status, 0) << j.out;
  const json records = json::parse(j.out);
  ASSERT_EQ(records.size(), 2u);
  for (const json& record : records) {
    EXPECT_EQ(record["plan_key"], "plan:spmm:f32:k64:n:ld4");
    EXPECT_EQ(record["params"], (json{{"warps_per_block", 4}}));
    EXPECT_EQ(record["timed"], 2);
    EXPECT_EQ(record["device"]["multiprocessors"], 132);
    EXPECT_EQ(record["stale"].empty(), record["fingerprint"] == "0x00000000000000a1" && !judges_devices()) << record.dump();
  }
  const Result stats = run_cli(with_dir("cache stats --json"));
  EXPECT_EQ(json::parse(stats.out)["measured_records"], 2) << stats.out;
}

TEST_F(CliCacheWithRecords, PruneRemovesStaleRecordsUnlessKept) {
  const Result kept = run_cli(with_dir("cache prune --keep-mismatched --json"));
  ASSERT_EQ(kept.status, 0) << kept.out;
  EXPECT_EQ(json::parse(kept.out)["records_removed"], 0);
  const Result r = run_cli(with_dir("cache prune"));
  ASSERT_EQ(r.status, 0) << r.out;
  const int removed = judges_devices() ? 2 : 1;
  EXPECT_TRUE(contains(r.out, "; removed " + std::to_string(removed) + " stale measured-selection records\n")) << r.out;
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["measured_records"], 2 - removed);
  const Result cleared = run_cli(with_dir("cache clear --tuning"));
  ASSERT_EQ(cleared.status, 0) << cleared.out;
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["tuning_records"], 0);
}

TEST_F(CliCacheWithKernels, BadOptionValuesFailWithOneLine) {
  for (const std::string args : {"cache list --why --arch sm_x", "cache list --why --arch 90",
                                 "cache prune --max-bytes -5", "cache prune --older-than-days -1"}) {
    const Result r = run_cli(with_dir(args));
    EXPECT_EQ(r.status, 1) << args << ": " << r.out;
    EXPECT_EQ(line_count(r.out), 1u) << args << ": " << r.out;
    const std::string value = args.substr(args.rfind(' ') + 1);
    EXPECT_TRUE(contains(r.out, "'" + value + "'") || contains(r.out, " " + value + ":")) << args << ": " << r.out;
  }
  // A value CLI11 itself cannot convert.
  const Result r = run_cli(with_dir("cache prune --max-bytes lots"));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "lots")) << r.out;
  // Nothing was removed by any of these.
  EXPECT_EQ(json::parse(run_cli(with_dir("cache stats --json")).out)["entries"], 2);
}

TEST(CliCache, HelpForEverySubcommand) {
  for (const std::string command : {"cache", "cache stats", "cache list", "cache verify", "cache prune", "cache clear"}) {
    const Result r = run_cli(command + " --help");
    EXPECT_EQ(r.status, 0) << command << ": " << r.out;
    EXPECT_TRUE(contains(r.out, "Usage")) << command << ": " << r.out;
    EXPECT_TRUE(contains(r.out, command == "cache" ? "verify" : "--dir")) << command << ": " << r.out;
  }
  EXPECT_NE(run_cli("cache").status, 0);
}

}  // namespace
}  // namespace sparsejit
