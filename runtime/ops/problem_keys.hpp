// What each op's plans and measured selections are stored under besides the pattern: the
// shared problem key (ops::problem_key) and what the op adds. Defined beside each executor,
// which uses them for its calls and for explain alike.
#pragma once
#include <string>

#include "plan/planner.hpp"
#include "sparsejit/options.hpp"

namespace sparsejit::ops {

// ... and the alignment of B's and C's leading dimensions (all the vector choice depends on).
std::string spmm_problem_key(const plan::SpmmProblem& problem, const Options& options);
// ... and A's and B's leading dimensions and whether the caller declared the pattern reused.
std::string sddmm_problem_key(const plan::SddmmProblem& problem, const Options& options);

}  // namespace sparsejit::ops
