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

// Fills decision.candidates (priced by the model's "cost" section with each variant's terms)
// and the chosen variant: the forced one when given (source forced), else the cheapest
// eligible one (source model). Throws InvalidInputError for an unknown forced variant and
// UnsupportedError for a forced variant that is not eligible.
void choose(Decision& decision, const std::vector<VariantSpec>& variants, const nlohmann::json& model,
            const std::function<nlohmann::json(const std::string& variant)>& cost_terms,
            const std::optional<ForcedChoice>& forced);

}  // namespace sparsejit::plan
