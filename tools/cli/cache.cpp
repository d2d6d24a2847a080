// `sparsejit cache stats|list|verify|prune|clear`: look into and tidy the compile cache.
// Every subcommand works on the user's cache (cache::default_cache_dir()) unless --dir names
// another directory, and takes --json for output that scripts can read.
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/device.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::cli {
namespace {

// The arch that list --why compares with when neither --arch nor a GPU says otherwise (the
// newest arch the CI compiles for).
constexpr int kFallbackSm = 90;

// Options of every cache subcommand; CLI11 binds to them, so they live for the program.
struct CacheOptions {
  std::string dir;
  bool as_json = false;
  // list
  bool why = false;
  bool records = false;
  std::string arch;
  // prune
  double older_than_days = 0;
  int64_t max_bytes = 0;
  bool keep_mismatched = false;
  CLI::Option* older_than_days_option = nullptr;
  CLI::Option* max_bytes_option = nullptr;
  // clear
  bool include_tuning = false;
};
CacheOptions options;

std::string cache_dir() {
  if (!options.dir.empty()) return options.dir;
  const std::optional<std::string> dir = cache::default_cache_dir();
  if (!dir) throw InvalidInputError("the disk cache is disabled (SPARSEJIT_CACHE_DIR is empty); pass --dir DIR");
  return *dir;
}

// "sm_80" -> 80; one line naming the value otherwise.
int parse_arch(const std::string& arch) {
  const std::string prefix = "sm_";
  const std::string digits = arch.rfind(prefix, 0) == 0 ? arch.substr(prefix.size()) : "";
  const bool numeric = !digits.empty() && digits.size() <= 3 &&
                       digits.find_first_not_of("0123456789") == std::string::npos;
  if (!numeric || std::stoi(digits) < 50) {
    throw InvalidInputError("--arch '" + arch + "': expected sm_XY with XY >= 50, e.g. sm_90");
  }
  return std::stoi(digits);
}

struct WantedArch {
  int sm = 0;
  std::string origin;  // where sm came from, for the user
};

// The sm whose key list --why compares with: --arch, else the first GPU, else kFallbackSm.
WantedArch wanted_arch() {
  if (!options.arch.empty()) return {parse_arch(options.arch), "--arch"};
  if (driver_available() && device_count() > 0) return {device_info(0).sm, "GPU 0"};
  return {kFallbackSm, "no GPU, default"};
}

// "2024-05-01 13:45:12" in local time; "never" for 0.
std::string format_time(int64_t unix_ms) {
  if (unix_ms <= 0) return "never";
  const std::time_t seconds = std::time_t(unix_ms / 1000);
  std::tm local{};
  localtime_r(&seconds, &local);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &local);
  return text;
}

nlohmann::json key_json(const cache::KernelKey& key) {
  return {{"template", key.template_name}, {"arch", key.arch},
          {"sha256", key.source_sha256},   {"options", key.options},
          {"nvrtc", key.nvrtc_version},    {"library_version", key.library_version},
          {"schema_version", key.schema_version}};
}

// An object gets the format version; `cache list` prints an array, one object per kernel.
void print_json(nlohmann::json value) {
  if (value.is_object()) value["format_version"] = kJsonFormatVersion;
  std::cout << value.dump(2) << "\n";
}

// What measured-selection records are judged against: this build and, where GPUs are
// visible, each one with the model every tuned op plans with on it (the tuned model in the
// cache being looked at, else the shipped one).
cache::RecordContext record_context(const std::string& dir) {
  cache::RecordContext context{cache::current_key_context().library_version, std::nullopt};
  if (!driver_available()) return context;
  std::unique_ptr<cache::CacheStore> store;
  if (std::filesystem::exists(cache::database_path(dir))) store = std::make_unique<cache::CacheStore>(dir);
  context.devices.emplace();
  for (int i = 0; i < device_count(); ++i) {
    const plan::DeviceTarget target = detail::target_of(device_info(i));
    cache::RecordContext::Device device{ops::device_key(target), {}};
    for (const Op op : {Op::SpMM, Op::SDDMM})
      device.model_versions[to_string(op)] = ops::model_version(*ops::planner_model_in(store.get(), op, target));
    context.devices->push_back(std::move(device));
  }
  return context;
}

void run_stats() {
  const cache::CacheStats s = cache::cache_stats(cache_dir());
  if (options.as_json) {
    print_json({{"path", s.path},
                {"exists", s.exists},
                {"entries", s.entries},
                {"bytes", s.bytes},
                {"hits", s.hits},
                {"tuning_records", s.tuning_records},
                {"measured_records", s.measured_records},
                {"models", s.models},
                {"file_bytes", s.file_bytes}});
    return;
  }
  std::cout << "path:           " << s.path << (s.exists ? "" : " (no database yet)") << "\n"
            << "entries:        " << s.entries << " kernels, " << s.bytes << " bytes of cubin\n"
            << "disk hits:      " << s.hits << "\n"
            << "tuning records: " << s.tuning_records << "\n"
            << "measured:       " << s.measured_records << " of them measured selections\n"
            << "models:         " << s.models << "\n"
            << "file size:      " << s.file_bytes << " bytes\n";
}

void print_entry(const cache::CacheEntry& e) {
  std::cout << e.key.template_name << "  " << e.key.arch << "  " << e.key.source_sha256.substr(0, 12) << "  nvrtc "
            << e.key.nvrtc_version << "  lib " << e.key.library_version << "  " << e.bytes << " bytes  " << e.hits
            << " hits  last used " << format_time(e.last_used) << "\n";
  if (!options.why) return;
  if (e.mismatches.empty()) std::cout << "  matches\n";
  for (const std::string& m : e.mismatches) std::cout << "  differs: " << m << "\n";
}

nlohmann::json record_json(const cache::RecordEntry& r) {
  return {{"op", r.op},
          {"fingerprint", r.fingerprint},
          {"plan_key", r.plan_key},
          {"model_version", r.model_version},
          {"variant", r.variant},
          {"params", nlohmann::json::parse(r.params, nullptr, false)},
          {"time_ms", r.time_ms},
          {"timed", r.timed},
          {"created", r.created},
          {"device",
           {{"name", r.device.device_name},
            {"compute_capability", r.device.compute_capability},
            {"multiprocessors", r.device.multiprocessors},
            {"driver_version", r.device.driver_version},
            {"library_version", r.device.library_version}}},
          {"stale", r.stale}};
}

void print_record(const cache::RecordEntry& r) {
  std::cout << r.op << "  " << r.fingerprint << "  " << r.plan_key << "  " << r.variant << " " << r.params << "  " << r.time_ms
            << " ms  " << r.timed << " timed  " << r.device.device_name << " sm_" << r.device.compute_capability << " "
            << r.device.multiprocessors << " SMs driver " << r.device.driver_version << " lib " << r.device.library_version
            << "  model " << r.model_version << "  " << format_time(r.created) << "\n";
  for (const std::string& reason : r.stale) std::cout << "  stale: " << reason << "\n";
}

void run_list_records() {
  const std::string dir = cache_dir();
  const std::vector<cache::RecordEntry> records = cache::cache_records(dir, record_context(dir));
  if (options.as_json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : records) out.push_back(record_json(r));
    print_json(out);
    return;
  }
  if (records.empty()) std::cout << "no measured-selection records in " << cache::database_path(dir) << "\n";
  for (const auto& r : records) print_record(r);
}

