// The sparsejit command line: one subcommand per file in tools/cli/, registered in
// commands.cpp; app.cpp parses, runs and reports (one line "sparsejit: ..." and exit status 1
// for every failure, the argument parser's included).
#include <iostream>

#include "cli/app.hpp"

int main(int argc, char** argv) {
  CLI::App app{"sparsejit: JIT-compiled sparse matrix products on NVIDIA GPUs"};
  sparsejit::cli::build_app(app);
  return sparsejit::cli::run_app(app, argc, argv, std::cout, std::cerr);
}
