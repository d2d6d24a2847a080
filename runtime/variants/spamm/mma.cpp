// mma: SpAMM's kept tile products on tensor cores (templates/spamm_mma.cu), mma.sync with f32
// accumulation in the precision the caller asked for: full f32 as the 3xTF32 split (m16n8k8),
// tf32 (one m16n8k8 product of operands rounded to TF32), fp16 or bf16 (m16n8k16 on the
// caller's 16-bit operands or the executor's converted copies). f32 C only.
#include <algorithm>

#include "sparsejit/error.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit::variants::spamm {

namespace {

bool half_operands(const plan::SpammProblem& p) { return variants::half_operands(p.precision); }
int elem_bytes(const plan::SpammProblem& p) { return half_operands(p) ? 2 : 4; }
int mma_k(const plan::SpammProblem& p) { return half_operands(p) ? 16 : 8; }
// A rows 4 words past a multiple of 32 banks, B rows 8 (spamm_mma.cu's conflict-free reads).
int pad_a(const plan::SpammProblem& p) { return half_operands(p) ? 8 : 4; }
int pad_b(const plan::SpammProblem&) { return 8; }

// A warp's part of the block's C region (group x group tiles): 4 warps up to a 64 region, 8
// for 128 (a tile 128, or a group of 2 x 2 tiles of 64: each warp's 64 x 32 part inside one).
struct WarpShape {
  int rows, cols;
};
WarpShape warp_shape(int32_t region) {
  return region <= 32 ? WarpShape{16, 16} : region == 64 ? WarpShape{32, 32} : WarpShape{64, 32};
}
int block_threads(int32_t region) {
  const WarpShape w = warp_shape(region);
  return 32 * (region / w.rows) * (region / w.cols);
}
int32_t region_of(const plan::SpammProblem& p, const nlohmann::json& params) { return p.tile * params.at("group").get<int>(); }

const char* precision_flag(const plan::SpammProblem& p) {
  switch (p.precision) {
    case SpammPrecision::Full: return "split3";
    case SpammPrecision::TF32: return "tf32";
    default: return "half";
  }
}

// Blocks per SM the launch bounds promise. tf32 and 16-bit parts of 64 x 32 hold 64
// accumulators and 24 fragment registers: within 128 registers, so two 256-thread blocks fit
// an SM (the first H100 profile: 137 registers, one block, 2 warps per scheduler, 83% of
// cycles with none eligible). The 3xTF32 split holds both halves of every fragment: one block.
int min_blocks(const plan::SpammProblem& p) { return p.precision == SpammPrecision::Full ? 1 : 2; }

jit::KernelSpec spec_of(const plan::SpammProblem& p, const nlohmann::json& params) {
  const int slice = params.at("slice").get<int>(), stages = params.at("stages").get<int>(), vec = params.at("vec").get<int>();
  const bool fp16 = p.precision == SpammPrecision::FP16, bf16 = p.precision == SpammPrecision::BF16;
  const std::string elem_t = fp16 ? "__half" : bf16 ? "__nv_bfloat16" : "float";
  const std::string mma_op = fp16   ? "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"
                             : bf16 ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
                                    : "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
  const int group = params.at("group").get<int>();
  const int32_t region = region_of(p, params);
  const WarpShape w = warp_shape(region);
  const std::string flag = precision_flag(p);
  const std::string name = "sj_spamm_mma_" + std::string(to_string(p.precision)) + "_t" + std::to_string(p.tile) + "_g" +
                           std::to_string(group) + "_s" + std::to_string(slice) + "x" + std::to_string(stages) + "_v" + std::to_string(vec);
  return {"spamm_mma.cu", name,
          {{"elem_t", elem_t}, {"mma_op", mma_op}, {"mma_k", mma_k(p)}, {"tile", p.tile}, {"group", group}, {"slice", slice}, {"stages", stages},
           {"vec", vec}, {"pad_a", pad_a(p)}, {"pad_b", pad_b(p)}, {"min_blocks", min_blocks(p)}, {"warp_rows", w.rows},
           {"warp_cols", w.cols}, {"block_size", block_threads(region)}, {"split3", flag == "split3"}, {"tf32", flag == "tf32"},
           {"half", flag == "half"}, {"fp16", fp16}, {"bf16", bf16}},
          {}};
}

}  // namespace

