// The README's promise for the command line, tried as issue 27's probes did: every error is
// one line "sparsejit: ..." and exit status 1 (the argument parser's too), nothing a file
// holds reaches the terminal unescaped, and huge declarations are refused before memory is
// taken. Runs the built binary as a user would.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "sparsejit/cache.hpp"
#include "sparsejit/device.hpp"
#include "support/test_support.hpp"

namespace sparsejit {
namespace {

using test::run_cli;
using Result = test::CliResult;

std::size_t occurrences(const std::string& text, const std::string& part) {
  std::size_t n = 0;
  for (auto at = text.find(part); at != std::string::npos; at = text.find(part, at + part.size())) ++n;
  return n;
}

// No disk cache: these runs must not depend on (or fill) the user's.
const std::string kNoCache = "SPARSEJIT_CACHE_DIR=";

// One line, "sparsejit: " first, printable ASCII and UTF-8 only, exit status 1, and every
// one of `parts` in it.
void expect_one_line_error(const Result& r, const std::vector<std::string>& parts, const std::string& what) {
  EXPECT_EQ(r.status, 1) << what << ": " << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << what << ": " << r.out;
  EXPECT_EQ(r.out.rfind("sparsejit: ", 0), 0u) << what << ": " << r.out;
  for (const char c : r.out)
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << what << ": control byte in " << r.out;
  for (const std::string& part : parts) EXPECT_NE(r.out.find(part), std::string::npos) << what << ": '" << part << "' not in " << r.out;
}

class CliPromises : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = test::fresh_dir("cli_promises"); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) const {
    const std::string file = (dir_ / name).string();
    std::ofstream(file, std::ios::binary) << bytes;
    return file;
  }
  std::filesystem::path dir_;
};

// Today's main exited 104-109 with CLI11's own text for these.
TEST_F(CliPromises, ArgumentParserErrorsAreOneLineAndStatusOne) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"frobnicate", "frobnicate"},
      {"", "subcommand"},
      {"explain gen:uniform:100:4 --bogus", "--bogus"},
      {"explain gen:uniform:100:4 -k abc", "abc"},
      {"explain gen:uniform:100:4 -k", "-k"},
      {"run", "matrix"},
      {"inspect a.mtx b.mtx", "b.mtx"},
      {"cache frobnicate", "frobnicate"},
  };
  for (const auto& [args, named] : cases) expect_one_line_error(run_cli(args, kNoCache), {"usage error", named}, args);
}

// The soak checks its arguments before it looks for a GPU, so these hold on any machine.
TEST_F(CliPromises, SoakArgumentErrorsAreOneLine) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"soak --seconds 0", {"usage error", "--seconds", "0"}},
      {"soak --seconds abc", {"usage error", "--seconds", "abc"}},
      {"soak --threads 0", {"usage error", "--threads"}},
      {"soak --threads 100000", {"usage error", "--threads"}},
      {"soak --runtimes 0", {"usage error", "--runtimes"}},
      {"soak --warmup-seconds -1", {"usage error", "--warmup-seconds"}},
      {"soak --seconds 10 --warmup-seconds 10", {"invalid input error", "--warmup-seconds 10", "--seconds 10"}},
      {"soak --frobnicate", {"usage error", "--frobnicate"}},
      {"soak --json-out " + (dir_ / "missing" / "soak.json").string(), {"I/O error", "--json-out"}},
  };
  for (const auto& [args, parts] : cases) expect_one_line_error(run_cli(args, kNoCache), parts, args);
}

// Without a GPU the soak has nothing to run: one line naming why, status 1.
TEST_F(CliPromises, SoakWithoutAGpuSaysWhy) {
  if (driver_available()) GTEST_SKIP() << "a GPU is present: tests/gpu/soak_test.cpp runs the soak";
  expect_one_line_error(run_cli("soak --seconds 1", kNoCache), {"unsupported error", driver_unavailable_reason()}, "soak");
}

TEST_F(CliPromises, VersionAndHelpExitZero) {
  const Result version = run_cli("--version");
  EXPECT_EQ(version.status, 0) << version.out;
  EXPECT_EQ(version.out.rfind("sparsejit 0.", 0), 0u) << version.out;
  const Result help = run_cli("--help");
  EXPECT_EQ(help.status, 0) << help.out;
  EXPECT_NE(help.out.find("explain"), std::string::npos) << help.out;
}

TEST_F(CliPromises, UnknownLogLevelIsAnError) {
  expect_one_line_error(run_cli("info", "SPARSEJIT_LOG=bogus"), {"SPARSEJIT_LOG=bogus", "error, warn, info or debug"}, "log");
  EXPECT_EQ(run_cli("info", "SPARSEJIT_LOG=debug").status, 0);
}

