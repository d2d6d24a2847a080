// What one SpAMM variant defines (C ≈ A·B, A and B dense, tile products below τ skipped). A
// definition file (runtime/variants/spamm/<name>.cpp) derives from SpammVariantOf<Self> and
// registers itself with SPARSEJIT_REGISTER_VARIANT(spamm, <name>, Self). Every variant runs
// after the executor (ops/spamm.cpp) has computed the norm maps, τ and the selection; the
// planning members are pure, the execution members load kernels and launch.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/driver_api.hpp"
#include "jit/kernel_spec.hpp"
#include "ops/kernel_loader.hpp"
#include "plan/spamm.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/device_matrix.hpp"
#include "variants/registry.hpp"

namespace sparsejit::detail {
struct RuntimeState;
}

namespace sparsejit::variants {

// What the planning members see: the selection at τ, the call's problem, the device and the
// op's model (models/spamm.json unless tuned).
struct SpammPlanInputs {
  const plan::SpammFeatures& features;
  const plan::SpammProblem& problem;
  const plan::DeviceTarget& device;
  const nlohmann::json& model;
};

// Where the operands of the kept products are read from: the caller's A and B, or (fp16 and
// bf16 of f32 operands, or of 16-bit ones whose sizes are not whole 16-byte copies) the
// executor's converted copies, zero-padded to whole tiles.
struct SpammOperand {
  CUdeviceptr data = 0;
  int64_t ld = 0;
  int32_t rows = 0, cols = 0;  // the padded sizes for a copy
};

// One call as an execution sees it. The norm maps are doubles on the device: A's
// [tile_rows][tile_inner] and B's [tile_inner][tile_cols], each in its matrix's tile order.
template <class T>
struct SpammOperands {
  SpammOperand a, b;
  DeviceDense<T>& c;  // written
  CUdeviceptr a_norms = 0, b_norms = 0;
  double tau = 0;
  CUstream stream = nullptr;
  bool early = false;  // programmatic dependent launch (ops::launches_early)
};

template <class T>
class SpammExecution {
 public:
  virtual ~SpammExecution() = default;
  // Writes C on operands.stream. The rows are operands.c's: one execution, prepared for a
  // problem of any m, serves every block height of a spread call's rows.
  virtual void run(detail::RuntimeState& rt, const SpammOperands<T>& operands) const = 0;
};

// What preparing an execution gets: the runtime (kernel loader, device), the problem, and the
// decision (how its kernels were obtained is recorded in it). T picks the value type.
template <class T>
struct SpammPreparation {
  detail::RuntimeState& rt;
  const plan::SpammProblem& problem;
  Decision& decision;
};

class SpammVariant {
 public:
  using Base = SpammVariant;
  SpammVariant(std::string name, int rank, std::string summary, Traits traits = {})
      : name(std::move(name)), rank(rank), summary(std::move(summary)), traits(traits) {}
  virtual ~SpammVariant() = default;

  const std::string name;
  const int rank;
  const std::string summary;
  const Traits traits;

