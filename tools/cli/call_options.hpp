// The call options that explain and run take alike from the command line.
#pragma once
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
void add_measure_options(CLI::App* cmd, double& skip_margin, double& budget_ms, double& budget_calls);

}  // namespace sparsejit::cli
