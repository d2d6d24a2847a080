// What several SDDMM variants share: power-of-two arithmetic, the vector width, launch
// defaults from the model, tile estimates, parameter checks, and loading a kernel. Each
// variant's own formulas live in its definition file (or its family's: gather.hpp,
// dense_tiles.hpp, tiled.hpp).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "cuda/module.hpp"
#include "plan/planner.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/features.hpp"
#include "variants/sddmm/sddmm_variant.hpp"

namespace sparsejit::variants::sddmm {

int64_t round_up(int64_t value, int64_t multiple);
int64_t pow2_at_least(int64_t value);
int64_t pow2_at_most(int64_t value);
bool is_pow2(int64_t value);

// Widest 16-byte-or-less vector that divides K and both leading dimensions, so every row of
// A and B starts aligned (device allocations are 256-byte aligned).
int vector_width(const plan::SddmmProblem& p);

// A launch default of `variant` from the model, else from the shipped model (always complete).
nlohmann::json launch_value(const nlohmann::json& model, const std::string& variant, const std::string& key);

// Expected count of occupied cells when `items` land uniformly in `cells` cells.
double occupied(double items, double cells);

// Non-empty ti x tj tiles: the problem's exact count when it has one, else estimated from the
// inspected bitmap tiles (features.tiles) spread uniformly over the ti x tj grid.
double dense_tiles_estimate(const Features& f, const plan::SddmmProblem& p, double ti, double tj);

// The cost terms of a kernel that gathers both rows of every nonzero from memory (coo_flat,
// and cuSPARSE's sampled dots): `launches` kernels.
nlohmann::json gathered_rows_terms(const Features& f, const plan::SddmmProblem& p, double launches);

// Checks of (possibly forced) parameters: InvalidInputError "sddmm <variant>: <what>".
void require(bool ok, const std::string& variant, const std::string& what);
int64_t int_param(const nlohmann::json& params, const std::string& variant, const char* key);
// vector_width: 1, or the widest vector when it divides k, lda and ldb.
void check_vector_width(const nlohmann::json& params, const plan::SddmmProblem& p, const std::string& variant);
// group_size: a power of two in [1, 32]; returns it.
int64_t check_group_size(const nlohmann::json& params, const std::string& variant);
// threads_per_block: whole warps in [32, 1024], whole lane groups of `group`.
void check_threads(const nlohmann::json& params, const std::string& variant, int64_t group);

// A kernel's vector type: the value type itself for width 1, else float4 or double2.
std::string vec_type(DType dtype, int width);

// A kernel with its launch shape.
struct Launch {
  cuda::Kernel kernel;
  cuda::Dim3 grid, block;
  unsigned shared_bytes = 0;

  void operator()(void** args, CUstream stream, bool early) const {
    kernel.launch(grid, block, shared_bytes, stream, args, early);
  }
};

// Loads (compiling or from the cache) the kernel of `spec` and records its origin in the
// decision.
cuda::Kernel load_kernel(detail::RuntimeState& rt, Decision& d, const jit::KernelSpec& spec);

// A kernel's dynamic shared memory per block; past the default 48 KB the kernel must opt in
// (the planner has checked the device's limit).
unsigned dynamic_shared(const cuda::Kernel& kernel, int64_t bytes);

}  // namespace sparsejit::variants::sddmm
