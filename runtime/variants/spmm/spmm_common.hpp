// What several SpMM variants share: the vector and lane-group arithmetic of the row-per-group
// kernels, the cost terms every variant starts from, parameter checks, and the launch of the
// CSR kernels (csr_rowwarp, csr_vector, csr_rowsplit and rs's light kernel take the same
// arguments). Each variant's own formulas live in its definition file.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cuda/module.hpp"
#include "ops/kernel_loader.hpp"
#include "plan/planner.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/features.hpp"
#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit::variants::spmm {

inline constexpr int kMaxRowBytes = 512;  // bytes of C one lane group covers per pass
inline constexpr int kUnroll = 4;         // B rows a lane group keeps in flight by default

int value_bytes(const plan::SpmmProblem& p);
int64_t ld_or_k(int64_t ld, int32_t k);
// The 16-byte vector when it divides K and both leading dimensions (so every row of B and C
// starts aligned: device allocations are 256-byte aligned), else single values.
int vector_width(const plan::SpmmProblem& p);
int vector_units(const plan::SpmmProblem& p, int vec);
// The fewest lanes (8, 16, 32) whose vectors cover K in one step.
int lanes_for(int units);
// Vectors per lane: enough to cover K, capped so one group's row stays within kMaxRowBytes
// (registers, and the shared tile's row for the heavy kernel), and within {1, 2, 4}.
int cf_for(const plan::SpmmProblem& p, int vec, int lanes);
int slice_columns(int lanes, int vec, int cf);
// The lane counts a search space tries: the fewest covering K, and 32 (fewer vectors per lane,
// more columns per group).
std::vector<int> lanes_covering_k_and_32(const plan::SpmmProblem& p);
int64_t slices(int32_t k, int slice);
double ceil_div(double a, double b);

// The light (row-per-group) kernel's parameters: csr_vector's, and rs's light half.
nlohmann::json light_params(const plan::SpmmProblem& p);

// The cost terms every variant starts from. Every byte count is what the kernel moves, in its class:
//   sparse_bytes   indices, values and offsets (DRAM, read once per K slice)
//   gather_bytes   rows of B read per nonzero (from L2 mostly: B usually fits in it)
//   l1_miss_gather_bytes  the share of gather_bytes that misses L1: nonzeros' accesses spread
//                  evenly over the gathered operand (cols x K: B, or C for Aᵀ·B), of which one
//                  SM's L1 holds l1_per_sm bytes (a 512 x 512 layer's B at K = 128 is 256 KiB and
//                  hits; a 512 x 4608 one's, 2.3 MiB, misses 89%: rowsplit ran 7.5 against 9.2 TB/s)
//   output_bytes   C written once (plain stores or the memset before atomics)
//   panel_bytes    B's panel rows staged into shared memory by the heavy kernel
//   shared_bytes   shared-memory reads of the staged rows (one row slice per heavy nonzero)
//   shared_atomic_bytes  shared-memory atomics of the transposed heavy kernel
//   atomic_bytes   bytes added into C with global atomics
//   critical_nnz   nonzeros one lane group walks in sequence (the longest row it may get)
//   critical_loads dependent memory round trips of the slowest lane group: a row-per-group
//                  kernel loads indices once per `lanes` nonzeros and B rows once per
//                  `unroll` nonzeros of its longest row, in sequence; csr_merge walks
//                  nnz_per_group nonzeros (indices prefetched) whatever the rows
//   critical_row   longest row times K (csr_rowwarp's, one warp walks K in passes)
//                  csr_rowwarp's critical_loads: its longest row once per pass, one B load each
//   launch         kernel launches and memsets
nlohmann::json base_terms(const SpmmPlanInputs& in);

// Of several parameter sets of one variant, the one the model's cost formula prices lowest
// (the first when the model prices no such variant).
nlohmann::json cheapest_params(const SpmmVariant& variant, const SpmmPlanInputs& in, const std::vector<nlohmann::json>& sets);

// Round trips of a light-kernel group walking `row` nonzeros: index loads every `lanes`
// nonzeros, and for A·B B-row loads every `unroll` nonzeros after them (Aᵀ·B's atomics do
// not wait). Fitted on the first H200 benchmark: about 0.2 µs per round trip.
double light_critical_loads(double row, const nlohmann::json& params, bool transpose);

// Checks of (possibly forced) parameters: InvalidInputError naming the value.
void require_one_of(const std::string& variant, const nlohmann::json& params, const char* key, std::initializer_list<int> allowed);
// vec_width: single values, or the 16-byte vector when it divides K and both leading dimensions.
void check_vector_width(const std::string& variant, const nlohmann::json& params, const plan::SpmmProblem& p);
// lanes (8, 16, 32), cf (1, 2, 4) and unroll (1, 2, 4, 8) of a lane-group kernel.
void check_group_params(const std::string& variant, const nlohmann::json& params);
void check_light_params(const std::string& variant, const nlohmann::json& params, const plan::SpmmProblem& p);

// value_t, vec_t and vec_width of a kernel spec for the value type and the planned vector width.
nlohmann::json vector_types(const nlohmann::json& params, DType dtype);
// spmm_rs_light.cu (A·B) or spmm_rs_light_t.cu (Aᵀ·B): csr_vector's kernel and rs's light half.
jit::KernelSpec light_spec(const nlohmann::json& params, DType dtype, bool transpose);
// Columns of C one light block covers (its gridDim.y is ceil(K / this)).
int light_slice(const nlohmann::json& params);

// A kernel with its launch shape.
struct Launch {
  cuda::Kernel kernel;
  cuda::Dim3 grid, block;
  unsigned shared_bytes = 0;
};

// gridDim.y: the K slices, at most 65535 of them.
unsigned k_slices(int32_t k, int slice);
// Loads a kernel and records how it was obtained (cache, compile) in the decision.
ops::LoadedKernel load(detail::RuntimeState& rt, Decision& d, const jit::KernelSpec& spec);
// The light kernel over `rows` rows of A: a lane group per row, K in slices.
Launch light_launch(detail::RuntimeState& rt, Decision& d, DType dtype, bool transpose, int32_t rows, int32_t k);
// One launch of a CSR kernel (rowwarp, rowsplit or light, either direction): all take
// (m, k, row_ptr, col_idx, values, b, ldb, c, ldc).
void launch_csr(const Launch& l, int m, int k, CUdeviceptr row_ptr, CUdeviceptr col_idx, CUdeviceptr values, CUdeviceptr b,
                long long ldb, CUdeviceptr c, long long ldc, CUstream stream, bool early);

// The execution of a one-kernel CSR variant (csr_rowwarp, csr_vector, csr_rowsplit): Aᵀ·B
// kernels add into C, so C is cleared first for them.
template <class T>
class CsrKernelExecution final : public SpmmExecution<T> {
 public:
  CsrKernelExecution(Launch launch, bool clear_c) : launch_(std::move(launch)), clear_c_(clear_c) {}
  void run(detail::RuntimeState&, const SpmmOperands<T>& o) override {
    if (clear_c_) o.c.clear_async(o.stream);
    launch_csr(launch_, o.a.rows(), o.b.cols(), o.a.row_ptr().ptr(), o.a.col_idx().ptr(), o.a.values().ptr(),
               o.b.buffer().ptr(), o.b.ld(), o.c.buffer().ptr(), o.c.ld(), o.stream, o.early);
  }
  bool launches_only() const override { return !clear_c_; }

 private:
  Launch launch_;
  bool clear_c_;
};

}  // namespace sparsejit::variants::spmm
