#include "base/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace sparsejit {

const char* to_string(LogLevel level) {
  switch (level) {
    case LogLevel::Error: return "error";
    case LogLevel::Warn: return "warning";
    case LogLevel::Info: return "info";
    case LogLevel::Debug: return "debug";
  }
  return "unknown";
}

LogLevel log_threshold() {
  const char* value = std::getenv("SPARSEJIT_LOG");
  if (value == nullptr) return LogLevel::Warn;
  if (std::strcmp(value, "error") == 0) return LogLevel::Error;
  if (std::strcmp(value, "info") == 0) return LogLevel::Info;
  if (std::strcmp(value, "debug") == 0) return LogLevel::Debug;
  return LogLevel::Warn;
}

bool log_enabled(LogLevel level) { return static_cast<int>(level) <= static_cast<int>(log_threshold()); }

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  const std::string line = std::string("sparsejit: ") + to_string(level) + ": " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace sparsejit
