// Per-call options. Every field has a default that gives the automatic (planned) path.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "sparsejit/decision.hpp"

namespace sparsejit {

// Whether the caller will run the same sparsity pattern again. A pattern that is reused pays
// for per-pattern work once and gains on every later call:
//   SDDMM: the planner admits variants that need a per-pattern preprocessing (reindexed_tiled)
//          only for Reuse::Many, or when the matrix handle has already served an SDDMM call.
//   Both:  auto times the planner's shortlist (its choice, the next-cheapest variants of ours
//          and cuSPARSE, then the parameter settings next to the two fastest) once per
//          pattern and problem and keeps the fastest (decision source "measured"): on the first
//          call for Reuse::Many, else on the second call with the same K, type and layout on a
//          handle (the pattern is being reused). See `measure`. The times are stored in the
//          cache database: another Runtime or a later process meeting the same pattern and
//          problem on the same device, library, driver and model takes the fastest from there
//          on its first call, without timing (decision source "recorded").
enum class Reuse {
  Once,  // default: one call per pattern; no preprocessing beyond what the fastest plain path needs
  Many,  // the pattern will be used many times: per-pattern preprocessing is worth building
};
inline const char* to_string(Reuse reuse) { return reuse == Reuse::Many ? "many" : "once"; }

// spgemm_numeric's kernel by positions (Options::positions_kernel). Auto: the plan's (entries
// below 8 M products, from 2 M timed against a warp a task on the first call and the faster
// kept; from 8 M a warp a task, up to 200 M products timed against blocks on the first call and
// the faster kept; blocks where entries do not fit the memory), and where a
// tile product holds at least 128 products on average, tiles timed against it on the first call
// and the faster kept; rows where no positions fit the memory. A forced kernel is never timed
// against another.
enum class PositionsKernel {
  Auto,
  Entries,  // products listed under their C entries, summed in registers: 8 bytes a product kept
  Warps,    // a warp a task, sums in each warp's shared memory: 2 bytes a product
  Blocks,   // blocks sharing a task, atomic sums in shared memory: 2 or 4 bytes a product
  Tiles,    // bitmap_tc's tile products on tensor cores, C's tiles kept: about 90 bytes a tile product
  Rows,     // no positions: each row's products gathered again, summed over C's columns in shared memory: 4 bytes a row
};
const char* to_string(PositionsKernel kernel);  // "auto", "entries", "warps", "blocks", "tiles" or "rows"

struct Options {
  // "" or "auto": the planner chooses. Otherwise the name of a variant of the op
  // (`sparsejit explain --list` prints them), e.g. "csr_rowwarp" or "cusparse".
  std::string variant;
  // Whether `variant` names one (neither "" nor "auto").
  bool forces_variant() const { return !variant.empty() && variant != kAutomatic; }
  static constexpr const char* kAutomatic = "auto";
  // Parameters forced on the variant (merged over the planner's own), e.g. {"warps_per_block": 8}.
  nlohmann::json params = nlohmann::json::object();
  // CUstream / cudaStream_t to launch on; nullptr is the legacy default stream.
  void* stream = nullptr;
  // SpMM and SpGEMM: compute C = Aᵀ·B instead of A·B.
  bool transpose_a = false;
  // SpGEMM only: compute C = A·Bᵀ (with transpose_a, Aᵀ·Bᵀ); A·Aᵀ is spgemm(a, a) with this set.
  bool transpose_b = false;
  // How often this sparsity pattern will be used (see Reuse).
  Reuse reuse = Reuse::Once;
  // Whether auto may time its shortlist on a reused pattern (see Reuse). The call that
  // measures synchronizes the caller's stream and runs each shortlisted plan a few times on a
  // stream of the runtime's own (C is written, then overwritten by the chosen plan); a call
  // on a stream being captured into a graph never measures. false: the model's choice always.
  bool measure = true;
  // Measured selection is skipped when every other candidate the model priced is predicted at
  // least this many times slower than its choice: the model's margin is too wide for timing
  // to change the choice. Unset: the model's own (its "measure_skip_margin", the margin from
  // which its cross-validated choices held), else 1.5 (plan/measure_policy.hpp says what each
  // rests on). >= 1; infinity: always time.
  std::optional<double> measure_skip_margin;
  // The host time one measured selection may spend, in ms: once spent, no further setting is
  // started (the model's choice and cuSPARSE are always timed), and long calls are timed with
  // fewer repeats. > 0.
  double measure_budget_ms = 250.0;
  // The same budget in calls: of the planner's choice (its predicted time) until a setting has
  // run, then of the fastest call measured, which is what auto runs afterwards. Timing costs
  // each setting's preparation (0.25 ms plus 1 ns (SpMM) to 4 ns (SDDMM) a nonzero for formats
  // built on the host), a synchronization and its runs, which a pattern whose calls take
  // microseconds pays back only after thousands of calls. A selection may spend the smaller of
  // this many calls and measure_budget_ms; where that cannot cover the two settings always
  // timed (the choice and the vendor), nothing is timed and the model's choice stands. > 0;
  // infinity: measure_budget_ms alone.
  double measure_budget_calls = 50.0;
  // Whether this call's kernels launch early (programmatic dependent launch, sm_90 and later):
  // each may be scheduled while the previous kernel on the stream is finishing and waits for
  // that kernel's results before it reads or writes anything, so stream order holds and about
  // 0.3 µs of launch latency per kernel is hidden. false: ordinary stream-ordered launches.
  bool early_launch = true;
  // SpMM, SDDMM and spgemm_numeric: whether a call whose plan only launches kernels (SpMM's
  // csr_vector, csr_rowsplit, csr_rowwarp, and csr_merge for A·B; SDDMM's row_gather and
  // coo_flat; spgemm_numeric by positions) issues them as one CUDA graph, built by the plan's
  // first such call and replayed with each call's operands. The host then spends about 1.5 µs on a call instead of about 3 µs per kernel
  // (H200 machine), which is what a call costs when its kernels are shorter than that (small
  // matrices, called from Python: the Python package turns it on). The price: the call's first
  // kernel no longer launches early behind the previous call's last one, so back-to-back calls
  // the device is slower at than the host lose early_launch's overlap between them. Calls made
  // while the stream is being captured into a graph, and other plans, launch as usual
  // (CallInfo::launched_as_graph says which).
  bool replay_launches = false;
  // SpGEMM only: the most device memory the call may take for its workspace and C, in bytes
  // (A and B, already on the device, are not counted). Unset: what the device has free when
  // the pair is first planned (cuMemGetInfo plus what the runtime's memory pools hold unused).
  // The planner estimates each variant's peak, rejects those that do not fit (the Decision
  // names the bytes), and row_hash processes C in row panels when one pass does not fit;
  // when nothing fits the call fails naming the bytes before anything is allocated. > 0.
  std::optional<int64_t> memory_limit_bytes;
  // spgemm_numeric only: whether the first call on a C may keep each product's place in C on
  // C's handle (2 bytes a product, 4 where a row of C passes 65536 entries, plus 4 per entry of
  // A), so that later calls only gather, multiply and add. false: every call runs spgemm's plan
  // again (no memory kept beyond C). Positions are also left out where they pass
  // memory_limit_bytes or half the free device memory: then rows (PositionsKernel::Rows, 4
  // bytes a row) are kept where they fit, unless a kernel is forced.
  bool keep_positions = true;
  // spgemm_numeric only: which kernel computes by positions (see PositionsKernel); a forced
  // one is kept on C beside the others, so a C can be timed with each.
  PositionsKernel positions_kernel = PositionsKernel::Auto;
};

// A forced choice from SPARSEJIT_FORCE=op:variant[:k=v,...], e.g.
// "spmm:csr_rowwarp:warps_per_block=4". Values parse as JSON numbers or booleans where they
// can, else as strings.
struct ForcedChoice {
  Op op;
  std::string variant;
  nlohmann::json params = nlohmann::json::object();
};

// Parses a SPARSEJIT_FORCE value; throws InvalidInputError naming the bad part.
ForcedChoice parse_force(const std::string& spec);
// Parses "variant[:key=value,...]" (SPARSEJIT_FORCE without the op, as the CLI's --variant
// takes it) for `op`; errors start with `source`, which names where the text came from.
ForcedChoice parse_variant_choice(Op op, const std::string& text, const std::string& source);

}  // namespace sparsejit
