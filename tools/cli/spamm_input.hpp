// The dense inputs of `explain`, `run` and `bench` with --op spamm: decay matrices named by a
// spec (A = B, as in cuSpAMM's evaluation), and the options every SpAMM command shares.
#pragma once
#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

#include "sparsejit/matrix.hpp"
#include "sparsejit/spamm.hpp"

namespace sparsejit::cli {

// "algebraic:N[:LAMBDA]"  N×N, a_ij = 0.1 / (|i-j|^LAMBDA + 1), LAMBDA 0.1 by default (the paper's)
// "exponential:N[:LAMBDA]" N×N, a_ij = LAMBDA^|i-j|, LAMBDA 0.995 by default
// Positive entries. InvalidInputError naming the spec and the bad field.
Dense<double> spamm_matrix(const std::string& spec);
inline constexpr const char* kSpammSpecHelp = "algebraic:N[:LAMBDA] (0.1/(|i-j|^LAMBDA+1), LAMBDA 0.1) or exponential:N[:LAMBDA] (LAMBDA^|i-j|, 0.995)";

// The command-line form of SpammOptions' threshold, precision, tile and variant.
struct SpammArgs {
  double tau = kUnset, valid_ratio = kUnset, max_error = kUnset;  // kUnset: not given
  static constexpr double kUnset = -1e308;
  std::string precision = "full";
  int32_t tile = 0;
};
void add_spamm_options(CLI::App* cmd, SpammArgs& args);
// The options they give (checked by the library when used); `variant` forces a variant.
SpammOptions spamm_options(const SpammArgs& args, const std::string& variant);
// One line: tile, τ, kept share and products, bound, search steps.
std::string describe_selection(const SpammInfo& info);

}  // namespace sparsejit::cli
