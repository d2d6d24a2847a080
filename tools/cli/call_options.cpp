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

}  // namespace sparsejit::cli
