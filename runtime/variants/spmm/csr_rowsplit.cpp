// csr_rowsplit: every row split between `parts` lane groups of a block, each a contiguous
// share of it, partial sums added in shared memory, plain stores (A·B only): few long rows
// (pruned layers). A block holds one row (the planner's choice), or a tile of several rows
// whose shared B rows L1 may serve twice (the tuner's search space has one such tile).
#include <algorithm>

#include "ops/call_common.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

const int kParts[] = {2, 4, 8, 16};

// The row tile of the tuner's search space: 16 rows of 4 groups of 16 lanes over a 64-column
// slice (256 bytes of each gathered B row), 8 B rows in flight a group; the 16 rows walk their
// sorted columns side by side, so a B row two of them share is often still in L1 when the
// second reads it (cuSPARSE's CSR_ALG3 tiles 16 rows x 64 columns alike). On the H200 at
// K = 512 on 39 DLMC layers of the SpMM set it ran at 0.49-1.28x the speed of a row a block
// (geomean 0.87; faster on 256 x 2304 layers, up to 2x slower on 2048 x 512 ones:
// bench/results/2026-11-28-h200-spmm-slices-shared), so no planner rule takes it: the tuner's
// timings decide where it does.
const nlohmann::json kRowTile = {{"vec_width", 4}, {"lanes", 16}, {"cf", 1}, {"parts", 4}, {"unroll", 8}, {"rows", 16}};
// A kernel's static shared memory.
constexpr int64_t kStaticSharedBytes = 48 * 1024;

// The csr_rowsplit parameters with `parts` groups per row.
nlohmann::json rowsplit_params(const plan::SpmmProblem& p, int parts) {
  const int vec = vector_width(p);
  const int lanes = lanes_for(vector_units(p, vec));
  return {{"vec_width", vec}, {"lanes", lanes}, {"cf", cf_for(p, vec, lanes)}, {"unroll", kUnroll}, {"parts", parts}, {"rows", 1}};
}

// Rows a block; 1 where the parameters predate row tiles (a tuning record of an earlier build).
int tile_rows_of(const nlohmann::json& params) { return params.value("rows", 1); }

int rowsplit_slice(const nlohmann::json& params) {
  return params.at("lanes").get<int>() * params.at("vec_width").get<int>() * params.at("cf").get<int>();
}

jit::KernelSpec rowsplit_spec(const nlohmann::json& params, DType dtype) {
  nlohmann::json p = vector_types(params, dtype);
  for (const char* key : {"lanes", "cf", "unroll", "parts"}) p[key] = params.at(key).get<int>();
  p["rows"] = tile_rows_of(params);
  return {"spmm_csr_rowsplit.cu", "sj_spmm_csr_rowsplit", p, {}};
}

}  // namespace

class CsrRowsplit final : public SpmmVariantOf<CsrRowsplit> {
 public:
  CsrRowsplit() : SpmmVariantOf("csr_rowsplit", 30, "a block of lane groups per row, each a contiguous share of it (A·B only)") {}

  std::string rejected(const SpmmPlanInputs& in) const override {
    std::string reason = SpmmVariant::rejected(in);
    if (reason.empty() && in.problem.transpose_a) reason = "computes A·B only";
    return reason;
  }

