#include "models/cost_model.hpp"

#include "sparsejit/error.hpp"

namespace sparsejit::models {

double linear_cost(const nlohmann::json& coefficients, const nlohmann::json& terms) {
  double total = 0;
  for (const auto& [name, coefficient] : coefficients.items()) {
    if (!coefficient.is_number()) throw InvalidInputError("cost coefficient '" + name + "' is not a number");
    if (!terms.contains(name) || !terms[name].is_number())
      throw InvalidInputError("cost formula needs term '" + name + "', which the planner did not provide");
    total += coefficient.get<double>() * terms[name].get<double>();
  }
  return total;
}

}  // namespace sparsejit::models
