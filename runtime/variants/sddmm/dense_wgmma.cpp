// dense_wgmma: dense_tile's tiles on sm_90's warpgroup instructions (wgmma, 3xTF32 as
// dense_mma: A split in registers, B from a 128-byte-swizzled cp.async ring, small_b in a
// second ring), compiled for sm_90a (KernelSpec::arch_specific): runs on sm_90 only.
#include <algorithm>
#include <array>
#include <cmath>

#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/sddmm/dense_tiles.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

namespace {

using nlohmann::json;

// Its tile widths: the wgmma N of templates/wgmma_tf32.cuh.
constexpr std::array<int64_t, 6> kWgmmaTileCols = {64, 96, 128, 144, 192, 256};
// Its K slice: one 128-byte swizzled row of f32.
constexpr int64_t kWgmmaSlice = 32;
// Per-tile work that does not grow with tile_cols (loading A, the epilogue), in columns.
constexpr double kWgmmaTileOverheadCols = 48;

// Why it cannot run a problem of this type on sm, or "".
std::string dense_wgmma_rejection(const plan::SddmmProblem& p, int sm) {
  if (p.dtype != DType::F32)
    return std::string("value type ") + to_string(p.dtype) + ": the 3xTF32 split serves f32 only";
  if (sm != 90) return "needs wgmma (sm_90a binaries run on sm_90 only); the device is sm_" + std::to_string(sm);
  return "";
}

// The blocks per SM its launch bounds promise (registers for the tile_cols / 2 accumulators
// and the split A fragments; shared memory permitting).
int64_t dense_wgmma_min_blocks(const json& params, const plan::DeviceTarget& device) {
  const int64_t registers = round_up(params.at("tile_cols").get<int64_t>() / 2 + 72, 8);
  const int64_t by_registers = 65536 / (dense_wgmma_threads(params) * registers);
  const int64_t by_shared = device.shared_per_sm / (dense_wgmma_shared_bytes(params) + 1024);
  return std::clamp<int64_t>(std::min(by_registers, by_shared), 1, 4);
}

// Its stages: at least two slices in flight, at most the model's.
int64_t dense_wgmma_stages(const plan::SddmmProblem& p, const json& model) {
  const int64_t slices = (p.k + kWgmmaSlice - 1) / kWgmmaSlice;
  return std::clamp<int64_t>(slices, 2, launch_value(model, "dense_wgmma", "stages").get<int64_t>());
}

// The busiest block slot's work: ceil(tiles / (SMs x blocks per SM)) tiles of (tile_cols +
// overhead) columns each. A block is one warpgroup (or two) that waits on its loads, its wgmma
// and its stores in turn, so blocks resident together hide each other's waits: on the H100 at
// K = 32 and 128, 64 columns (four blocks per SM) ran 1.9-2.8x faster than 256 (one block per
// SM) on 4096 x 4096 at 50% and 10% and on 50%-dense 2048 x 512 pruned layers, and on 512 x
// 4608 layers at 10-20% 96 columns (384 tiles, three blocks per SM: one round) ran 1.13-1.23x
// faster than 144 (two rounds of 2) and 1.16-1.28x faster than 64 (two rounds of 4).
double slot_work(const SddmmPlanInputs& in, int64_t tile_rows, int64_t tile_cols, int64_t stages) {
  const json params = {{"tile_rows", tile_rows}, {"tile_cols", tile_cols}, {"stages", stages}};
  const double slots = double(std::max(in.device.multiprocessors, 1) * dense_wgmma_min_blocks(params, in.device));
  const double tiles = dense_tiles_estimate(in.features, in.problem, double(tile_rows), double(tile_cols));
  return std::ceil(tiles / slots) * (double(tile_cols) + kWgmmaTileOverheadCols);
}

// The tile width: the one whose busiest block slot has the least work.
int64_t wgmma_tile_cols(const SddmmPlanInputs& in, int64_t tile_rows) {
  const int64_t stages = dense_wgmma_stages(in.problem, in.model);
  int64_t best = kWgmmaTileCols[2];
  double best_work = INFINITY;
  for (int64_t cols : kWgmmaTileCols) {
    const double work = slot_work(in, tile_rows, cols, stages);
    if (work < best_work) {
      best_work = work;
      best = cols;
    }
  }
  return best;
}

jit::KernelSpec dense_wgmma_spec(const Decision& d, const plan::DeviceTarget& target) {
  const int tile_cols = d.params.at("tile_cols").get<int>();
  jit::KernelSpec spec{"sddmm_dense_wgmma.cu", "sj_sddmm_dense_wgmma",
                       {{"vec_width", d.params.at("vector_width")}, {"tile_rows", d.params.at("tile_rows")},
                        {"tile_cols", tile_cols}, {"words", (tile_cols + 63) / 64}, {"stages", d.params.at("stages")},
                        {"block_size", dense_wgmma_threads(d.params)},
                        {"min_blocks", dense_wgmma_min_blocks(d.params, target)}, {"fp16", false}, {"bf16", false}},
                       {}};
  spec.arch_specific = true;  // wgmma: sm_90a
  return spec;
}

}  // namespace

int64_t dense_wgmma_threads(const json& params) { return 2 * params.at("tile_rows").get<int64_t>(); }

int64_t dense_wgmma_shared_bytes(const json& params) {
  const int64_t rows = params.at("tile_rows").get<int64_t>(), cols = params.at("tile_cols").get<int64_t>();
  const int64_t row_bytes = kWgmmaSlice * 4;
  const int64_t rings = params.at("stages").get<int64_t>() * (rows + cols) * row_bytes + 2 * cols * row_bytes;
  return std::max(rings, rows * (cols + 8) * 4) + 1024;
}

