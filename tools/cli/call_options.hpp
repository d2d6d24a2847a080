// The call options that explain and run take alike from the command line.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "sparsejit/decision.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::cli {

// Options for one call of `op`: `variant` is "" (auto) or "name[:key=value,...]" as
// SPARSEJIT_FORCE takes it after the op (e.g. rs:threshold=8); `transpose` is C = Aᵀ·B, which
// only SpMM has. Throws InvalidInputError naming the bad part.
Options call_options(Op op, const std::string& variant, bool transpose);

// --measure-skip-margin, --measure-budget-ms and --measure-budget-calls (Options::
// measure_skip_margin, measure_budget_ms and measure_budget_calls, the measured selection's
// limits), bound to the three values.
void add_measure_options(CLI::App* cmd, std::optional<double>& skip_margin, double& budget_ms, double& budget_calls);

// --memory-limit BYTES (Options::memory_limit_bytes, SpGEMM), bound to `bytes`; the returned
// option's count() says whether it was given.
CLI::Option* add_memory_limit_option(CLI::App* cmd, int64_t& bytes);
// Sets options.memory_limit_bytes when --memory-limit was given. InvalidInputError naming the
// value when it is not positive, and naming the op when it is not spgemm.
void apply_memory_limit(Options& options, Op op, const CLI::Option& given, int64_t bytes);

// One line of a SpGEMM decision's memory (its features' "memory"): the budget, NNZ(C)'s bounds
// and each candidate's peak.
std::string describe_spgemm_memory(const Decision& decision);

}  // namespace sparsejit::cli