// A forced parameter of the wrong kind reached a variant's check as a string and escaped as
// nlohmann's type_error.
TEST_F(CliPromises, ForcedParametersOfTheWrongKindNameTheParameter) {
  expect_one_line_error(run_cli("explain gen:uniform:100:4 --op spmm -k 32", kNoCache + " SPARSEJIT_FORCE=spmm:csr_rowwarp:warps_per_block=abc"),
                        {"invalid input error", "warps_per_block = \"abc\" is not an integer"}, "force");
  expect_one_line_error(run_cli("explain gen:uniform:100:4 --op spmm -k 32 --variant csr_rowwarp:warps_per_block=0", kNoCache),
                        {"warps_per_block"}, "zero warps");
  expect_one_line_error(run_cli("explain gen:uniform:100:4 --op spmm -k 32 --variant csr_rowwarp:warps_per_block", kNoCache),
                        {"--variant 'csr_rowwarp:warps_per_block'", "is not key=value"}, "no value");
  // rs derived its panel width by dividing by blocks_per_sm: a forced 0 killed the process
  // with SIGFPE.
  expect_one_line_error(run_cli("explain gen:clustered:2048:16:0.6:16 --op spmm -k 32", kNoCache + " SPARSEJIT_FORCE=spmm:rs:blocks_per_sm=0"),
                        {"rs: blocks_per_sm = 0 must be in [1, 32]"}, "rs blocks");
}

TEST_F(CliPromises, VariantTakesParametersAsTheHelpSays) {
  const Result r = run_cli("explain gen:clustered:3000:16:0.5:16 --op spmm -k 64 --variant rs:threshold=8 --json", kNoCache);
  ASSERT_EQ(r.status, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["variant"], "rs");
  EXPECT_EQ(j["source"], "forced");
  EXPECT_EQ(j["params"]["threshold"], 8);
}

TEST_F(CliPromises, OptionsThatDoNotApplyAreRefused) {
  expect_one_line_error(run_cli("explain gen:uniform:100:4 --op sddmm -k 32 --transpose", kNoCache),
                        {"--transpose", "spmm only", "sddmm"}, "explain");
  expect_one_line_error(run_cli("run gen:uniform:100:4 --op sddmm -k 32 --transpose", kNoCache), {"--transpose", "sddmm"}, "run");
  expect_one_line_error(run_cli("explain gen:uniform:100:4 --op spmm -k 32 --dtype f16", kNoCache), {"f16"}, "f16");
}

// -k and --k are one option in every command that takes K, and every command that reads a
// matrix takes a generator spec.
TEST_F(CliPromises, OneSpellingOfKAndGeneratorSpecsEverywhere) {
  for (const char* command : {"explain", "run", "bench", "tune", "demo"}) {
    const Result help = run_cli(std::string(command) + " --help");
    EXPECT_NE(help.out.find("-k,--k"), std::string::npos) << command << ": " << help.out;
  }
  const Result inspect = run_cli("inspect gen:uniform:300:7 --json");
  ASSERT_EQ(inspect.status, 0) << inspect.out;
  EXPECT_EQ(nlohmann::json::parse(inspect.out)["features"]["nnz"], 2100);
  const Result demo = run_cli("demo --matrix gen:uniform:300:7 --k 16", kNoCache);
  EXPECT_EQ(demo.status, 0) << demo.out;
  EXPECT_NE(demo.out.find("2100 nonzeros"), std::string::npos) << demo.out;
}

TEST_F(CliPromises, InfoSaysWhyTheCacheIsDisabled) {
  const Result empty = run_cli("info --json", "SPARSEJIT_CACHE_DIR=");
  ASSERT_EQ(empty.status, 0) << empty.out;
  EXPECT_EQ(nlohmann::json::parse(empty.out)["cache"]["reason"], "disabled (SPARSEJIT_CACHE_DIR is empty)");
  const Result nowhere = run_cli("info --json", "env -u SPARSEJIT_CACHE_DIR -u XDG_CACHE_HOME -u HOME");
  ASSERT_EQ(nowhere.status, 0) << nowhere.out;
  EXPECT_NE(nlohmann::json::parse(nowhere.out)["cache"]["reason"].get<std::string>().find("HOME are all unset"), std::string::npos)
      << nowhere.out;
  const std::string file = write("cache-file", "not a folder");
  const Result unusable = run_cli("info --json", "SPARSEJIT_CACHE_DIR='" + file + "'");
  ASSERT_EQ(unusable.status, 0) << unusable.out;
  EXPECT_EQ(nlohmann::json::parse(unusable.out)["cache"]["reason"], "unusable (" + file + " is not a directory): memory only");
}

