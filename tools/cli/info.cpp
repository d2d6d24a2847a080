#include <iostream>

#include "cli/commands.hpp"

namespace sparsejit::cli {

void add_info_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Versions, build options, GPU and cache location");
  cmd->callback([] { std::cout << "sparsejit " << SPARSEJIT_VERSION_STRING << "\n"; });
}

}  // namespace sparsejit::cli