  // ---- planning (pure) ----
  // Why the variant cannot run this problem ("" when it can): a precision it does not compute.
  virtual std::string rejected(const SpammPlanInputs& in) const = 0;
  virtual nlohmann::json defaults(const SpammPlanInputs& in) const = 0;
  // Throws an Error naming the value when these parameters cannot run the problem here.
  virtual void check(const plan::SpammProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const;
  // The terms models/spamm.json prices, named by precision class where the rates differ.
  virtual nlohmann::json cost_terms(const SpammPlanInputs& in, const nlohmann::json& params) const = 0;

  // ---- execution ----
  virtual std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpammProblem& problem) const;
  virtual std::unique_ptr<SpammExecution<float>> prepare(const SpammPreparation<float>& p) const = 0;
  virtual std::unique_ptr<SpammExecution<double>> prepare(const SpammPreparation<double>& p) const = 0;
};

template <class Self>
class SpammVariantOf : public SpammVariant {
 public:
  using SpammVariant::SpammVariant;
  std::unique_ptr<SpammExecution<float>> prepare(const SpammPreparation<float>& p) const override {
    return static_cast<const Self*>(this)->template make<float>(p);
  }
  std::unique_ptr<SpammExecution<double>> prepare(const SpammPreparation<double>& p) const override {
    return static_cast<const Self*>(this)->template make<double>(p);
  }
};

using SpammRegistry = Registry<SpammVariant>;

// The flops of the kept tile products, 2·t³ each (edge tiles counted whole: the kernels
// compute them whole).
double kept_flops(const SpammPlanInputs& in);
// The terms every tile variant pays besides its products: a launch; per C tile its list of kept
// k and its store; and, while τ is still to be searched for a share the caller asked
// (features.tau_to_search), the front: front_terms at the priced number of steps, which cuBLAS
// decided before the norms does without.
nlohmann::json tile_loop_terms(const SpammPlanInputs& in);
// What a call pays before its variant runs: the norm pass over A and B (norm_bytes) and
// `evaluations` evaluations of a τ (search_steps, and search_tile_products: the tile products
// each evaluates). At a given τ every path pays it alike (one evaluation), so the choice leaves
// it out; `sparsejit tune --op spamm` takes it off the calls it times at a given τ, so that the
// fitted costs stay the variants' own.
nlohmann::json front_terms(const plan::SpammProblem& problem, double evaluations);
// The flops of the whole product, 2·m·k·n.
double dense_flops(const plan::SpammProblem& problem);
// "f32", "tf32", "3xtf32", "f16" (fp16 and bf16) or "f64": the rate class of a kept product on
// tensor cores or SIMT, which names the model's terms.
std::string rate_class(const plan::SpammProblem& problem, bool tensor_cores);

// The multiplication kernels' shared launch: one block per group of C tiles up to the resident
// limit, each block striding over the groups (spamm_stage.cuh). Used by simt.cpp and mma.cpp.
struct TileLoopLaunch {
  int block_threads = 0;
  int blocks_per_sm = 1;
  int group = 1;            // C tiles per block side
  int64_t stage_bytes = 0;  // shared memory of the staged slices
};
// Dynamic shared memory of a launch: the stages plus the list of kept k (4 bytes each).
int64_t tile_loop_shared_bytes(const TileLoopLaunch& launch, int32_t tile_inner);
// The C tile loop's arguments and launch (spamm_stage.cuh's kernel signature).
template <class T>
void launch_tile_loop(const cuda::Kernel& kernel, const TileLoopLaunch& launch, const plan::SpammProblem& problem,
                      int multiprocessors, const SpammOperands<T>& o);

// Adds how a kernel was obtained to a decision: its origin when slower than the others' and its times.
void note_kernel(Decision& decision, const ops::LoadedKernel& loaded);

// Whether the products read 16-bit operands (fp16, bf16): the caller's f16/bf16 A and B, or the
// executor's copies of f32 ones (ops/spamm.cpp decides which).
bool half_operands(SpammPrecision precision);
// Elements per staged copy: 16 bytes' worth when every size and leading dimension the copies
// touch is a multiple of it (always for 16-bit operands: the executor reads the caller's only
// when they are, else its padded copies), else 1.
int default_vec(const plan::SpammProblem& problem, int elem_bytes);
// The tile loop parameters every multiplication variant takes ({"slice", "stages", "vec"})
// refused, naming the value, when they cannot run: slice not dividing the tile or not whole
// steps of `step`, stages outside [2, 4], vec neither 1 nor default_vec's 16 bytes (or 16
// bytes where the sizes are not multiples), shared memory past the device's.
void check_tile_loop(const std::string& variant, const plan::SpammProblem& problem, const plan::DeviceTarget& device,
                     const nlohmann::json& params, int elem_bytes, int step, int64_t stage_bytes);
// Staged bytes of one stage: `region` rows of (slice + pad_a) A elements, slice rows of
// (region + pad_b) B elements (region: the block's C part, group x tile).
int64_t stage_bytes(int32_t region, int slice, int pad_a, int pad_b, int elem_bytes);

// The norm pass of one operand (templates/spamm_norms.cu): `stored` the matrix's element type,
// copies whether it also writes the 16-bit copy of `precision`, vec the elements per load (1,
// or 16 bytes' worth when the columns and the leading dimension are multiples of it).
jit::KernelSpec norms_spec(DType stored, SpammPrecision precision, int32_t tile, bool copies, int vec);
// A τ search on the device, one evaluation per launch (templates/spamm_search.cu); a given τ
// is a search of one evaluation.
jit::KernelSpec search_spec();
// The kept tile products per tile row of C at τ (templates/spamm_row_counts.cu), for the cut of
// C's rows among GPUs.
jit::KernelSpec row_counts_spec();

// Loads a tile-loop kernel (its origin and times go into the decision) and sizes its grid.
template <class T>
std::unique_ptr<SpammExecution<T>> prepare_tile_loop(const SpammPreparation<T>& p, const jit::KernelSpec& spec,
                                                     TileLoopLaunch launch);

}  // namespace sparsejit::variants
