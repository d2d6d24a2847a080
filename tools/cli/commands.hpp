// Each CLI subcommand lives in its own file and adds itself to the app through one of these.
#pragma once
#include <CLI/CLI.hpp>

namespace sparsejit::cli {

// The version of the JSON objects info, inspect, explain and cache (stats, verify, prune,
// clear) print, as their "format_version" field; raised when a field changes meaning or goes.
constexpr int kJsonFormatVersion = 1;

void register_commands(CLI::App& app);
void add_info_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_demo_command(CLI::App& app);
void add_explain_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_cache_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_tune_command(CLI::App& app);
void add_soak_command(CLI::App& app);

}  // namespace sparsejit::cli
