// The whole command line as functions: main() is build_app then run_app, and the argument
// parser's fuzzer (tests/fuzz/fuzz_cli_args.cpp) calls the same two on fuzzed argv vectors.
#pragma once
#include <CLI/CLI.hpp>

#include <ostream>

namespace sparsejit::cli {

// Every subcommand (commands.hpp), one of them required, and --version.
void build_app(CLI::App& app);

// Parses argv with `app` and runs the command it names. Returns the exit status: 0, or 1
// after one line "sparsejit: ..." on `err` (the README's promise for every failure, the
// parser's included); --help and --version print to `out` and return 0.
int run_app(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace sparsejit::cli