  // A row a block, with the group count the cost formulas like best among kParts (at least cf:
  // the final sum takes a thread per vector).
  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>&) const override {
    std::vector<nlohmann::json> sets;
    for (int parts : kParts) {
      nlohmann::json params = rowsplit_params(in.problem, parts);
      if (parts >= params.at("cf").get<int>()) sets.push_back(params);
    }
    return cheapest_params(*this, in, sets);
  }

  void check(const plan::SpmmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    check_group_params(name, params);
    require_one_of(name, params, "parts", {2, 4, 8, 16});
    if (params.contains("rows")) require_one_of(name, params, "rows", {1, 2, 4, 8, 16});
    if (params.at("parts").get<int>() < params.at("cf").get<int>())  // the final sum takes a thread per vector
      throw InvalidInputError("csr_rowsplit: parts = " + params.at("parts").dump() + " must be >= cf = " + params.at("cf").dump());
    const int threads = params.at("lanes").get<int>() * params.at("parts").get<int>() * tile_rows_of(params);
    if (threads > 1024)
      throw InvalidInputError("csr_rowsplit: lanes x parts x rows = " + std::to_string(threads) + " threads a block, more than 1024");
    // The partial sums: a vector per lane, cf and group, in static shared memory.
    const int64_t sums = int64_t(threads) * params.at("cf").get<int>() * params.at("vec_width").get<int>() * value_bytes(problem);
    if (sums > kStaticSharedBytes)
      throw InvalidInputError("csr_rowsplit: lanes x parts x rows x cf vectors of partial sums take " + std::to_string(sums) +
                              " bytes of shared memory, more than " + std::to_string(kStaticSharedBytes));
    check_vector_width(name, params, problem);
  }

  // A block per tile of `rows` rows and K slice whose `parts` groups per row each walk 1/parts
  // of it (a share's chain of round trips, plus one for the shared-memory sum); the partial
  // sums go through shared memory. Blocks are small (lanes * parts * rows threads), so when
  // tiles are many the device holds only max_blocks_per_sm of them per SM at a time: the
  // blocks run in waves, each as long as its rows' chains; the slowest wave holds the longest
  // row and the others are priced at the mean row (the first H200 benchmark: trpcage_8K, 16863
  // rows of 7 nonzeros, 16-thread blocks in 4 waves, took 12.9 µs where one wave predicted
  // 7.9 µs). L1's service of the B rows a tile's rows share is not priced: a share that
  // assumed uniform columns made the model take the tile where it was 2x slower.
  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json& params) const override {
    const Features& f = in.features;
    const plan::SpmmProblem& p = in.problem;
    nlohmann::json t = base_terms(in);
    const double vb = value_bytes(p);
    const double rows = f.basic.rows;
    const int lanes = params.at("lanes").get<int>();
    const int parts = params.at("parts").get<int>();
    const int unroll = params.at("unroll").get<int>();
    const int tile_rows = tile_rows_of(params);
    const int slice = rowsplit_slice(params);
    const double k_slices = double(slices(p.k, slice));
    const auto chain = [&](double row) {
      const double share = ceil_div(row, parts);
      return ceil_div(share, lanes) + ceil_div(share, unroll) + 1.0;
    };
    const double resident =
        std::max(1, std::min(in.device.max_blocks_per_sm, in.device.max_threads_per_sm / (lanes * parts * tile_rows)));
    const double tiles = ceil_div(rows, tile_rows);
    const double waves = std::max(1.0, ceil_div(tiles * k_slices, resident * in.device.multiprocessors));
    t["sparse_bytes"] = double(f.basic.nnz) * (4.0 + vb) * k_slices + (rows + 1.0) * 4.0 * k_slices;
    t["critical_loads"] = chain(double(f.basic.row_max)) + (waves - 1.0) * chain(f.basic.row_mean);
    t["shared_bytes"] = rows * k_slices * parts * slice * vb;
    t["thread_slots"] = tiles * tile_rows * k_slices * lanes * parts;
    return t;
  }

  std::vector<nlohmann::json> neighbour_changes(const plan::SpmmProblem&, const nlohmann::json& params) const override {
    const auto get = [&](const char* key) { return params.at(key).get<int>(); };
    return {{{"parts", get("parts") / 2}},
            {{"parts", get("parts") * 2}},
            {{"lanes", get("lanes") / 2}},  // K in twice the slices: twice the blocks
            {{"unroll", get("unroll") * 2}}};
  }

  // The lanes covering K and 32 lanes, every group count of at least cf, a row a block; and
  // the row tile where the operands go in float4 vectors.
  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    if (in.problem.transpose_a) return space;
    const int vec = vector_width(in.problem);
    if (vec == 4) space.push_back(kRowTile);
    for (int lanes : lanes_covering_k_and_32(in.problem)) {
      for (int parts : kParts) {
        nlohmann::json params = rowsplit_params(in.problem, parts);
        params["lanes"] = lanes;
        params["cf"] = cf_for(in.problem, vec, lanes);
        if (parts >= params.at("cf").get<int>()) space.push_back(params);
      }
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem& problem) const override {
    return {rowsplit_spec(d.params, problem.dtype)};
  }

  // One block of `parts` groups of `lanes` lanes per row of a tile of `rows` rows and K slice.
  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    Decision& d = p.decision;
    const ops::LoadedKernel loaded = load(p.rt, d, rowsplit_spec(d.params, p.problem.dtype));
    const int tile_rows = tile_rows_of(d.params);
    const int threads = d.params.at("lanes").template get<int>() * d.params.at("parts").template get<int>() * tile_rows;
    Launch launch{loaded.kernel, {ops::blocks_for(p.a.rows(), tile_rows), k_slices(p.problem.k, rowsplit_slice(d.params)), 1},
                  {unsigned(threads), 1, 1}, 0};
    return std::make_unique<CsrKernelExecution<T>>(std::move(launch), false);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, csr_rowsplit, sparsejit::variants::spmm::CsrRowsplit)