void run_list() {
  if (options.records) return run_list_records();
  const WantedArch arch = options.why ? wanted_arch() : WantedArch{};
  const cache::KernelKey wanted = options.why ? cache::current_key_context(arch.sm) : cache::KernelKey{};
  const std::vector<cache::CacheEntry> entries = cache::cache_list(cache_dir(), wanted);
  if (options.as_json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : entries) {
      nlohmann::json entry = key_json(e.key);
      entry.update({{"bytes", e.bytes},
                    {"compile_ms", e.compile_ms},
                    {"created", e.created},
                    {"last_used", e.last_used},
                    {"hits", e.hits}});
      if (options.why) entry["mismatches"] = e.mismatches;
      out.push_back(std::move(entry));
    }
    print_json(out);
    return;
  }
  if (options.why) {
    std::cout << "compared with: arch " << wanted.arch << " (" << arch.origin << "), nvrtc " << wanted.nvrtc_version
              << ", library " << wanted.library_version << ", schema " << wanted.schema_version << "\n";
  }
  if (entries.empty()) std::cout << "no cached kernels in " << cache::database_path(cache_dir()) << "\n";
  for (const auto& e : entries) print_entry(e);
}

void run_verify() {
  const std::string dir = cache_dir();
  const cache::VerifyReport report = cache::cache_verify(dir);
  if (options.as_json) {
    print_json({{"path", report.path},
                {"exists", report.exists},
                {"ok", report.ok},
                {"entries_checked", report.entries_checked},
                {"problems", report.problems}});
  } else {
    for (const std::string& problem : report.problems) std::cout << "problem: " << problem << "\n";
    std::cout << report.path << ": " << (report.ok ? "ok" : "NOT ok") << ", "
              << (report.exists ? std::to_string(report.entries_checked) + " kernels checked"
                                : std::string("no database to check"))
              << ", " << report.problems.size() << " problems\n";
  }
  // The report is already printed; exit with status 1 and nothing more.
  if (!report.ok) throw CLI::RuntimeError(1);
}

// Keys present before an operation and gone after it.
std::vector<cache::KernelKey> removed_keys(const std::vector<cache::CacheEntry>& before,
                                           const std::vector<cache::CacheEntry>& after) {
  std::set<cache::KernelKey> remaining;
  for (const auto& e : after) remaining.insert(e.key);
  std::vector<cache::KernelKey> removed;
  for (const auto& e : before) {
    if (remaining.count(e.key) == 0) removed.push_back(e.key);
  }
  return removed;
}

