#include "variants/spamm/spamm_variant.hpp"

#include <algorithm>

#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::variants {

void SpammVariant::check(const plan::SpammProblem&, const plan::DeviceTarget&, const nlohmann::json&) const {}

std::vector<jit::KernelSpec> SpammVariant::kernel_specs(const Decision&, const plan::SpammProblem&) const { return {}; }

double kept_flops(const SpammPlanInputs& in) {
  const double t = in.problem.tile;
  return 2.0 * t * t * t * double(in.features.selection.valid);
}

// A τ search's steps are not known before it runs: on decay matrices 8-10 for shares of 5-50%
// and 31-38 for 1% (H100 runs). They are priced at the long end, so that an asked share goes
// to cuBLAS wherever a long search would not pay for itself.
constexpr double kPricedSearchSteps = 35;

nlohmann::json front_terms(const plan::SpammProblem& p, double evaluations) {
  const double operand_bytes = double(size_of(p.operands)) * (double(p.m) * p.k + double(p.k) * p.n);
  const double tile_products = double(p.tile_rows()) * p.tile_inner() * p.tile_cols();
  return {{"norm_bytes", operand_bytes}, {"search_steps", evaluations}, {"search_tile_products", evaluations * tile_products}};
}

nlohmann::json tile_loop_terms(const SpammPlanInputs& in) {
  const plan::SpammProblem& p = in.problem;
  nlohmann::json terms = front_terms(p, kPricedSearchSteps);
  if (!in.features.tau_to_search)
    for (auto& [_, amount] : terms.items()) amount = 0.0;
  terms["launch"] = 1.0;
  terms["c_tiles"] = double(p.tile_rows()) * p.tile_cols();
  return terms;
}

double dense_flops(const plan::SpammProblem& p) { return 2.0 * double(p.m) * double(p.k) * double(p.n); }

std::string rate_class(const plan::SpammProblem& p, bool tensor_cores) {
  if (p.dtype == DType::F64) return "f64";
  switch (p.precision) {
    case SpammPrecision::Full: return tensor_cores ? "3xtf32" : "f32";
    case SpammPrecision::TF32: return "tf32";
    case SpammPrecision::FP16:
    case SpammPrecision::BF16: return "f16";
  }
  return "f32";
}

int64_t tile_loop_shared_bytes(const TileLoopLaunch& launch, int32_t tile_inner) {
  return launch.stage_bytes + 4 * int64_t(std::max(tile_inner, 1));
}

template <class T>
void launch_tile_loop(const cuda::Kernel& kernel, const TileLoopLaunch& launch, const plan::SpammProblem& p, int multiprocessors,
                      const SpammOperands<T>& o) {
  // C's rows are this call's (a block of a spread call), whatever the prepared problem's m.
  int tile_rows = int((int64_t(o.c.rows()) + p.tile - 1) / p.tile), tile_inner = p.tile_inner(), tile_cols = p.tile_cols();
  const int64_t groups = ((int64_t(tile_rows) + launch.group - 1) / launch.group) * ((int64_t(tile_cols) + launch.group - 1) / launch.group);
  if (groups == 0) return;
  const int64_t resident = int64_t(std::max(launch.blocks_per_sm, 1)) * multiprocessors;
  const unsigned blocks = unsigned(std::min<int64_t>(groups, resident));
  CUdeviceptr a = o.a.data, b = o.b.data, c = o.c.buffer().ptr(), a_norms = o.a_norms, b_norms = o.b_norms;
  long long lda = o.a.ld, ldb = o.b.ld, ldc = o.c.ld();
  int a_rows = o.a.rows, a_cols = o.a.cols, b_cols = o.b.cols, c_rows = o.c.rows(), c_cols = o.c.cols();
  double tau = o.tau;
  void* args[] = {&a,     &lda,     &a_rows,  &a_cols,    &b,          &ldb,       &b_cols,    &c,  &ldc,
                  &c_rows, &c_cols, &a_norms, &b_norms, &tile_rows, &tile_inner, &tile_cols, &tau};
  kernel.launch({blocks, 1, 1}, {unsigned(launch.block_threads), 1, 1}, unsigned(tile_loop_shared_bytes(launch, tile_inner)),
                o.stream, args, o.early);
}

void note_kernel(Decision& d, const ops::LoadedKernel& loaded) {
  if (int(loaded.origin) > int(d.kernel_origin)) d.kernel_origin = loaded.origin;  // the slowest way any kernel came
  d.compile_ms += loaded.compile_ms;
  d.load_ms += loaded.load_ms;
}

bool half_operands(SpammPrecision precision) {
  return precision == SpammPrecision::FP16 || precision == SpammPrecision::BF16;
}

int default_vec(const plan::SpammProblem& p, int elem_bytes) {
  const int vec = 16 / elem_bytes;
  if (half_operands(p.precision)) return vec;
  for (int64_t size : {int64_t(p.k), int64_t(p.n), p.lda, p.ldb})
    if (size % vec != 0) return 1;
  return vec;
}

