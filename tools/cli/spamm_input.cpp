#include "cli/spamm_input.hpp"

#include <cstdio>
#include <optional>
#include <vector>

#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::cli {

namespace {

std::vector<std::string> fields_of(const std::string& spec) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  while (true) {
    const std::size_t colon = spec.find(':', start);
    fields.push_back(spec.substr(start, colon - start));
    if (colon == std::string::npos) return fields;
    start = colon + 1;
  }
}

double number(const std::string& spec, const std::string& field) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(field, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (field.empty() || used != field.size()) throw InvalidInputError("spamm input '" + spec + "': '" + field + "' is not a number");
  return x;
}

}  // namespace

Dense<double> spamm_matrix(const std::string& spec) {
  const std::vector<std::string> f = fields_of(spec);
  if (f.size() < 2 || f.size() > 3 || (f[0] != "algebraic" && f[0] != "exponential"))
    throw InvalidInputError("spamm input '" + spec + "' is not " + kSpammSpecHelp);
  const double n = number(spec, f[1]);
  if (n < 1 || n > 65536 || n != double(int32_t(n)))
    throw InvalidInputError("spamm input '" + spec + "': N = " + f[1] + " must be an integer in [1, 65536]");
  const bool algebraic = f[0] == "algebraic";
  const double lambda = f.size() == 3 ? number(spec, f[2]) : algebraic ? 0.1 : 0.995;
  const int32_t size = int32_t(n);
  return algebraic ? generate::algebraic_decay(size, size, 0.1, lambda, generate::DecaySigns::Positive, 0)
                   : generate::exponential_decay(size, size, 1.0, lambda, generate::DecaySigns::Positive, 0);
}

void add_spamm_options(CLI::App* cmd, SpammArgs& args) {
  cmd->add_option("--tau", args.tau, "SpAMM: the threshold τ (a tile product is computed iff ||A_ik||·||B_kj|| >= τ)");
  cmd->add_option("--valid-ratio", args.valid_ratio, "SpAMM: search τ for this share of tile products kept, in (0, 1]");
  cmd->add_option("--max-error", args.max_error, "SpAMM: the largest τ whose error bound is at most this");
  cmd->add_option("--precision", args.precision, "SpAMM: full | tf32 | fp16 | bf16")->capture_default_str();
  cmd->add_option("--tile", args.tile, "SpAMM: tile size 32, 64 or 128 (0: the planner's)")->capture_default_str();
}

SpammOptions spamm_options(const SpammArgs& args, const std::string& variant) {
  SpammOptions o;
  const auto given = [](double x) { return x == SpammArgs::kUnset ? std::optional<double>() : std::optional<double>(x); };
  o.tau = given(args.tau);
  o.valid_ratio = given(args.valid_ratio);
  o.max_error = given(args.max_error);
  o.precision = parse_spamm_precision(args.precision);
  o.tile = args.tile;
  if (!variant.empty()) {  // NAME[:key=value,...], as the other ops' --variant
    const ForcedChoice choice = parse_variant_choice(Op::SpAMM, variant, "--variant '" + variant + "'");
    o.variant = choice.variant;
    o.params = choice.params;
  }
  return o;
}

std::string describe_selection(const SpammInfo& info) {
  char line[256];
  std::snprintf(line, sizeof line, "tile %d, tau %.6g, valid ratio %.4f%% (%lld of %lld tile products), error bound %.6g", info.tile,
                info.tau, 100 * info.valid_ratio, static_cast<long long>(info.valid_products),
                static_cast<long long>(info.tile_products), info.error_bound);
  std::string text = line;
  if (info.search_iterations > 0) {
    std::snprintf(line, sizeof line, "; tau search: %d steps, %.3f ms", info.search_iterations, info.search_ms);
    text += line;
  }
  return text;
}

}  // namespace sparsejit::cli
