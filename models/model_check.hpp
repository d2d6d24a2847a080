// The shape a model must have before a planner reads it. Shipped models have it by
// construction (tests check them); a tuned model comes back from the cache database, where a
// damaged or hand-edited one must not fail every call: plan_sources checks it and falls back
// to the shipped model, naming the problem once.
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace sparsejit::models {

// What is wrong with `model` as a planner reads it, or nullopt: an object; "id" and "version"
// strings when present; "cost" an object of {term: number} objects; "tree" and
// "threshold_tree" valid decision trees (validate_tree) when present; "launch" an object of
// {parameter: number} objects when present, where a parameter may be a string only if it is
// one in `shipped` (the op's shipped model, e.g. SDDMM's "combine"); "neighbours" a valid
// neighbour correction when present (neighbours_problem).
std::optional<std::string> model_problem(const nlohmann::json& model, const nlohmann::json& shipped);

}  // namespace sparsejit::models
