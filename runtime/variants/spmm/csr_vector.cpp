// csr_vector: the RS-SpMM light (horizontal) kernel over the whole matrix: a group of 8/16/32
// lanes per row, 16-byte loads of B, plain stores (Aᵀ·B: C cleared, then atomics).
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

// A coarsening factor past what covers K only idles lanes, except 1 which is always valid.
bool useful_cf(const plan::SpmmProblem& p, int lanes, int cf) {
  return cf == 1 || (cf - 1) * lanes < vector_units(p, vector_width(p));
}

}  // namespace

class CsrVector final : public SpmmVariantOf<CsrVector> {
 public:
  CsrVector() : SpmmVariantOf("csr_vector", 20, "a lane group per row, 16-byte loads of B (RS-SpMM's light kernel)") {}

  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>&) const override {
    return light_params(in.problem);
  }

  void check(const plan::SpmmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    check_light_params(name, params, problem);
  }

  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json& params) const override {
    const Features& f = in.features;
    const plan::SpmmProblem& p = in.problem;
    nlohmann::json t = base_terms(in);
    const double vb = value_bytes(p);
    const double nnz = double(f.basic.nnz);
    const int64_t k_slices = slices(p.k, light_slice(params));
    t["sparse_bytes"] = nnz * (4.0 + vb) * k_slices + (f.basic.rows + 1.0) * 4.0;
    t["critical_loads"] = light_critical_loads(double(f.basic.row_max), params, p.transpose_a);
    if (p.transpose_a) {  // memset C, read each row of B once, scatter every product
      t["launch"] = 2.0;
      t["gather_bytes"] = double(f.basic.rows) * p.k * vb;
      t["atomic_bytes"] = nnz * p.k * vb;
    }
    return t;
  }

  // Half the lanes per row with twice the vectors each (two rows per warp: short rows), and back.
  std::vector<nlohmann::json> neighbour_changes(const plan::SpmmProblem&, const nlohmann::json& params) const override {
    const int lanes = params.at("lanes_per_row").get<int>(), cf = params.at("cf_h").get<int>();
    return {{{"lanes_per_row", lanes / 2}, {"cf_h", cf * 2}}, {{"lanes_per_row", lanes * 2}, {"cf_h", cf / 2}}};
  }

  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    for (int lanes : {8, 16, 32}) {
      for (int cf : {1, 2}) {
        if (!useful_cf(in.problem, lanes, cf)) continue;
        nlohmann::json params = light_params(in.problem);
        params["lanes_per_row"] = lanes;
        params["cf_h"] = cf;
        space.push_back(params);
      }
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem& problem) const override {
    return {light_spec(d.params, problem.dtype, problem.transpose_a)};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    Launch launch = light_launch(p.rt, p.decision, p.problem.dtype, p.problem.transpose_a, p.a.rows(), p.problem.k);
    return std::make_unique<CsrKernelExecution<T>>(std::move(launch), p.problem.transpose_a);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, csr_vector, sparsejit::variants::spmm::CsrVector)
