// SpMM planner: C = A·B (or Aᵀ·B). Candidates: our csr_rowwarp kernel and cuSPARSE.
// Order of precedence (DESIGN.md): forced, tuned record, model (cost formulas), default.
#include <algorithm>

#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "plan/tuned.hpp"

namespace sparsejit::plan {

namespace {

std::vector<VariantSpec> spmm_candidates(const SpmmProblem& p) {
  const bool supported_type = p.dtype == DType::F32 || p.dtype == DType::F64;
  const std::string type_reason = supported_type ? "" : std::string("value type ") + to_string(p.dtype) + " not supported";
  // Each lane keeps cols_per_lane columns of C in registers, so one pass over a row covers
  // 32 * cols_per_lane columns; past 128 columns a second pass beats register pressure.
  const int cols_per_lane = std::clamp((p.k + 31) / 32, 1, 4);
  VariantSpec rowwarp{"csr_rowwarp", {{"warps_per_block", 4}, {"cols_per_lane", cols_per_lane}}, type_reason};
  if (rowwarp.rejected_because.empty() && p.transpose_a) rowwarp.rejected_because = "computes A·B only (Aᵀ·B needs the split variants)";
  // CSR_ALG2 is cuSPARSE's row-major CSR algorithm with deterministic results.
  VariantSpec vendor{"cusparse", {{"alg", 2}}, type_reason};
  return {rowwarp, vendor};
}

nlohmann::json spmm_terms(const Features& f, const SpmmProblem& p) {
  const double value_bytes = double(size_of(p.dtype));
  const double nnz = double(f.basic.nnz);
  const double out_rows = p.transpose_a ? f.basic.cols : f.basic.rows;
  return {{"launch", 1.0},
          {"sparse_bytes", nnz * (4.0 + value_bytes) + (f.basic.rows + 1.0) * 4.0},
          {"gather_bytes", nnz * p.k * value_bytes},
          {"output_bytes", out_rows * p.k * value_bytes},
          {"critical_row", double(f.basic.row_max) * p.k}};
}

}  // namespace

std::vector<std::string> spmm_variants() {
  std::vector<std::string> names;
  for (const auto& v : spmm_candidates({})) names.push_back(v.name);
  return names;
}

Decision plan_spmm(const Features& features, const SpmmProblem& problem, const DeviceTarget& device, const Options& options) {
  Decision d;
  d.op = Op::SpMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = to_json(features);
  d.features["k"] = problem.k;
  d.features["value_bytes"] = size_of(problem.dtype);
  d.features["transpose_a"] = problem.transpose_a;
  // Accumulations per nonzero: how much of the clustering survives the column panels (a
  // threshold-tree feature, comparable across matrix sizes).
  d.features["accumulations_per_nnz"] =
      features.basic.nnz > 0 ? double(features.clustering.accumulations) / double(features.basic.nnz) : 0.0;
  const nlohmann::json terms = spmm_terms(features, problem);
  choose(d, spmm_candidates(problem), *planner_model(Op::SpMM, device),
         [&](const std::string&) { return terms; }, forced_choice(Op::SpMM, options));
  const std::string bucket = spmm_bucket(features, problem);
  d.features["feature_bucket"] = bucket;
  apply_tuned_choice(d, device, bucket);
  return d;
}

}  // namespace sparsejit::plan
