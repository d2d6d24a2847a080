#include <chrono>
#include <iostream>

#include "cli/commands.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::cli {

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Generate a matrix, inspect it, then plan, compile and run SpMM");
  static std::string spec = "clustered:100000:32:0.5:16";
  static int32_t k = 128;
  cmd->add_option("--matrix", spec, "Generator spec (see `sparsejit inspect --help` of generate specs)")->capture_default_str();
  cmd->add_option("-k", k, "Columns of the dense operand")->capture_default_str();
  cmd->callback([] {
    const auto start = std::chrono::steady_clock::now();
    const Csr<double> a = generate::from_spec(spec, /*seed=*/1);
    const double gen_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::cout << "generated " << spec << " in " << gen_ms << " ms\n" << describe(inspect(a.pattern()));
  });
}

}  // namespace sparsejit::cli
