#include "cli/call_options.hpp"

#include "sparsejit/error.hpp"

namespace sparsejit::cli {

Options call_options(Op op, const std::string& variant, bool transpose) {
  if (transpose && op != Op::SpMM)
    throw InvalidInputError(std::string("--transpose (C = Aᵀ·B) applies to --op spmm only, not ") + to_string(op));
  Options options;
  options.transpose_a = transpose;
  if (variant.empty()) return options;
  const ForcedChoice choice = parse_variant_choice(op, variant, "--variant '" + variant + "'");
  options.variant = choice.variant;
  options.params = choice.params;
  return options;
}

void add_measure_options(CLI::App* cmd, double& skip_margin, double& budget_ms, double& budget_calls) {
  cmd->add_option("--measure-skip-margin", skip_margin,
                  "auto does not time its shortlist when every other candidate is predicted this many times slower than "
                  "the model's choice (inf: always time)")
      ->capture_default_str();
  cmd->add_option("--measure-budget-ms", budget_ms, "Host time one measured selection may spend, in ms")->capture_default_str();
  cmd->add_option("--measure-budget-calls", budget_calls,
                  "The same budget in calls of the model's choice (its predicted time); below two settings' cost nothing "
                  "is timed (inf: --measure-budget-ms alone)")
      ->capture_default_str();
}

}  // namespace sparsejit::cli
