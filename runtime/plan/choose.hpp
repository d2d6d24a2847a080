// The steps every planner shares: apply a forced choice, price candidates with the model's
// cost formulas, and pick the cheapest. Op-specific terms and parameters stay in the op's
// planner file.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/decision.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::plan {

struct VariantSpec {
  std::string name;
  nlohmann::json default_params;           // every parameter the variant takes, with its default
  std::string rejected_because;            // non-empty: not eligible for this problem
};

// Merges `forced` over `defaults`; a key the variant does not take is an InvalidInputError
// naming it and the variant.
nlohmann::json merge_params(const std::string& variant, const nlohmann::json& defaults, const nlohmann::json& forced);

// The cost terms of a variant run with these parameters (an op's planner computes them).
using CostTerms = std::function<nlohmann::json(const std::string& variant, const nlohmann::json& params)>;
// Throws an Error naming the value when a variant cannot run with these parameters.
using ParamsCheck = std::function<void(const std::string& variant, const nlohmann::json& params)>;

// Fills decision.candidates (priced by the model's "cost" section with each eligible variant's
// terms at its default params, terms kept in the candidate) and the chosen variant: the
// forced one when given (source forced), else the cheapest eligible one (source model). The
// forced candidate's entry is priced at the forced params instead (checked first by
// check_forced when given), so its terms are those of what runs: the tuner fits the cost
// coefficients on them. Throws InvalidInputError for an unknown forced variant and
// UnsupportedError for a forced variant that is not eligible.
void choose(Decision& decision, const std::vector<VariantSpec>& variants, const nlohmann::json& model,
            const CostTerms& cost_terms, const std::optional<ForcedChoice>& forced, const ParamsCheck& check_forced = {});

}  // namespace sparsejit::plan
