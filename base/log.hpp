// Diagnostics to stderr, filtered by SPARSEJIT_LOG (error|warn|info|debug; default warn).
#pragma once
#include <string>

namespace sparsejit {

enum class LogLevel { Error = 0, Warn = 1, Info = 2, Debug = 3 };

const char* to_string(LogLevel level);

// The level SPARSEJIT_LOG asks for; an unset or unknown value means Warn. Read on every call
// so a test or a long-running host can change it without restarting.
LogLevel log_threshold();
// Throws InvalidInputError naming SPARSEJIT_LOG's value when it is set to something other
// than a level. The library itself never fails a call over it (it logs at warn); the CLI
// refuses to start, so a typo does not silently hide diagnostics.
void require_valid_log_setting();
bool log_enabled(LogLevel level);
// Writes "sparsejit: <level>: <message>\n" to stderr as one write, so lines from several
// threads or processes do not interleave.
void log(LogLevel level, const std::string& message);

}  // namespace sparsejit
