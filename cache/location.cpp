#include <cstdlib>
#include <filesystem>

#include "sparsejit/cache.hpp"

namespace sparsejit::cache {

// Fallback order: SPARSEJIT_CACHE_DIR (empty disables), XDG_CACHE_HOME/sparsejit,
// HOME/.cache/sparsejit; with none of them there is nowhere to put it, so memory only.
std::optional<std::string> default_cache_dir() {
  if (const char* dir = std::getenv("SPARSEJIT_CACHE_DIR")) {
    if (*dir == '\0') return std::nullopt;
    return std::string(dir);
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0') {
    return (std::filesystem::path(xdg) / "sparsejit").string();
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return (std::filesystem::path(home) / ".cache" / "sparsejit").string();
  }
  return std::nullopt;
}

// One file per schema version: builds of different schemas share a cache folder (two installs
// under one ~/.cache) without either treating the other's file as damage.
std::string database_path(const std::string& dir) {
  return (std::filesystem::path(dir) / ("kernels-schema" + std::to_string(kSchemaVersion) + ".db")).string();
}

}  // namespace sparsejit::cache