void validate_prune_options() {
  if (options.older_than_days_option->count() > 0 && !(options.older_than_days >= 0)) {
    throw InvalidInputError("--older-than-days " + options.older_than_days_option->as<std::string>() +
                            ": must be a number of days >= 0");
  }
  if (options.max_bytes_option->count() > 0 && options.max_bytes < 0) {
    throw InvalidInputError("--max-bytes " + std::to_string(options.max_bytes) + ": must be >= 0");
  }
}

void run_prune() {
  validate_prune_options();
  cache::PruneOptions prune;
  prune.mismatched_versions = !options.keep_mismatched;
  if (options.older_than_days_option->count() > 0) prune.older_than_days = options.older_than_days;
  if (options.max_bytes_option->count() > 0) prune.max_bytes = options.max_bytes;
  const std::string dir = cache_dir();
  prune.records = options.keep_mismatched ? std::nullopt : std::optional<cache::RecordContext>(record_context(dir));
  // cache_prune only counts; listing around it tells the user which kernels went.
  const auto before = cache::cache_list(dir);
  const cache::PruneReport report = cache::cache_prune(dir, prune);
  const auto removed = removed_keys(before, cache::cache_list(dir));
  if (options.as_json) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& key : removed) kernels.push_back(key_json(key));
    print_json({{"removed", report.removed},
                {"bytes_freed", report.bytes_freed},
                {"damaged", report.damaged},
                {"kernels", kernels},
                {"moved_aside_removed", report.moved_aside_removed},
                {"records_removed", report.records_removed}});
    return;
  }
  for (const auto& key : removed) std::cout << "removed " << key.to_string() << "\n";
  for (const auto& file : report.moved_aside_removed) std::cout << "removed moved-aside " << file << "\n";
  std::cout << "pruned " << report.removed << " kernels, " << report.bytes_freed << " bytes freed"
            << (report.damaged > 0 ? ", " + std::to_string(report.damaged) + " of them with a damaged cubin" : "")
            << (report.records_removed > 0 ? "; removed " + std::to_string(report.records_removed) + " stale measured-selection records" : "")
            << "\n";
}

void run_clear() {
  const std::string dir = cache_dir();
  const cache::CacheStats before = cache::cache_stats(dir);
  const int64_t kernels = cache::cache_clear(dir, options.include_tuning);
  const int64_t tuning_records = options.include_tuning ? before.tuning_records : 0;
  const int64_t models = options.include_tuning ? before.models : 0;
  if (options.as_json) {
    print_json({{"kernels", kernels}, {"tuning_records", tuning_records}, {"models", models}});
    return;
  }
  std::cout << "removed " << kernels << " kernels";
  if (options.include_tuning) std::cout << ", " << tuning_records << " tuning records, " << models << " models";
  std::cout << " from " << before.path << "\n";
}

// --dir and --json, which every subcommand takes.
CLI::App* add_cache_subcommand(CLI::App* cache, const std::string& name, const std::string& description,
                               void (*run)()) {
  auto* cmd = cache->add_subcommand(name, description);
  cmd->add_option("--dir", options.dir, "Cache directory (default: the user's cache, see `sparsejit info`)");
  cmd->add_flag("--json", options.as_json, "Print JSON instead of text");
  cmd->callback(run);
  return cmd;
}

}  // namespace

void add_cache_command(CLI::App& app) {
  auto* cache = app.add_subcommand("cache", "Inspect, verify and tidy the compile cache");
  cache->require_subcommand(1);

  add_cache_subcommand(cache, "stats", "Kernels, bytes, hits, tuning records and models in the cache", run_stats);

  auto* list = add_cache_subcommand(cache, "list", "One line per cached kernel", run_list);
  list->add_flag("--why", options.why, "Show which key columns differ from this process's (why an entry would miss)");
  list->add_flag("--records", options.records,
                 "List the measured-selection records instead of kernels, each with why it is stale (another library, "
                 "device, driver or model)");
  list->add_option("--arch", options.arch, "Arch that --why compares with, e.g. sm_80 (default: the first GPU, else sm_90)");

  add_cache_subcommand(cache, "verify", "Check the database's integrity and every cubin; exit 1 on problems",
                       run_verify);

  auto* prune = add_cache_subcommand(
      cache, "prune",
      "Remove kernels of other library/NVRTC versions, old ones, and least recently used ones, and stale measured-selection "
      "records",
      run_prune);
  options.older_than_days_option =
      prune->add_option("--older-than-days", options.older_than_days, "Remove kernels not used for N days");
  options.max_bytes_option = prune->add_option(
      "--max-bytes", options.max_bytes, "Then remove least recently used kernels until their cubins total at most N");
  prune->add_flag("--keep-mismatched", options.keep_mismatched,
                  "Keep kernels of another library or NVRTC version, and every measured-selection record");

  auto* clear = add_cache_subcommand(cache, "clear", "Remove every cached kernel (asks nothing)", run_clear);
  clear->add_flag("--tuning", options.include_tuning,
                  "Also remove tuning records (measured selections included) and tuned models");
}

}  // namespace sparsejit::cli
