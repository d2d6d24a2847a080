// The sparsejit command line: one subcommand per file in tools/cli/, registered here.
#include <CLI/CLI.hpp>

#include <iostream>

#include "cli/commands.hpp"
#include "sparsejit/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sparsejit: JIT-compiled sparse matrix products on NVIDIA GPUs"};
  app.require_subcommand(1);
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
