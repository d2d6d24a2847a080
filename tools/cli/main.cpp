// The sparsejit command line: one subcommand per file in tools/cli/, registered here.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.hpp"
#include "sparsejit/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sparsejit: JIT-compiled sparse matrix products on NVIDIA GPUs"};
  app.require_subcommand(1);
  // Errors are one line (the CLI's rule for every failure), without CLI11's help hint.
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string(e.what()) + "\n"; });
  sparsejit::cli::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const sparsejit::Error& e) {
    std::cerr << "sparsejit: " << to_string(e.category()) << " error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "sparsejit: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