class Mma final : public SpammVariantOf<Mma> {
 public:
  Mma()
      : SpammVariantOf("mma", 10,
                       "kept tile products on tensor cores (mma.sync, f32 accumulation): 3xTF32 for full f32, tf32, fp16, bf16; "
                       "cp.async staged slices") {}

  std::string rejected(const SpammPlanInputs& in) const override {
    if (in.problem.dtype != DType::F32) return std::string("tensor-core products are for f32 operands, not ") + to_string(in.problem.dtype);
    return "";
  }

  // Three stages; a slice of 32 for f32 operands (four tf32 mma steps), 64 for 16-bit ones
  // (four fp16 steps: half the barriers and waits per flop). group 2 at tile 64: a block
  // stages a 128-row A slice and a 128-column B slice for 2 x 2 C tiles, so each staged byte
  // feeds twice the flops (32 -> 64 flop per byte of fp16 from L2, 16 -> 32 f32): at N = 8192
  // and 5% kept, 1.7 GB of fp16 staging (about 0.35 ms at the ~5 TB/s L2 rate the first run
  // reached: the limit) becomes 0.9 GB plus the products a group lists for one tile and not
  // another (decay matrices: neighbouring tiles keep nearly the same k). A stage is then 36 KB
  // for either (two blocks of three fit an SM's 228 KB). On an H100 at N = 8192 (fp16 and
  // bf16, 1-10% kept) slice 64 took 0-15% less time than 32; a 64-wide f32 stage would leave
  // one block per SM.
  nlohmann::json defaults(const SpammPlanInputs& in) const override {
    const int slice = half_operands(in.problem) ? std::min(64, int(in.problem.tile)) : 32;
    return {{"slice", slice}, {"stages", 3}, {"vec", default_vec(in.problem, elem_bytes(in.problem))}, {"group", in.problem.tile == 64 ? 2 : 1}};
  }

  void check(const plan::SpammProblem& p, const plan::DeviceTarget& device, const nlohmann::json& params) const override {
    if (device.sm < 80) throw UnsupportedError("mma: needs sm_80 or later (cp.async, TF32 and bf16 mma.sync); " + device.name + " is sm_" + std::to_string(device.sm));
    const int group = params.at("group").get<int>();
    if (group != 1 && !(group == 2 && p.tile == 64))
      throw InvalidInputError("mma: group = " + std::to_string(group) + " must be 1, or 2 with tile 64 (the tile is " + std::to_string(p.tile) + ")");
    const int slice = params.at("slice").get<int>();
    check_tile_loop(name, p, device, params, elem_bytes(p), mma_k(p),
                    stage_bytes(region_of(p, params), slice, pad_a(p), pad_b(p), elem_bytes(p)));
  }

  nlohmann::json cost_terms(const SpammPlanInputs& in, const nlohmann::json&) const override {
    const std::string rate = rate_class(in.problem, true);
    const double flops = kept_flops(in);
    nlohmann::json terms = tile_loop_terms(in);
    for (const char* r : {"3xtf32", "tf32", "f16"}) terms[std::string("mma_") + r + "_flops"] = rate == r ? flops : 0.0;
    return terms;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpammProblem& p) const override { return {spec_of(p, d.params)}; }

  template <class T>
  std::unique_ptr<SpammExecution<T>> make(const SpammPreparation<T>& p) const {
    if constexpr (!std::is_same_v<T, float>) {
      throw UnsupportedError("mma: f32 operands only");
    } else {
      const nlohmann::json& params = p.decision.params;
      const plan::SpammProblem& problem = p.problem;
      TileLoopLaunch launch;
      const int32_t region = region_of(problem, params);
      launch.block_threads = block_threads(region);
      launch.group = params.at("group").template get<int>();
      launch.stage_bytes = params.at("stages").template get<int>() *
                           stage_bytes(region, params.at("slice").template get<int>(), pad_a(problem), pad_b(problem), elem_bytes(problem));
      return prepare_tile_loop(p, spec_of(problem, params), launch);
    }
  }
};

}  // namespace sparsejit::variants::spamm

SPARSEJIT_REGISTER_VARIANT(spamm, mma, sparsejit::variants::spamm::Mma)
