#include "base/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "sparsejit/error.hpp"

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

namespace {

// The level a SPARSEJIT_LOG value names; unset or empty is the default, warn.
std::optional<LogLevel> parse_log_level(const char* value) {
  if (value == nullptr || *value == '\0' || std::strcmp(value, "warn") == 0) return LogLevel::Warn;
  if (std::strcmp(value, "error") == 0) return LogLevel::Error;
  if (std::strcmp(value, "info") == 0) return LogLevel::Info;
  if (std::strcmp(value, "debug") == 0) return LogLevel::Debug;
  return std::nullopt;
}

}  // namespace

LogLevel log_threshold() { return parse_log_level(std::getenv("SPARSEJIT_LOG")).value_or(LogLevel::Warn); }

void require_valid_log_setting() {
  const char* value = std::getenv("SPARSEJIT_LOG");
  if (!parse_log_level(value))
    throw InvalidInputError("SPARSEJIT_LOG=" + std::string(value) + " is not a log level (expected error, warn, info or debug)");
}

bool log_enabled(LogLevel level) { return static_cast<int>(level) <= static_cast<int>(log_threshold()); }

void log(LogLevel level, const std::string& message) {
  if (!log_enabled(level)) return;
  const std::string line = std::string("sparsejit: ") + to_string(level) + ": " + message + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

}  // namespace sparsejit
