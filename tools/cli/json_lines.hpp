// What the commands that append JSON lines to a --json-out file share (bench, soak).
#pragma once
#include <fstream>
#include <memory>
#include <string>

namespace sparsejit::cli {

// The time now, ISO-8601 UTC (a record's "date").
std::string utc_now();

// The --json-out file opened for appending, before any work, so a bad path fails at once;
// none without the option. IoError "<command>: cannot open --json-out '<path>' for appending".
std::unique_ptr<std::ofstream> open_json_out(const std::string& command, const std::string& path);

}  // namespace sparsejit::cli