jit::KernelSpec norms_spec(DType stored, SpammPrecision precision, int32_t tile, bool copies, int vec) {
  const bool fp16 = precision == SpammPrecision::FP16, bf16 = precision == SpammPrecision::BF16;
  const std::string value_t = cuda_type_name(stored);
  const std::string copy_t = copies ? (fp16 ? "__half" : "__nv_bfloat16") : value_t;
  const std::string to_float = stored == DType::F16 ? "__half2float" : stored == DType::BF16 ? "__bfloat162float" : "";
  const bool converts = copies && copy_t != value_t;
  const std::string convert = !converts ? "" : fp16 ? "__float2half_rn" : "__float2bfloat16_rn";
  const std::string name = std::string("sj_spamm_norms_") + to_string(stored) + "_t" + std::to_string(tile) + "_v" + std::to_string(vec) +
                           (copies ? std::string("_copy_") + to_string(precision) : "");
  return {"spamm_norms.cu", name,
          {{"value_t", value_t}, {"to_float", to_float}, {"copy_t", copy_t}, {"convert", convert}, {"tile", tile}, {"vec", vec},
           {"write_copy", copies}, {"fp16", fp16 || stored == DType::F16}, {"bf16", bf16 || stored == DType::BF16}},
          {}};
}

jit::KernelSpec search_spec() { return {"spamm_search.cu", "sj_spamm_search", nlohmann::json::object(), {}}; }

jit::KernelSpec row_counts_spec() { return {"spamm_row_counts.cu", "sj_spamm_row_counts", nlohmann::json::object(), {}}; }

int64_t stage_bytes(int32_t region, int slice, int pad_a, int pad_b, int elem_bytes) {
  return (int64_t(region) * (slice + pad_a) + int64_t(slice) * (region + pad_b)) * elem_bytes;
}

void check_tile_loop(const std::string& variant, const plan::SpammProblem& p, const plan::DeviceTarget& device,
                     const nlohmann::json& params, int elem_bytes, int step, int64_t one_stage) {
  const int slice = params.at("slice").get<int>(), stages = params.at("stages").get<int>(), vec = params.at("vec").get<int>();
  if (slice < step || slice % step != 0 || p.tile % slice != 0)
    throw InvalidInputError(variant + ": slice = " + std::to_string(slice) + " must be a multiple of " + std::to_string(step) +
                            " that divides the tile " + std::to_string(p.tile));
  if (stages < 2 || stages > 4) throw InvalidInputError(variant + ": stages = " + std::to_string(stages) + " must be in [2, 4]");
  const int widest = default_vec(p, elem_bytes);
  if (vec != 1 && vec != 16 / elem_bytes)
    throw InvalidInputError(variant + ": vec = " + std::to_string(vec) + " must be 1 or " + std::to_string(16 / elem_bytes));
  if (vec > widest)
    throw InvalidInputError(variant + ": vec = " + std::to_string(vec) + " needs k, n and the leading dimensions of A and B to be multiples of it");
  if (half_operands(p.precision) && vec == 1)
    throw InvalidInputError(variant + ": vec = 1 would copy 2-byte elements, which cp.async cannot; the converted copies take vec = 8");
  const int64_t bytes = stages * one_stage + 4 * int64_t(std::max(p.tile_inner(), 1));
  if (bytes > device.shared_per_block_optin)
    throw InvalidInputError(variant + ": " + std::to_string(stages) + " stages of slice " + std::to_string(slice) + " need " +
                            std::to_string(bytes) + " bytes of shared memory per block, more than the " +
                            std::to_string(device.shared_per_block_optin) + " of " + device.name);
}

namespace {

template <class T>
class TileLoopExecution final : public SpammExecution<T> {
 public:
  TileLoopExecution(cuda::Kernel kernel, TileLoopLaunch launch, plan::SpammProblem problem, int multiprocessors)
      : kernel_(std::move(kernel)), launch_(launch), problem_(problem), multiprocessors_(multiprocessors) {}
  void run(detail::RuntimeState&, const SpammOperands<T>& o) const override {
    launch_tile_loop(kernel_, launch_, problem_, multiprocessors_, o);
  }

 private:
  cuda::Kernel kernel_;
  TileLoopLaunch launch_;
  plan::SpammProblem problem_;
  int multiprocessors_;
};

}  // namespace

template <class T>
std::unique_ptr<SpammExecution<T>> prepare_tile_loop(const SpammPreparation<T>& p, const jit::KernelSpec& spec, TileLoopLaunch launch) {
  const ops::LoadedKernel loaded = p.rt.loader.load(spec);
  note_kernel(p.decision, loaded);
  const int64_t shared = tile_loop_shared_bytes(launch, p.problem.tile_inner());
  if (shared > 48 * 1024) loaded.kernel.set_max_dynamic_shared(int(shared));
  loaded.kernel.prefer_max_shared_carveout();
  launch.blocks_per_sm = std::max(1, loaded.kernel.max_active_blocks_per_sm(launch.block_threads, std::size_t(shared)));
  return std::make_unique<TileLoopExecution<T>>(loaded.kernel, launch, p.problem, p.rt.target.multiprocessors);
}

template std::unique_ptr<SpammExecution<float>> prepare_tile_loop(const SpammPreparation<float>&, const jit::KernelSpec&, TileLoopLaunch);
template std::unique_ptr<SpammExecution<double>> prepare_tile_loop(const SpammPreparation<double>&, const jit::KernelSpec&, TileLoopLaunch);

template void launch_tile_loop<float>(const cuda::Kernel&, const TileLoopLaunch&, const plan::SpammProblem&, int,
                                      const SpammOperands<float>&);
template void launch_tile_loop<double>(const cuda::Kernel&, const TileLoopLaunch&, const plan::SpammProblem&, int,
                                       const SpammOperands<double>&);

}  // namespace sparsejit::variants
