// The fit of one variant's cost coefficients to timed calls, shared by `sparsejit tune --op
// spamm` (tuner/spamm_fit.hpp) and `tune --op spgemm` (tuner/spgemm_fit.hpp). Pure CPU.
//
// A variant's model is linear: ms ≈ Σ coefficient · term over the cost terms its planner
// prices it with (models/cost_model.hpp). The fit is the non-negative least squares in relative
// error, Σ ((predicted - t) / t)², since the times span orders of magnitude and the planner
// compares ratios. Fitted: the terms with a coefficient that some timing exercises (a non-zero
// amount), except
//   - "launch", held at the base model's value: a few µs per launch, as constant within one
//     op's timings as the intercept terms (SpAMM's c_tiles at one size, SpGEMM's sync), so the
//     timings cannot tell the two apart;
//   - the terms of a row's `front`: work the call paid besides the variant's own cost (SpAMM's
//     norm pass and selection), priced at the base model's coefficients and taken off first.
// A variant with fewer timings than terms to fit keeps its base coefficients (the note says so).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace sparsejit::tuner {

// One timed call of a variant.
struct CostRow {
  const nlohmann::json* terms;            // its cost terms for the call (the Decision's candidate)
  const nlohmann::json* front = nullptr;  // what it paid besides them, priced not fitted; nullptr: nothing
  double ms = 0;                          // the whole call, device ms
};

// "%.3g" and the like, for the fits' notes and errors.
std::string format_number(const char* format, double x);

// "a, b, c": the fits' lists of terms and variants.
std::string comma_list(const std::vector<std::string>& names);

// Σ coefficient · amount over the terms (a term without a coefficient costs nothing, as in the
// planner's formulas).
double priced(const nlohmann::json& coefficients, const nlohmann::json& terms);

// The call's predicted ms under `cost` ({variant: coefficients}), its front included.
double predicted(const nlohmann::json& cost, const std::string& variant, const CostRow& row);

// An InvalidInputError, "<op>: <what> took <ms> ms (a time must be positive)", unless `ms`
// is positive and finite; "<op>: the model has no cost entry for variant '<variant>'" when
// `cost` has none.
void check_timing(const std::string& op, const nlohmann::json& cost, const std::string& variant, double ms, const std::string& what);

// Median and worst |predicted / measured - 1| of the rows (at least one) under `cost`.
std::pair<double, double> relative_errors(const nlohmann::json& cost, const std::string& variant, const std::vector<CostRow>& rows);

// Fits `variant`'s coefficients in `cost` to `rows` (see above), appends "<variant> <term>" of
// each coefficient fitted to `fitted`, and returns the note: "<variant>: fitted <terms> on <n>
// timings: |predicted/measured - 1| median <before> -> <after>, worst <before> -> <after>[;
// zero: <terms>]" or "<variant>: kept (<n> timings for <m> terms to fit[: <terms>])".
std::string fit_variant(nlohmann::json& cost, const std::string& variant, const std::vector<CostRow>& rows, std::vector<std::string>& fitted);

}  // namespace sparsejit::tuner
