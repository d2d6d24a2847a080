#include "jit/source_dump.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/log.hpp"
#include "base/sha256.hpp"

namespace sparsejit::jit {
namespace {

namespace fs = std::filesystem;

std::string write_source(const fs::path& dir, const std::string& program_name, const std::string& source) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  // The hash keeps different renders of one template apart; "/" cannot appear in a name.
  std::string stem = program_name;
  for (char& ch : stem) {
    if (ch == '/') ch = '_';
  }
  const fs::path path = dir / (stem + "-" + sha256_hex(source).substr(0, 16) + ".cu");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << source;
  out.close();
  if (!out) {
    log(LogLevel::Warn, "could not write kernel source to " + path.string());
    return "";
  }
  log(LogLevel::Debug, "wrote kernel source " + path.string());
  return path.string();
}

}  // namespace

std::string dump_source_if_requested(const std::string& program_name, const std::string& source) {
  const char* dir = std::getenv("SPARSEJIT_DUMP_SOURCE");
  if (dir == nullptr || *dir == '\0') return "";
  return write_source(dir, program_name, source);
}

std::string dump_failed_source(const std::string& program_name, const std::string& source) {
  const char* dir = std::getenv("SPARSEJIT_DUMP_SOURCE");
  if (dir != nullptr && *dir != '\0') return write_source(dir, program_name, source);
  std::error_code ec;
  const fs::path tmp = fs::temp_directory_path(ec);
  return write_source(ec ? fs::path("/tmp") : tmp, "sparsejit-failed-" + program_name, source);
}

}  // namespace sparsejit::jit
