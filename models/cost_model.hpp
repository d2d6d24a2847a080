// Linear cost formulas: predicted_ms = Σ coefficient[term] · term, the form of RS-SpMM's
// exec_time = C1·acc_dense + C2·nnz_d. The planner computes the terms of a variant (bytes
// streamed, bytes gathered, launches, ...); the model file holds the coefficients, per
// device once tuned.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

namespace sparsejit::models {

// coefficients: {"term": ms_per_unit, ...}; terms: {"term": amount, ...}. Every coefficient
// needs its term (InvalidInputError naming it); terms without a coefficient cost nothing.
double linear_cost(const nlohmann::json& coefficients, const nlohmann::json& terms);

}  // namespace sparsejit::models
