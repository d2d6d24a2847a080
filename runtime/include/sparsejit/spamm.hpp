// SpAMM (cuSpAMM): C ≈ A·B for dense A (m×k) and B (k×n) whose entries decay away from the
// diagonal. Both are cut into tile×tile blocks from (0, 0) (edge tiles partial); the product
// A_ik·B_kj of C's tile (i, j) is computed iff ‖A_ik‖F·‖B_kj‖F ≥ τ (norms in double), exactly
// as reference::spamm does. The options say how τ is found and in what precision the kept
// products are computed; SpammInfo reports τ, the share of tile products kept and an a-priori
// bound on ‖C − A·B‖F.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/decision.hpp"

namespace sparsejit {

// The arithmetic of the kept tile products. Never chosen by the library: the caller asks for
// a reduced precision, and the Decision shows it.
enum class SpammPrecision {
  Full,  // the value type's own: f32 (SIMT FMA, or tensor cores with the 3xTF32 split) or f64 (SIMT)
  TF32,  // f32 operands rounded to TF32 on tensor cores, f32 accumulation (f32 only)
  FP16,  // operands converted to fp16, f32 accumulation (f32 only)
  BF16,  // operands converted to bf16, f32 accumulation (f32 only)
};
const char* to_string(SpammPrecision precision);
// "full" | "tf32" | "fp16" | "bf16"; InvalidInputError naming the text otherwise.
SpammPrecision parse_spamm_precision(const std::string& text);

// How a call finds τ: at most one of tau, valid_ratio and max_error is set; none means τ = 0
// (every tile product kept: the exact product, to rounding).
struct SpammOptions {
  // The threshold itself: finite and ≥ 0.
  std::optional<double> tau;
  // A target share of the tile products to keep, in (0, 1]: τ is searched for on the device
  // over the norm maps (geometric bisection, cuSpAMM 3.5.2) until the kept share is within
  // ratio_tolerance · valid_ratio of it, or after max_search_iterations (the closest τ seen).
  std::optional<double> valid_ratio;
  double ratio_tolerance = 0.01;  // relative, in (0, 1)
  // A target for the a-priori bound: the largest τ whose bound is ≤ max_error (bisection to
  // max_search_iterations), finite and ≥ 0.
  std::optional<double> max_error;
  int max_search_iterations = 40;  // in [1, 200]
  // The tile size: 0 lets the planner choose; else 32, 64 or 128 (the kernels' tile shapes).
  int32_t tile = 0;
  SpammPrecision precision = SpammPrecision::Full;
  // "" or "auto": the planner chooses; else a variant (`sparsejit explain --list --op spamm`).
  std::string variant;
  nlohmann::json params = nlohmann::json::object();  // forced parameters of that variant
  void* stream = nullptr;   // CUstream / cudaStream_t; nullptr: the legacy default stream
  bool early_launch = true; // as Options::early_launch
  // GPUs of this host to share the product (cuSpAMM 3.6): empty, this runtime's GPU alone;
  // else ordinals that include this runtime's (rank 0, which holds A, B and C), or {-1} for
  // every visible GPU. C's tile rows go to the GPUs in contiguous blocks cut by kept products
  // (even on the first call of a problem on these GPUs, after it where every GPU finishes at
  // once at the paces that call measured); B is broadcast and each GPU's rows of A sent to it
  // through NCCL (loaded at run time: SPARSEJIT_NCCL_LIBRARY), and the blocks of C come back
  // into C. The Decision's features `devices`, `balance` and `host_ms` list each GPU's rows,
  // kept products and share, the paces, and the host time of each step. One ordinal (this
  // runtime's) runs the same steps with one rank. Operands already on every GPU: Runtime::spamm
  // on SpreadDense (sparsejit/spread.hpp).
  std::vector<int> devices;
};

// What one call reports.
struct SpammInfo {
  std::shared_ptr<const Decision> decision;
  int32_t tile = 0;
  double tau = 0;
  int64_t valid_products = 0;  // tile products kept
  int64_t tile_products = 0;   // all tile products: ceil(m/t)·ceil(k/t)·ceil(n/t)
  double valid_ratio = 0;      // valid_products / tile_products (0 when there are none)
  // sqrt(Σ over C's tiles (Σ over skipped k of ‖A_ik‖F·‖B_kj‖F)²): ‖C − A·B‖F is at most this
  // (triangle inequality and ‖XY‖F ≤ ‖X‖F·‖Y‖F) plus the rounding of the precision used.
  double error_bound = 0;
  int search_iterations = 0;  // evaluations of a τ search (0 when τ was given)
  double search_ms = 0;       // host wall time of the search (each step reads one result back)
};

}  // namespace sparsejit