// Issue 27's huge declarations: each ended in a segfault or gigabytes of memory; now one line
// naming the value and the limit, at once.
TEST_F(CliPromises, HugeDeclarationsAreRefusedBeforeAllocating) {
  const std::string rows = write("rows.mtx", "%%MatrixMarket matrix coordinate real general\n2147483641 3 1\n1 1 1.0\n");
  expect_one_line_error(run_cli("inspect '" + rows + "'"), {"2147483641 declared rows", "SPARSEJIT_MAX_DIMENSION"}, "inspect");
  expect_one_line_error(run_cli("explain '" + rows + "' --op spmm -k 32", kNoCache), {"2147483641 declared rows"}, "explain");
  expect_one_line_error(run_cli("explain gen:uniform:2000000000:1 --op spmm -k 32", kNoCache),
                        {"2000000000 rows or columns", "SPARSEJIT_MAX_GENERATED_ENTRIES"}, "gen");
  expect_one_line_error(run_cli("explain gen:uniform:100:4 --op spmm -k 100000000", kNoCache),
                        {"k = 100000000 out of range [1, 16777216]"}, "k");
  // The limits can be raised, and a bad value for one is named.
  const std::string tall = write("tall.mtx", "%%MatrixMarket matrix coordinate real general\n20000000 3 1\n1 1 1.0\n");
  expect_one_line_error(run_cli("inspect '" + tall + "'"), {"20000000 declared rows"}, "tall");
  const Result raised = run_cli("inspect --json '" + tall + "'", "SPARSEJIT_MAX_DIMENSION=20000000");
  ASSERT_EQ(raised.status, 0) << raised.out;
  EXPECT_EQ(nlohmann::json::parse(raised.out)["features"]["rows"], 20000000);
  expect_one_line_error(run_cli("inspect '" + tall + "'", "SPARSEJIT_MAX_DIMENSION=lots"), {"SPARSEJIT_MAX_DIMENSION=lots"}, "bad env");
}

