// csr_rowwarp: one warp per row of A, scalar loads, each lane holding cols_per_lane columns of
// the row of C in registers (A·B only). The simplest kernel; fast on short, even rows at small K.
#include <algorithm>

#include "ops/call_common.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

jit::KernelSpec rowwarp_spec(const nlohmann::json& params, DType dtype) {
  const bool f64 = dtype == DType::F64;
  return {"spmm_csr_rowwarp.cu", "sj_spmm_csr_rowwarp",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"},
           {"warps_per_block", params.at("warps_per_block")}, {"cols_per_lane", params.at("cols_per_lane")},
           {"fp16", dtype == DType::F16}, {"bf16", dtype == DType::BF16}},
          {}};
}

// Each lane keeps cols_per_lane columns of C in registers, so one pass over a row covers
// 32 * cols_per_lane columns; past 128 columns a second pass beats register pressure.
nlohmann::json rowwarp_params(const plan::SpmmProblem& p) {
  return {{"warps_per_block", 4}, {"cols_per_lane", std::clamp((p.k + 31) / 32, 1, 4)}};
}

void require_in(const nlohmann::json& params, const char* key, int lo, int hi) {
  const int64_t v = params.at(key).get<int64_t>();
  if (v < lo || v > hi)
    throw InvalidInputError(std::string("csr_rowwarp: ") + key + " = " + std::to_string(v) + " must be in [" +
                            std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

}  // namespace

class CsrRowwarp final : public SpmmVariantOf<CsrRowwarp> {
 public:
  CsrRowwarp() : SpmmVariantOf("csr_rowwarp", 10, "one warp per row, scalar loads (A·B only)") {}

  std::string rejected(const SpmmPlanInputs& in) const override {
    std::string reason = SpmmVariant::rejected(in);
    if (reason.empty() && in.problem.transpose_a) reason = "computes A·B only (Aᵀ·B needs the split variants)";
    return reason;
  }

  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>&) const override {
    return rowwarp_params(in.problem);
  }

  // A block holds at most 1024 threads; a lane's register row at most 4 columns.
  void check(const plan::SpmmProblem&, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    require_in(params, "warps_per_block", 1, 32);
    require_in(params, "cols_per_lane", 1, 4);
  }

  // csr_rowwarp walks its longest row once per pass of 32 * cols_per_lane columns, one B load
  // after another (the first benchmark: about 0.15-0.3 µs per nonzero of the longest row at
  // K = 32, e.g. cora 168 nonzeros 26 µs, email-Enron 1383 nonzeros 392 µs).
  // Every pass re-reads the row's indices and values, so A's bytes count once per pass.
  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json& params) const override {
    nlohmann::json t = base_terms(in);
    const double passes = ceil_div(in.problem.k, 32.0 * params.at("cols_per_lane").get<int>());
    t["critical_loads"] = double(in.features.basic.row_max) * passes;
    t["sparse_bytes"] = t["sparse_bytes"].get<double>() * passes;
    return t;
  }

  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    if (in.problem.transpose_a) return {};
    return {rowwarp_params(in.problem)};
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem& problem) const override {
    return {rowwarp_spec(d.params, problem.dtype)};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    const ops::LoadedKernel loaded = load(p.rt, p.decision, rowwarp_spec(p.decision.params, p.problem.dtype));
    const int warps = p.decision.params.at("warps_per_block").template get<int>();
    Launch launch{loaded.kernel, {ops::blocks_for(p.features.basic.rows, warps), 1, 1}, {unsigned(32 * warps), 1, 1}, 0};
    return std::make_unique<CsrKernelExecution<T>>(std::move(launch), false);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, csr_rowwarp, sparsejit::variants::spmm::CsrRowwarp)
