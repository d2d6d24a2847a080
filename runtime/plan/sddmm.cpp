// SDDMM planner: P = S ∘ (A·Bᵀ). Candidates: our coo_flat kernel and cuSPARSE.
#include <algorithm>

#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "plan/tuned.hpp"

namespace sparsejit::plan {

namespace {

// Widest 16-byte-or-less vector that divides K and both leading dimensions, so every row of
// A and B starts aligned (device allocations are 256-byte aligned).
int vector_width(const SddmmProblem& p) {
  const int widest = p.dtype == DType::F64 ? 2 : 4;
  for (int w = widest; w > 1; w /= 2)
    if (p.k % w == 0 && p.lda % w == 0 && p.ldb % w == 0) return w;
  return 1;
}

// Threads that share one nonzero's dot product: enough to cover K in one vector step,
// between 4 and 32 (a power of two, so the shuffle reduction is a tree).
int group_size(const SddmmProblem& p, int width) {
  const int steps = (p.k + width - 1) / width;
  int g = 4;
  while (g < 32 && g < steps) g *= 2;
  return g;
}

std::vector<VariantSpec> sddmm_candidates(const SddmmProblem& p) {
  const bool supported_type = p.dtype == DType::F32 || p.dtype == DType::F64;
  const std::string type_reason = supported_type ? "" : std::string("value type ") + to_string(p.dtype) + " not supported";
  const int width = vector_width(p);
  VariantSpec flat{"coo_flat", {{"vector_width", width}, {"group_size", group_size(p, width)}, {"threads_per_block", 256}}, type_reason};
  VariantSpec vendor{"cusparse", nlohmann::json::object(), type_reason};
  return {flat, vendor};
}

nlohmann::json sddmm_terms(const Features& f, const SddmmProblem& p) {
  const double value_bytes = double(size_of(p.dtype));
  const double nnz = double(f.basic.nnz);
  return {{"launch", 1.0},
          {"sparse_bytes", nnz * (8.0 + 2.0 * value_bytes)},
          {"gather_bytes", 2.0 * nnz * p.k * value_bytes}};
}

}  // namespace

std::vector<std::string> sddmm_variants() {
  std::vector<std::string> names;
  for (const auto& v : sddmm_candidates({1, DType::F32, 1, 1})) names.push_back(v.name);
  return names;
}

Decision plan_sddmm(const Features& features, const SddmmProblem& problem, const DeviceTarget& device, const Options& options) {
  Decision d;
  d.op = Op::SDDMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = to_json(features);
  d.features["k"] = problem.k;
  d.features["value_bytes"] = size_of(problem.dtype);
  const nlohmann::json terms = sddmm_terms(features, problem);
  choose(d, sddmm_candidates(problem), *planner_model(Op::SDDMM, device),
         [&](const std::string&) { return terms; }, forced_choice(Op::SDDMM, options));
  const std::string bucket = sddmm_bucket(features, problem);
  d.features["feature_bucket"] = bucket;
  apply_tuned_choice(d, device, bucket);
  return d;
}

}  // namespace sparsejit::plan
