#include "cli/json_lines.hpp"

#include <chrono>
#include <ctime>

#include "sparsejit/error.hpp"

namespace sparsejit::cli {

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buffer;
}

std::unique_ptr<std::ofstream> open_json_out(const std::string& command, const std::string& path) {
  if (path.empty()) return nullptr;
  auto out = std::make_unique<std::ofstream>(path, std::ios::app);
  if (!*out) throw IoError(command + ": cannot open --json-out '" + path + "' for appending");
  return out;
}

}  // namespace sparsejit::cli
