// `sparsejit info`: everything a bug report needs to know about this installation: versions of
// sparsejit and the libraries it uses, the build, the CUDA driver and GPUs, the cache location,
// the environment variables that change behaviour, and what is embedded (templates, models).
#include <cublas_v2.h>
#include <cusparse.h>
#include <sqlite3.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "base/nvrtc_target.hpp"
#include "jit/render.hpp"
#include "models/model_store.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/device.hpp"

namespace sparsejit::cli {
namespace {

// Every environment variable the library reads (see DESIGN.md, "Errors, logging, environment").
constexpr const char* kEnvironmentVariables[] = {"SPARSEJIT_CACHE_DIR", "SPARSEJIT_LOG", "SPARSEJIT_DUMP_SOURCE",
                                                 "SPARSEJIT_FORCE", "SPARSEJIT_TEMPLATE_DIR", "SPARSEJIT_MAX_DIMENSION",
                                                 "SPARSEJIT_MAX_INFLATED_BYTES", "SPARSEJIT_MAX_GENERATED_ENTRIES"};

// "major.minor.patch" of a library that answers from itself (cuSPARSE, cuBLAS), so it works
// without a GPU; get(property, &value) returns `ok` on success.
template <class Status, class Get>
std::string library_version(Get get, Status ok, const char* call) {
  int major = 0, minor = 0, patch = 0;
  if (get(MAJOR_VERSION, &major) != ok || get(MINOR_VERSION, &minor) != ok || get(PATCH_LEVEL, &patch) != ok)
    return std::string("unknown (") + call + " failed)";
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

nlohmann::json device_json(const DeviceInfo& d) {
  return {{"ordinal", d.ordinal},
          {"name", d.name},
          {"sm", d.sm},
          {"multiprocessors", d.multiprocessors},
          {"total_mem", d.total_mem},
          {"driver_version", d.driver_version},
          {"description", to_string(d)}};
}

nlohmann::json driver_json() {
  nlohmann::json driver = {{"available", driver_available()}, {"devices", nlohmann::json::array()}};
  if (!driver_available()) {
    driver["reason"] = driver_unavailable_reason();
    return driver;
  }
  for (int i = 0; i < device_count(); ++i) driver["devices"].push_back(device_json(device_info(i)));
  return driver;
}

// default_cache_dir() gives no folder when SPARSEJIT_CACHE_DIR is set but empty, or when no
// variable names a place for one.
std::string cache_disabled_reason() {
  const char* dir = std::getenv("SPARSEJIT_CACHE_DIR");
  if (dir != nullptr) return "disabled (SPARSEJIT_CACHE_DIR is empty)";
  return "disabled (SPARSEJIT_CACHE_DIR, XDG_CACHE_HOME and HOME are all unset or empty: nowhere to keep it)";
}

nlohmann::json cache_json() {
  const std::optional<std::string> dir = cache::default_cache_dir();
  if (!dir) return {{"enabled", false}, {"reason", cache_disabled_reason()}};
  std::error_code ec;
  if (std::filesystem::exists(*dir, ec) && !std::filesystem::is_directory(*dir, ec))
    return {{"enabled", false}, {"reason", "unusable (" + *dir + " is not a directory): memory only"}};
  // A folder or database this process cannot write serves lookups only (cache/database.hpp).
  const std::string database = cache::database_path(*dir);
  const bool read_only = (::access(database.c_str(), F_OK) == 0 && ::access(database.c_str(), W_OK) != 0) ||
                         (::access(dir->c_str(), F_OK) == 0 && ::access(dir->c_str(), W_OK) != 0);
  return {{"enabled", true}, {"dir", *dir}, {"database", database}, {"read_only", read_only}};
}

nlohmann::json environment_json() {
  nlohmann::json env = nlohmann::json::object();
  for (const char* name : kEnvironmentVariables) {
    if (const char* value = std::getenv(name)) env[name] = value;
  }
  return env;
}

// Everything `info` reports, as JSON; the text form is printed from this too, so both agree.
nlohmann::json collect_info() {
  return {{"sparsejit", SPARSEJIT_VERSION_STRING},
          {"build_type", SPARSEJIT_BUILD_TYPE},
          {"compiler", SPARSEJIT_COMPILER},
          {"nvrtc", nvrtc_version()},
          {"cusparse", library_version(cusparseGetProperty, CUSPARSE_STATUS_SUCCESS, "cusparseGetProperty")},
          {"cublas", library_version(cublasGetProperty, CUBLAS_STATUS_SUCCESS, "cublasGetProperty")},
          {"sqlite", sqlite3_libversion()},
          {"zlib", zlibVersion()},
          {"cuda_driver", driver_json()},
          {"cache", cache_json()},
          {"environment", environment_json()},
          {"templates", jit::template_names()},
          {"models", models::shipped_model_names()}};
}

std::string joined(const nlohmann::json& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name.get<std::string>();
  return out.empty() ? "none" : out;
}

void print_text(const nlohmann::json& info) {
  std::cout << "sparsejit " << info["sparsejit"].get<std::string>() << " (" << info["build_type"].get<std::string>()
            << " build, " << info["compiler"].get<std::string>() << ")\n"
            << "nvrtc:     " << info["nvrtc"].get<std::string>() << "\n"
            << "cusparse:  " << info["cusparse"].get<std::string>() << "\n"
            << "cublas:    " << info["cublas"].get<std::string>() << "\n"
            << "sqlite:    " << info["sqlite"].get<std::string>() << "\n"
            << "zlib:      " << info["zlib"].get<std::string>() << "\n";
  const auto& driver = info["cuda_driver"];
  if (driver["available"].get<bool>()) {
    std::cout << "cuda driver: available, " << driver["devices"].size() << " GPU(s)\n";
    for (const auto& d : driver["devices"]) std::cout << "  gpu " << d["description"].get<std::string>() << "\n";
  } else {
    std::cout << "cuda driver: not available: " << driver["reason"].get<std::string>() << "\n";
  }
  const auto& cache = info["cache"];
  if (cache["enabled"].get<bool>()) {
    std::cout << "cache dir: " << cache["dir"].get<std::string>() << (cache["read_only"].get<bool>() ? " (read-only: lookups only)" : "") << "\n"
              << "cache db:  " << cache["database"].get<std::string>() << "\n";
  } else {
    std::cout << "cache:     " << cache["reason"].get<std::string>() << "\n";
  }
  std::cout << "environment:";
  if (info["environment"].empty()) std::cout << " no SPARSEJIT_* variable set";
  std::cout << "\n";
  for (const auto& [name, value] : info["environment"].items()) {
    std::cout << "  " << name << "=" << value.get<std::string>() << "\n";
  }
  std::cout << "templates: " << joined(info["templates"]) << "\n"
            << "models:    " << joined(info["models"]) << "\n";
}

}  // namespace

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Versions, build options, GPU and cache location");
  static bool as_json = false;
  cmd->add_flag("--json", as_json, "Print one JSON object instead of text");
  cmd->callback([] {
    const nlohmann::json info = collect_info();
    if (as_json) {
      nlohmann::json out = info;
      out["format_version"] = kJsonFormatVersion;
      std::cout << out.dump(2) << "\n";
    } else {
      print_text(info);
    }
  });
}

}  // namespace sparsejit::cli
