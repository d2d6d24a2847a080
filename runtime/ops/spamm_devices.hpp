// SpAMM on several GPUs of one host (cuSpAMM 3.6), one process driving them through NCCL
// (cuda/nccl.hpp). Two ways in:
//   operands on rank 0 (Runtime::spamm with SpammOptions::devices): the runtime's own GPU
//     holds A, B and C; every call broadcasts B, sends each GPU its rows of A, and brings the
//     blocks of C back into C;
//   operands on every GPU (Runtime::spamm on SpreadDense, sparsejit/spread.hpp): A and B were
//     replicated beforehand (Runtime::replicate); no operand is sent, and each GPU's block of
//     C stays on that GPU.
// Either way, per call:
//   1. norms and τ on rank 0 over the whole of A and B, as one GPU would, and the kept products
//      of each tile row of C counted there and read back. With operands on every GPU
//      (and no converted copies to write), each GPU computes the norms of a slice of the tile
//      rows and the slices are broadcast, so every GPU holds both whole maps and its products
//      need no norm pass of their own;
//   2. C's tile rows cut into one contiguous block per GPU (plan/spamm_devices.hpp): even kept
//      products on the first call of a problem on a set of GPUs; after it, the blocks with
//      which every GPU finishes at once under the cost the calls measured (plan::Paces: per
//      tile row and per kept product; rank 0 starts at once and the others when their operands
//      have arrived, so while the transfers run rank 0 multiplies more);
//   3. rank 0's transfers on a side stream, so that its own products start at once;
//   4. every GPU's norm pass and products enqueued on its stream with no read-back
//      (spamm_share: τ, the variant and the kept share were settled over the whole product).
// The call returns with the work enqueued; the caller's stream waits for every GPU's part.
#pragma once

#include <vector>

#include "ops/runtime_state.hpp"
#include "plan/spamm.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/runtime.hpp"
#include "sparsejit/spread.hpp"

namespace sparsejit::ops {

// Rank 0's part of step 1: the problem (C's leading dimension ldc), τ with the whole product's
// selection, and the kept tile products of each tile row of C at τ, counted on the device
// (templates/spamm_row_counts.cu; plan::kept_per_tile_row is its CPU specification).
// Synchronizes options.stream.
struct SpammFront {
  plan::SpammProblem problem;
  plan::TauSearch tau;
  std::vector<int64_t> kept_per_row;
  double search_ms = 0;
};
template <class In, class Out>
SpammFront spamm_front(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, int64_t ldc,
                       const SpammOptions& options);

// Where one GPU holds a product's norm maps: A's (tile_rows × tile_inner doubles, row-major)
// and B's (tile_inner × tile_cols; the same map when B is A).
struct SpammMaps {
  CUdeviceptr a = 0, b = 0;
};

// The problem of a call (C's leading dimension ldc), its options and shapes checked.
template <class In, class Out>
plan::SpammProblem spamm_problem(const DeviceDense<In>& a, const DeviceDense<In>& b, int64_t ldc, const SpammOptions& options);
// Whether its products read converted 16-bit copies, which only its own norm pass writes.
bool spamm_reads_copies(const plan::SpammProblem& p);
// Bytes of A's map (of_b false) or B's.
std::size_t spamm_map_bytes(const plan::SpammProblem& p, bool of_b);
// The norms of tile rows [first, end) of x (A, or B when of_b) into its whole map at `map`,
// enqueued on `stream` of rt's GPU.
template <class In>
void spamm_norm_rows(detail::RuntimeState& rt, const plan::SpammProblem& p, const DeviceDense<In>& x, bool of_b, int32_t first,
                     int32_t end, CUdeviceptr map, CUstream stream);
// Step 1 over maps already whole on rank 0's GPU (options.stream orders after them).
SpammFront spamm_front_on_maps(detail::RuntimeState& rt, const plan::SpammProblem& p, const SpammMaps& maps, const SpammOptions& options);

// One GPU's part of a spread call: the norm pass over a and b (none when `maps` gives them:
// A's map rows of a's rows, all of B's) and the decided variant `d` at τ (cuBLAS: every
// product), enqueued on options.stream with no read-back.
template <class In, class Out>
void spamm_share(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, DeviceDense<Out>& c, Decision d,
                 double tau, const SpammOptions& options, const SpammMaps* maps = nullptr);

// The call with options.devices set ({-1}: every visible GPU). InvalidInputError naming a
// device that is out of range, repeated, or a list without this runtime's GPU.
template <class In, class Out>
SpammInfo spamm_on_devices(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, DeviceDense<Out>& c,
                           const SpammOptions& options);

// The call on replicated operands (a and b on the same GPUs, rank 0 this runtime's); c becomes
// distributed over them. InvalidInputError naming what does not fit: operands not replicated,
// on other GPUs than each other or than options.devices, or on a list without this runtime's GPU.
template <class In, class Out>
SpammInfo spamm_spread(detail::RuntimeState& rt, const SpreadDense<In>& a, const SpreadDense<In>& b, SpreadDense<Out>& c,
                       const SpammOptions& options);

// Runtime::replicate and Runtime::gather.
template <class T>
SpreadDense<T> replicate(detail::RuntimeState& rt, const DeviceDense<T>& x, const std::vector<int>& devices, void* stream);
template <class T>
void gather(detail::RuntimeState& rt, const SpreadDense<T>& x, DeviceDense<T>& into, void* stream);

}  // namespace sparsejit::ops