TEST_F(CliPromises, FileContentInMessagesIsEscaped) {
  static const char kNul[] = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 4\x00\x1b[31m\n";
  const std::string nul = write("nul.mtx", std::string(kNul, sizeof kNul - 1));
  expect_one_line_error(run_cli("inspect '" + nul + "'"), {"\\x00\\x1b[31m"}, "nul");
  const std::string bom = write("bom.mtx", "\xef\xbb\xbf%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 3.5\n");
  EXPECT_EQ(run_cli("inspect '" + bom + "'").status, 0);
}

// JSON outputs carry their format version, and a value that does not exist is null: a
// rejected candidate was never priced (its prediction used to read 0.0).
TEST_F(CliPromises, JsonOutputsCarryAFormatVersionAndNullForMissingValues) {
  const Result explain = run_cli("explain gen:uniform:300:7 --op spmm -k 32 --transpose --json", kNoCache);
  ASSERT_EQ(explain.status, 0) << explain.out;
  const auto decision = nlohmann::json::parse(explain.out);
  EXPECT_EQ(decision["format_version"], 1);
  bool saw_rejected = false;
  for (const auto& c : decision["candidates"]) {
    EXPECT_TRUE(c.contains("measured_ms")) << c.dump();
    if (!c.contains("rejected_because")) continue;
    saw_rejected = true;
    EXPECT_TRUE(c["predicted_ms"].is_null()) << c.dump();
  }
  EXPECT_TRUE(saw_rejected) << explain.out;
  for (const char* args : {"info --json", "inspect gen:uniform:300:7 --json"}) {
    const Result r = run_cli(args, kNoCache);
    ASSERT_EQ(r.status, 0) << args << ": " << r.out;
    EXPECT_EQ(nlohmann::json::parse(r.out)["format_version"], 1) << args;
  }
  const Result stats = run_cli("cache stats --json --dir '" + (dir_ / "empty").string() + "'");
  ASSERT_EQ(stats.status, 0) << stats.out;
  EXPECT_EQ(nlohmann::json::parse(stats.out)["format_version"], 1);
}

// A damaged tuned model in the cache (this process's device key, no GPU) used to fail every
// call with "cost coefficient '' is not a number"; now it is named once and the shipped model
// plans.
TEST_F(CliPromises, DamagedTunedModelFallsBackToTheShippedOne) {
  const std::string cache = (dir_ / "tuned").string();
  const std::string env = "SPARSEJIT_CACHE_DIR='" + cache + "'";
  const std::string explain = "explain gen:uniform:300:7 --op spmm -k 32";
  ASSERT_EQ(run_cli(explain, env).status, 0);
  const Result info = run_cli("info --json", env);
  if (nlohmann::json::parse(info.out)["cuda_driver"]["available"].get<bool>()) GTEST_SKIP() << "the device key is a GPU's";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(cache::database_path(cache).c_str(), &db), SQLITE_OK);
  const std::string insert =
      "INSERT INTO models (name, version, device_name, compute_capability, multiprocessors, driver_version, library_version, "
      "json, created) VALUES ('spmm', 1, 'sm_90 (no GPU)', 90, 132, 0, '" + nlohmann::json::parse(info.out)["sparsejit"].get<std::string>() +
      "', '{\"cost\": {\"rs\": \"x\"}}', 0)";
  ASSERT_EQ(sqlite3_exec(db, insert.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  const Result r = run_cli(explain, env);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(occurrences(r.out, "warning: tuned model 'spmm' of sm_90 (no GPU) is unusable (\"cost\" entry 'rs' is not an object)"), 1u)
      << r.out;
  EXPECT_NE(r.out.find("candidates:"), std::string::npos) << r.out;
}

// The prefix that runs the CLI with `dir` mounted read-only in a private mount namespace, as a
// prebuilt cache on a read-only file system is; "" where this process may not make one.
std::string read_only_mount(const std::string& dir) {
  if (std::system("unshare -m true >/dev/null 2>&1") != 0) return "";
  return "unshare -m sh -c 'mount --bind \"$0\" \"$0\" && mount -o remount,ro,bind \"$0\" && exec \"$@\"' '" + dir + "'";
}

// A read-only cache is used for lookups without a warning; what the process compiles is not
// stored, said once at info level.
TEST_F(CliPromises, ReadOnlyCacheServesLookupsQuietly) {
  const std::string cache = (dir_ / "cache").string();
  const std::string mount = read_only_mount(cache);
  if (mount.empty()) GTEST_SKIP() << "cannot make a private read-only mount here";
  const std::string env = "SPARSEJIT_CACHE_DIR='" + cache + "' ";
  const std::string explain = "explain gen:uniform:300:7 --op spmm --variant csr_rowwarp --json -k ";
  const Result first = run_cli(explain + "32", env);
  ASSERT_EQ(first.status, 0) << first.out;
  EXPECT_EQ(nlohmann::json::parse(first.out)["kernel_origin"], "compiled");

  const Result lookup = run_cli(explain + "32", env + mount);  // stdout and stderr: JSON only, no warning
  ASSERT_EQ(lookup.status, 0) << lookup.out;
  EXPECT_EQ(nlohmann::json::parse(lookup.out)["kernel_origin"], "disk");

  const Result miss = run_cli("explain gen:uniform:300:7 --op spmm --variant csr_rowwarp -k 128", env + "SPARSEJIT_LOG=info " + mount);
  ASSERT_EQ(miss.status, 0) << miss.out;
  EXPECT_EQ(occurrences(miss.out, "is read-only"), 1u) << miss.out;
  EXPECT_EQ(miss.out.find("warning"), std::string::npos) << miss.out;
  const Result stats = run_cli("cache stats --json --dir '" + cache + "'");
  EXPECT_EQ(nlohmann::json::parse(stats.out)["entries"], 1) << stats.out;
}

// A cache on a file system that fills up (a 96 KiB tmpfs in a private mount namespace, about
// what the database, its WAL and index need for one kernel): whichever write finds the disk
// full, every call succeeds, with at most one warning per process.
TEST_F(CliPromises, FullDiskFailsNoCall) {
  if (std::system("unshare -m true >/dev/null 2>&1") != 0) GTEST_SKIP() << "cannot make a private mount here";
  const std::string cache = (dir_ / "small").string();
  std::filesystem::create_directories(cache);
  const std::string full = "SPARSEJIT_CACHE_DIR='" + cache + "' unshare -m sh -c 'mount -t tmpfs -o size=96k tmpfs \"$0\" && "
                           "\"$@\" && \"$@\"' '" + cache + "'";
  const Result r = run_cli("explain gen:uniform:300:7 --op sddmm -k 64", full);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(occurrences(r.out, "candidates:"), 2u) << r.out;  // both calls printed their decision
  EXPECT_LE(occurrences(r.out, "warning"), 2u) << r.out;       // at most one per process
}

}  // namespace
}  // namespace sparsejit
