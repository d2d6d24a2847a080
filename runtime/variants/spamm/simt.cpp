// simt: SpAMM's kept tile products on the CUDA cores in the value type (templates/spamm_simt.cu):
// f32 or f64 FMA, the only path for f64 and, for f32, the one with exactly f32's rounding.
#include "sparsejit/error.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit::variants::spamm {

namespace {

constexpr int kThreads = 256;

int elem_bytes(const plan::SpammProblem& p) { return int(size_of(p.dtype)); }
// Padding that keeps the staged rows 16-byte aligned and the warp's reads on distinct banks.
int pad(const plan::SpammProblem& p) { return 16 / elem_bytes(p); }

jit::KernelSpec spec_of(const plan::SpammProblem& p, const nlohmann::json& params) {
  const std::string value_t = p.dtype == DType::F64 ? "double" : "float";
  const int slice = params.at("slice").get<int>(), stages = params.at("stages").get<int>(), vec = params.at("vec").get<int>();
  const std::string name = "sj_spamm_simt_" + value_t + "_t" + std::to_string(p.tile) + "_s" + std::to_string(slice) + "x" +
                           std::to_string(stages) + "_v" + std::to_string(vec);
  return {"spamm_simt.cu", name,
          {{"value_t", value_t}, {"tile", p.tile}, {"slice", slice}, {"stages", stages}, {"vec", vec}, {"pad_a", pad(p)},
           {"pad_b", pad(p)}, {"min_blocks", 1}, {"fp16", false}, {"bf16", false}},
          {}};
}

}  // namespace

class Simt final : public SpammVariantOf<Simt> {
 public:
  Simt() : SpammVariantOf("simt", 20, "kept tile products on CUDA cores in the value type (f32/f64 FMA), cp.async staged slices") {}

  std::string rejected(const SpammPlanInputs& in) const override {
    if (in.problem.precision != SpammPrecision::Full)
      return std::string("computes in the value type; precision ") + to_string(in.problem.precision) + " runs on tensor cores or cuBLAS";
    return "";
  }

  // slice: 32 f32 / 16 f64 elements of K per stage (a 64-tile stage is 18 KB either way);
  // three stages.
  nlohmann::json defaults(const SpammPlanInputs& in) const override {
    const plan::SpammProblem& p = in.problem;
    return {{"slice", p.dtype == DType::F64 ? 16 : 32}, {"stages", 3}, {"vec", default_vec(p, elem_bytes(p))}};
  }

  void check(const plan::SpammProblem& p, const plan::DeviceTarget& device, const nlohmann::json& params) const override {
    const int slice = params.at("slice").get<int>();
    check_tile_loop(name, p, device, params, elem_bytes(p), 1, stage_bytes(p.tile, slice, pad(p), pad(p), elem_bytes(p)));
  }

  // tile_loop_terms, and the kept products' flops at the value type's SIMT rate.
  nlohmann::json cost_terms(const SpammPlanInputs& in, const nlohmann::json&) const override {
    const bool f64 = in.problem.dtype == DType::F64;
    const double flops = kept_flops(in);
    nlohmann::json terms = tile_loop_terms(in);
    terms["simt_f32_flops"] = f64 ? 0.0 : flops;
    terms["simt_f64_flops"] = f64 ? flops : 0.0;
    return terms;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpammProblem& p) const override { return {spec_of(p, d.params)}; }

  template <class T>
  std::unique_ptr<SpammExecution<T>> make(const SpammPreparation<T>& p) const {
    const nlohmann::json& params = p.decision.params;
    TileLoopLaunch launch;
    launch.block_threads = kThreads;
    launch.stage_bytes = params.at("stages").template get<int>() *
                         stage_bytes(p.problem.tile, params.at("slice").template get<int>(), pad(p.problem), pad(p.problem), int(sizeof(T)));
    return prepare_tile_loop(p, spec_of(p.problem, params), launch);
  }
};

}  // namespace sparsejit::variants::spamm

SPARSEJIT_REGISTER_VARIANT(spamm, simt, sparsejit::variants::spamm::Simt)
