// wgmma: SpAMM's kept tile products for fp16 and bf16 on Hopper's warpgroup instructions
// (templates/spamm_wgmma.cu, sm_90a: runs on sm_90 only), f32 accumulation, tile 64 in 2 x 2
// groups. The mma.sync kernel (mma) issued fragment loads and mma instructions from half its
// slots at 25% occupancy (ncu, N = 8192, 5% kept, H100); here one operand comes straight from
// shared memory and each warpgroup instruction does a 64 x 64 x 16 product.
#include <algorithm>

#include "sparsejit/error.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit::variants::spamm {

namespace {

constexpr int32_t kTile = 64;
constexpr int kThreads = 256;
// A stage: 128 swizzled A rows of 128 bytes and 64 B rows of 136 elements (spamm_wgmma.cu).
constexpr int64_t kStageBytes = 128 * 128 + 64 * (128 + 8) * 2;
constexpr int64_t kAlignmentSlack = 1024;  // the stages start on a 1024-byte swizzle atom

std::string rejection(const plan::SpammProblem& p, int sm) {
  if (p.dtype != DType::F32 || !half_operands(p.precision))
    return std::string("warpgroup products are for the fp16 and bf16 precisions, not ") + to_string(p.precision);
  if (p.tile != kTile) return "tile " + std::to_string(p.tile) + ": the kernel is written for tile 64";
  if (sm != 90) return "needs wgmma (sm_90a binaries run on sm_90 only); the device is sm_" + std::to_string(sm);
  return "";
}

jit::KernelSpec spec_of(const plan::SpammProblem& p, const nlohmann::json& params) {
  const bool fp16 = p.precision == SpammPrecision::FP16;
  const int stages = params.at("stages").get<int>();
  jit::KernelSpec spec{"spamm_wgmma.cu",
                       "sj_spamm_wgmma_" + std::string(to_string(p.precision)) + "_s" + std::to_string(stages),
                       {{"elem_t", fp16 ? "__half" : "__nv_bfloat16"},
                        {"ab_type", fp16 ? "f16" : "bf16"},
                        {"stages", stages},
                        {"fp16", fp16},
                        {"bf16", !fp16}},
                       {}};
  spec.arch_specific = true;
  return spec;
}

}  // namespace

class Wgmma final : public SpammVariantOf<Wgmma> {
 public:
  Wgmma()
      : SpammVariantOf("wgmma", 5, "kept tile products for fp16/bf16 on sm_90's warpgroup instructions (wgmma, sm_90a only), tile 64",
                       Traits{}.for_one_arch()) {}

  std::string rejected(const SpammPlanInputs& in) const override { return rejection(in.problem, in.device.sm); }

  // Three stages of 33 KB: two blocks fit an SM (the launch bounds promise two).
  nlohmann::json defaults(const SpammPlanInputs&) const override { return {{"stages", 3}}; }

  void check(const plan::SpammProblem& p, const plan::DeviceTarget& device, const nlohmann::json& params) const override {
    const std::string why = rejection(p, device.sm);
    if (!why.empty()) throw UnsupportedError("wgmma: " + why);
    const int stages = params.at("stages").get<int>();
    if (stages < 2 || stages > 4) throw InvalidInputError("wgmma: stages = " + std::to_string(stages) + " must be in [2, 4]");
    const int64_t bytes = stages * kStageBytes + kAlignmentSlack + 4 * int64_t(std::max(p.tile_inner(), 1));
    if (bytes > device.shared_per_block_optin)
      throw InvalidInputError("wgmma: " + std::to_string(stages) + " stages need " + std::to_string(bytes) +
                              " bytes of shared memory per block, more than the " + std::to_string(device.shared_per_block_optin) +
                              " of " + device.name);
  }

  nlohmann::json cost_terms(const SpammPlanInputs& in, const nlohmann::json&) const override {
    nlohmann::json terms = tile_loop_terms(in);
    terms["wgmma_f16_flops"] = kept_flops(in);
    return terms;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpammProblem& p) const override { return {spec_of(p, d.params)}; }

  template <class T>
  std::unique_ptr<SpammExecution<T>> make(const SpammPreparation<T>& p) const {
    if constexpr (!std::is_same_v<T, float>) {
      throw UnsupportedError("wgmma: f32 C only (fp16 and bf16 operands)");
    } else {
      TileLoopLaunch launch;
      launch.block_threads = kThreads;
      launch.group = 2;
      launch.stage_bytes = p.decision.params.at("stages").template get<int>() * kStageBytes + kAlignmentSlack;
      return prepare_tile_loop(p, spec_of(p.problem, p.decision.params), launch);
    }
  }
};

}  // namespace sparsejit::variants::spamm

SPARSEJIT_REGISTER_VARIANT(spamm, wgmma, sparsejit::variants::spamm::Wgmma)
