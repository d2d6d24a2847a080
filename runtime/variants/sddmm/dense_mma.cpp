// dense_mma: dense_tile's tiles on tensor cores, f32 by the 3xTF32 split (mma.sync, sm_80+): a
// warp per warp_rows x warp_cols part of the tile, each operand cut into a TF32 part and its
// remainder, three products.
#include <algorithm>
#include <array>

#include "sparsejit/error.hpp"
#include "variants/sddmm/dense_tiles.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

namespace {

using nlohmann::json;

// Its slice is whole mma steps.
constexpr int64_t kMmaStep = 8;

// Why it cannot run a problem of this type on sm, or "".
std::string dense_mma_rejection(const plan::SddmmProblem& p, int sm) {
  if (p.dtype != DType::F32)
    return std::string("value type ") + to_string(p.dtype) + ": the 3xTF32 split serves f32 only";
  if (sm < 80) return "needs TF32 tensor cores (mma.sync, sm_80 or later); the device is sm_" + std::to_string(sm);
  return "";
}

// The blocks per SM its launch bounds promise (registers for the part's accumulators and
// split fragments, about 80 at 32 x 32).
int64_t dense_mma_min_blocks(const json& params) {
  const int64_t steps_down = params.at("warp_rows").get<int64_t>() / 16, steps_across = params.at("warp_cols").get<int64_t>() / 8;
  // Accumulators, both halves of the A and B fragments, addresses: 80 at 32 x 32 (ptxas fits
  // that part in 80 without spilling; left to itself it takes 128 and 4 blocks per SM).
  const int64_t registers = 4 * steps_down * steps_across + 8 * steps_down + 4 * steps_across + 16;
  return std::max<int64_t>(1, 65536 / (dense_mma_threads(params) * round_up(registers, 8)));
}

jit::KernelSpec dense_mma_spec(const Decision& d) {
  const int tile_cols = d.params.at("tile_cols").get<int>();
  return {"sddmm_dense_mma.cu", "sj_sddmm_dense_mma",
          {{"vec_width", d.params.at("vector_width")}, {"tile_rows", d.params.at("tile_rows")}, {"tile_cols", tile_cols},
           {"words", (tile_cols + 63) / 64}, {"slice", d.params.at("slice")},
           {"stages", dense_tile_stages(d.params)}, {"warp_rows", d.params.at("warp_rows")},
           {"warp_cols", d.params.at("warp_cols")}, {"block_size", dense_mma_threads(d.params)},
           {"min_blocks", dense_mma_min_blocks(d.params)}, {"fp16", false}, {"bf16", false}},
          {}};
}

}  // namespace

int64_t dense_mma_threads(const json& params) {
  return 32 * (params.at("tile_rows").get<int64_t>() / params.at("warp_rows").get<int64_t>()) *
         (params.at("tile_cols").get<int64_t>() / params.at("warp_cols").get<int64_t>());
}

class DenseMma final : public SddmmVariantOf<DenseMma> {
 public:
  DenseMma()
      : SddmmVariantOf("dense_mma", 50, "dense_tile's tiles on tensor cores: f32 by the 3xTF32 split (mma.sync, sm_80+)") {}

  std::string rejected(const SddmmPlanInputs& in) const override {
    const std::string why = dense_mma_rejection(in.problem, in.device.sm);
    return why.empty() ? dense_format_rejection(in, name) : why;
  }

  json defaults(const SddmmPlanInputs& in) const override {
    return dense_defaults(in.problem, in.model, name, kMmaStep, {"warp_rows", "warp_cols"});
  }

  void check(const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const json& params) const override {
    check_vector_width(params, problem, name);
    const std::string rejection = dense_mma_rejection(problem, device.sm);
    if (!rejection.empty()) throw UnsupportedError("sddmm dense_mma: " + rejection);
    const int64_t warp_rows = int_param(params, name, "warp_rows"), warp_cols = int_param(params, name, "warp_cols");
    require(warp_rows >= 16 && warp_rows <= 64 && warp_rows % 16 == 0, name,
            "warp_rows = " + std::to_string(warp_rows) + " is not 16, 32, 48 or 64");
    require(warp_cols >= 8 && warp_cols <= 64 && warp_cols % 8 == 0, name,
            "warp_cols = " + std::to_string(warp_cols) + " is not a multiple of 8 in [8, 64]");
    check_tile_edge(params, name, "tile_rows", "warp_rows");
    check_tile_edge(params, name, "tile_cols", "warp_cols");
    const int64_t threads = dense_mma_threads(params);
    require(threads <= 1024, name,
            "32 * (tile_rows / warp_rows) * (tile_cols / warp_cols) = " + std::to_string(threads) + " threads is past 1024");
    check_dense_staging(params, device, name, kMmaStep, "one mma step", dense_tile_shared_bytes(params, problem.dtype));
  }

  json cost_terms(const SddmmPlanInputs& in, const json& params) const override { return dense_terms(in, params); }

  // dense_tile's, and half or twice the tile with as many warps (on a few tiles, more blocks
  // fill the SMs).
  std::vector<json> neighbour_changes(const plan::SddmmProblem& problem, const plan::DeviceTarget&,
                                      const json& params) const override {
    std::vector<json> changes = dense_staging_changes(problem, params);
    const auto get = [&](const char* key) { return params.at(key).get<int64_t>(); };
    changes.push_back({{"tile_rows", get("tile_rows") / 2}, {"warp_rows", get("warp_rows") / 2}});
    changes.push_back({{"tile_rows", get("tile_rows") * 2}, {"warp_rows", get("warp_rows") * 2}});
    return changes;
  }

  // Like dense_tile's, with one slice of 32 (or all of a shorter K).
  std::vector<json> search_space(const SddmmPlanInputs& in) const override {
    std::vector<json> space;
    const plan::SddmmProblem& problem = in.problem;
    if (!dense_tiles_worth_it(in) || !dense_mma_rejection(problem, in.device.sm).empty()) return space;
    const int width = vector_width(problem);
    const int64_t slice = round_up(std::min<int64_t>(32, problem.k), kMmaStep);
    for (const auto& [ti, tj, wr, wc] : std::vector<std::array<int64_t, 4>>{
             {64, 64, 32, 32}, {128, 64, 64, 32}, {64, 128, 32, 64}, {128, 128, 64, 64}, {32, 64, 32, 32}, {32, 64, 16, 32}})
      for (int64_t stages : searched_stages(problem.k, slice))
        space.push_back({{"vector_width", width}, {"tile_rows", ti}, {"tile_cols", tj}, {"warp_rows", wr},
                         {"warp_cols", wc}, {"slice", slice}, {"stages", stages}});
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem&,
                                            const plan::DeviceTarget&) const override {
    return {dense_mma_spec(d)};
  }

  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const {
    const json& params = p.decision.params;
    return dense_execution(p, dense_mma_spec(p.decision), dense_mma_threads(params),
                           dense_tile_shared_bytes(params, p.problem.dtype));
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, dense_mma, sparsejit::variants::sddmm::DenseMma)
