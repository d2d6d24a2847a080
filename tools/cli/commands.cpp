#include "cli/commands.hpp"

namespace sparsejit::cli {

void register_commands(CLI::App& app) {
  add_info_command(app);
}

}  // namespace sparsejit::cli
