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

void add_measure_options(CLI::App* cmd, std::optional<double>& skip_margin, double& budget_ms, double& budget_calls) {
  cmd->add_option("--measure-skip-margin", skip_margin,
                  "auto does not time its shortlist when every other candidate is predicted this many times slower than "
                  "the model's choice (inf: always time; default: the model's own, else 1.5)");
  cmd->add_option("--measure-budget-ms", budget_ms, "Host time one measured selection may spend, in ms")->capture_default_str();
  cmd->add_option("--measure-budget-calls", budget_calls,
                  "The same budget in calls of the model's choice (its predicted time); below two settings' cost nothing "
                  "is timed (inf: --measure-budget-ms alone)")
      ->capture_default_str();
}

CLI::Option* add_memory_limit_option(CLI::App* cmd, int64_t& bytes) {
  return cmd->add_option("--memory-limit", bytes,
                         "SpGEMM: the most device memory the call may take for its workspace and C, in bytes (default: what "
                         "the device has free); row_hash splits C into row panels to fit, cuSPARSE takes ALG2/ALG3");
}

void apply_memory_limit(Options& options, Op op, const CLI::Option& given, int64_t bytes) {
  if (given.count() == 0) return;
  if (op != Op::SpGEMM) throw InvalidInputError(std::string("--memory-limit applies to --op spgemm only, not ") + to_string(op));
  if (bytes <= 0) throw InvalidInputError("--memory-limit " + std::to_string(bytes) + " must be a positive number of bytes");
  options.memory_limit_bytes = bytes;
}

std::string describe_spgemm_memory(const Decision& d) {
  if (!d.features.contains("memory")) return "memory: not planned (value type not supported)";
  const nlohmann::json& m = d.features.at("memory");
  const auto bytes = [](const nlohmann::json& v) { return v.is_null() ? std::string("-") : std::to_string(v.get<int64_t>()); };
  std::string line = "memory: budget " + (m.at("budget_bytes").is_null() ? std::string("unbounded") : bytes(m.at("budget_bytes")) + " bytes") +
                     " (free " + bytes(m.at("free_bytes")) + ", limit " + bytes(m.at("limit_bytes")) + "); NNZ(C) in [" +
                     bytes(m.at("c_nnz_bounds")[0]) + ", " + bytes(m.at("c_nnz_bounds")[1]) + "], sized at " +
                     bytes(m.at("c_nnz_assumed")) + "; peak bytes:";
  for (const auto& [variant, peak] : m.at("peak_bytes").items()) line += " " + variant + " " + bytes(peak);
  return line;
}

}  // namespace sparsejit::cli
