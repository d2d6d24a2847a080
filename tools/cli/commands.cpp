#include "cli/commands.hpp"

namespace sparsejit::cli {

void register_commands(CLI::App& app) {
  add_info_command(app);
  add_inspect_command(app);
  add_demo_command(app);
  add_explain_command(app);
  add_run_command(app);
  add_cache_command(app);
  add_bench_command(app);
  add_tune_command(app);
  add_soak_command(app);
}

}  // namespace sparsejit::cli