class DenseWgmma final : public SddmmVariantOf<DenseWgmma> {
 public:
  DenseWgmma()
      : SddmmVariantOf("dense_wgmma", 60, "dense_mma on sm_90's warpgroup instructions (wgmma, sm_90a only)",
                       Traits{}.for_one_arch()) {}

  std::string rejected(const SddmmPlanInputs& in) const override {
    const std::string why = dense_wgmma_rejection(in.problem, in.device.sm);
    return why.empty() ? dense_format_rejection(in, name) : why;
  }

  // The model's tile rows and stages (at least two slices in flight); the tile width by the
  // busiest block slot's work, priced only where dense tiles are worth counting.
  json defaults(const SddmmPlanInputs& in) const override {
    const bool choose_width = rejected(in).empty() && dense_tiles_worth_it(in);
    const int64_t tile_rows = launch_value(in.model, name, "tile_rows").get<int64_t>();
    return {{"vector_width", vector_width(in.problem) == 4 ? 4 : 1},
            {"tile_rows", tile_rows},
            {"tile_cols", choose_width ? wgmma_tile_cols(in, tile_rows) : kWgmmaTileCols[2]},
            {"stages", dense_wgmma_stages(in.problem, in.model)}};
  }

  void check(const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const json& params) const override {
    check_vector_width(params, problem, name);
    const std::string rejection = dense_wgmma_rejection(problem, device.sm);
    if (!rejection.empty()) throw UnsupportedError("sddmm dense_wgmma: " + rejection);
    const int64_t width = int_param(params, name, "vector_width");
    require(width == 1 || width == 4, name, "vector_width = " + std::to_string(width) + " is neither 1 nor 4");
    const int64_t rows = int_param(params, name, "tile_rows"), cols = int_param(params, name, "tile_cols");
    require(rows == 64 || rows == 128, name, "tile_rows = " + std::to_string(rows) + " is neither 64 nor 128 (a warpgroup per 64)");
    require(std::find(kWgmmaTileCols.begin(), kWgmmaTileCols.end(), cols) != kWgmmaTileCols.end(), name,
            "tile_cols = " + std::to_string(cols) + " is not one of 64, 96, 128, 144, 192, 256");
    const int64_t stages = int_param(params, name, "stages");
    require(stages >= 2 && stages <= 4, name, "stages = " + std::to_string(stages) + " outside [2, 4]");
    const int64_t bytes = dense_wgmma_shared_bytes(params);
    if (bytes > device.shared_per_block_optin)
      throw UnsupportedError("sddmm dense_wgmma: stages x (tile_rows + tile_cols) x 128 bytes and the small ring need " +
                             std::to_string(bytes) + " bytes of shared memory, the device allows " +
                             std::to_string(device.shared_per_block_optin));
  }

  // dense_tile's terms and the busiest block slot's: its rounds of blocks times their columns
  // (slot_work), and that again per K slice (slot_slice_work), as wgmma_tile_cols counts them.
  json cost_terms(const SddmmPlanInputs& in, const json& params) const override {
    json terms = dense_terms(in, params);
    const double work = slot_work(in, params.at("tile_rows").get<int64_t>(), params.at("tile_cols").get<int64_t>(),
                                  params.at("stages").get<int64_t>());
    terms["slot_work"] = work;
    terms["slot_slice_work"] = work * std::ceil(double(in.problem.k) / kWgmmaSlice);
    return terms;
  }

  // The next tile_cols of its set either way, the other tile_rows and a stage less or more.
  std::vector<json> neighbour_changes(const plan::SddmmProblem& problem, const plan::DeviceTarget&,
                                      const json& params) const override {
    const auto get = [&](const char* key) { return params.at(key).get<int64_t>(); };
    std::vector<json> changes;
    const auto at = std::find(kWgmmaTileCols.begin(), kWgmmaTileCols.end(), get("tile_cols"));
    if (at != kWgmmaTileCols.begin() && at != kWgmmaTileCols.end()) changes.push_back({{"tile_cols", *(at - 1)}});
    if (at != kWgmmaTileCols.end() && at + 1 != kWgmmaTileCols.end()) changes.push_back({{"tile_cols", *(at + 1)}});
    changes.push_back({{"tile_rows", get("tile_rows") == 64 ? 128 : 64}});
    changes.push_back({{"stages", get("stages") - 1}});
    if (get("stages") * kWgmmaSlice < problem.k) changes.push_back({{"stages", get("stages") + 1}});
    return changes;
  }

  // Its tile widths, one or two warpgroups, two and three slices in flight.
  std::vector<json> search_space(const SddmmPlanInputs& in) const override {
    std::vector<json> space;
    if (!dense_tiles_worth_it(in) || !dense_wgmma_rejection(in.problem, in.device.sm).empty()) return space;
    for (int64_t rows : {64, 128})
      for (int64_t cols : kWgmmaTileCols)
        for (int64_t stages : {2, 3})
          space.push_back({{"vector_width", vector_width(in.problem) == 4 ? 4 : 1}, {"tile_rows", rows},
                           {"tile_cols", cols}, {"stages", stages}});
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem&,
                                            const plan::DeviceTarget& device) const override {
    return {dense_wgmma_spec(d, device)};
  }

  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const {
    const json& params = p.decision.params;
    return dense_execution(p, dense_wgmma_spec(p.decision, p.rt.target), dense_wgmma_threads(params),
                           dense_wgmma_shared_bytes(params));
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, dense_wgmma, sparsejit::variants::sddmm::DenseWgmma)
