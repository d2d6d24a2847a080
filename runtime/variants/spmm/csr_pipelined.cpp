// csr_pipelined: a lane group per row and one vector of C a lane, walking the row in chunks
// whose (column, value) pairs are loaded a chunk ahead while up to 32 B rows are in flight a
// lane (A·B only). Made for few-row layers at wide K, where csr_vector's walk waits on its loads
// (bench/results/2026-11-29-h200-spmm-walk: CSR_ALG3 keeps many loads in flight there).
#include "ops/call_common.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

constexpr int kPipelinedThreads = 256;

// Columns of C one block covers (its gridDim.y is ceil(K / this)).
int pipelined_slice(const nlohmann::json& params) {
  return params.at("lanes_per_row").get<int>() * params.at("vec_width").get<int>();
}

// 256 threads a block, or 128 where 256-thread blocks would leave more than half the SMs idle:
// on the H200 that made few-row layers 1.1-1.3x faster at 8-64 blocks, level at 96, and 5-10%
// slower from 128 on (bench/results/2026-11-29-h200-spmm-pipelined/block_threads/).
int block_threads_for(const SpmmPlanInputs& in, const nlohmann::json& params) {
  const double rows_per_block = kPipelinedThreads / params.at("lanes_per_row").get<int>();
  const double blocks = ceil_div(in.features.basic.rows, rows_per_block) * double(slices(in.problem.k, pipelined_slice(params)));
  return blocks * 2 <= in.device.multiprocessors ? kPipelinedThreads / 2 : kPipelinedThreads;
}

// A chunk of `chunk` nonzeros with `unroll` B loads in flight, for lane groups of `lanes`.
nlohmann::json pipelined_params(const SpmmPlanInputs& in, int lanes, int chunk, int unroll) {
  nlohmann::json params = {{"vec_width", vector_width(in.problem)}, {"lanes_per_row", lanes}, {"pairs_per_lane", chunk / lanes},
                           {"unroll", unroll}};
  params["block_threads"] = block_threads_for(in, params);
  return params;
}

jit::KernelSpec pipelined_spec(const nlohmann::json& params, DType dtype) {
  nlohmann::json p = vector_types(params, dtype);
  for (const char* key : {"lanes_per_row", "pairs_per_lane", "unroll", "block_threads"}) p[key] = params.at(key).get<int>();
  return {"spmm_csr_pipelined.cu", "sj_spmm_csr_pipelined", p, {}};
}

}  // namespace

class CsrPipelined final : public SpmmVariantOf<CsrPipelined> {
 public:
  CsrPipelined()
      : SpmmVariantOf("csr_pipelined", 25, "a lane group per row, the next chunk's indices loaded while 16-32 B rows are in flight (A·B only)") {}

  std::string rejected(const SpmmPlanInputs& in) const override {
    std::string reason = SpmmVariant::rejected(in);
    if (reason.empty() && in.problem.transpose_a) reason = "computes A·B only";
    return reason;
  }

  // The lanes covering K with a chunk of 32 and 16 loads in flight: the setting the model's
  // records timed (the cost formula's critical loads alone would always take 32 in flight).
  // The block size follows the grid (block_threads_for).
  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>&) const override {
    return pipelined_params(in, lanes_covering_k_and_32(in.problem).front(), 32, 16);
  }

  // Unroll 32 keeps 32 vectors a lane in registers: 256 threads a block leave each thread the
  // 255 registers that takes without spilling.
  void check(const plan::SpmmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    require_one_of(name, params, "lanes_per_row", {8, 16, 32});
    require_one_of(name, params, "pairs_per_lane", {1, 2, 4});
    require_one_of(name, params, "unroll", {1, 2, 4, 8, 16, 32});
    require_one_of(name, params, "block_threads", {64, 128, 256});
    const int chunk = params.at("lanes_per_row").get<int>() * params.at("pairs_per_lane").get<int>();
    if (chunk % params.at("unroll").get<int>() != 0)
      throw InvalidInputError("csr_pipelined: unroll = " + params.at("unroll").dump() + " must divide lanes_per_row x pairs_per_lane = " +
                              std::to_string(chunk));
    check_vector_width(name, params, problem);
  }

  // Round trips of the longest row: its row offsets and first chunk, then one per `unroll`
  // nonzeros (the next chunk's indices arrive while the current chunk's B rows load).
  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json& params) const override {
    const Features& f = in.features;
    const plan::SpmmProblem& p = in.problem;
    nlohmann::json t = base_terms(in);
    const double k_slices = double(slices(p.k, pipelined_slice(params)));
    t["sparse_bytes"] = double(f.basic.nnz) * (4.0 + value_bytes(p)) * k_slices + (f.basic.rows + 1.0) * 4.0 * k_slices;
    t["critical_loads"] = ceil_div(double(f.basic.row_max), params.at("unroll").get<int>()) + 2.0;
    return t;
  }

  std::vector<nlohmann::json> neighbour_changes(const plan::SpmmProblem&, const nlohmann::json& params) const override {
    const int pairs = params.at("pairs_per_lane").get<int>(), unroll = params.at("unroll").get<int>();
    return {{{"pairs_per_lane", pairs * 2}, {"unroll", unroll * 2}}, {{"pairs_per_lane", pairs / 2}, {"unroll", unroll / 2}}};
  }

  // The lanes covering K and 32 lanes, each with a chunk of 32 nonzeros (16 loads in flight)
  // and one of 64 (32 in flight) where a lane's four pairs make it.
  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    if (in.problem.transpose_a) return space;
    for (int lanes : lanes_covering_k_and_32(in.problem)) {
      space.push_back(pipelined_params(in, lanes, 32, 16));
      if (64 / lanes <= 4) space.push_back(pipelined_params(in, lanes, 64, 32));
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem& problem) const override {
    return {pipelined_spec(d.params, problem.dtype)};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    Decision& d = p.decision;
    const ops::LoadedKernel loaded = load(p.rt, d, pipelined_spec(d.params, p.problem.dtype));
    const int threads = d.params.at("block_threads").template get<int>();
    const int rows_per_block = threads / d.params.at("lanes_per_row").template get<int>();
    Launch launch{loaded.kernel, {ops::blocks_for(p.a.rows(), rows_per_block), k_slices(p.problem.k, pipelined_slice(d.params)), 1},
                  {unsigned(threads), 1, 1}, 0};
    return std::make_unique<CsrKernelExecution<T>>(std::move(launch), false);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, csr_pipelined, sparsejit::variants::spmm::CsrPipelined)
