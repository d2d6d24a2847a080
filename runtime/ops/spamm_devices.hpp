// SpAMM on several GPUs of one host (cuSpAMM 3.6), one process driving them through NCCL
// (cuda/nccl.hpp). The runtime's own GPU (rank 0) holds A, B and C:
//   1. norms and τ on rank 0, over the whole of A and B (spamm_front), as one GPU would;
//      the maps read back, the kept products per tile row of C counted on the host;
//   2. C's tile rows cut into one contiguous block per GPU of even kept products
//      (plan/spamm_devices.hpp); the planner picks the variant from the whole product;
//   3. one NCCL group: B broadcast from rank 0, each other rank's rows of A sent to it;
//   4. every rank multiplies its block (the single-GPU call on its rows, τ given, the
//      variant forced), each on its own stream;
//   5. one NCCL group: every other rank's block of C sent back into the caller's C.
// Every transfer and product is ordered on the streams; the call returns when rank 0's stream
// holds the gathers (as a one-GPU call returns with its launches queued).
#pragma once

#include "ops/runtime_state.hpp"
#include "plan/spamm.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/runtime.hpp"

namespace sparsejit::ops {

// Rank 0's part of step 1: the problem, τ with the whole product's selection, and both norm
// maps on the host (A's tile_rows × tile_inner, B's tile_inner × tile_cols).
struct SpammFront {
  plan::SpammProblem problem;
  plan::TauSearch tau;
  NormMap a, b;
  double search_ms = 0;
};
template <class In, class Out>
SpammFront spamm_front(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, const DeviceDense<Out>& c,
                       const SpammOptions& options);

// The call with options.devices set ({-1}: every visible GPU). InvalidInputError naming a
// device that is out of range, repeated, or a list without this runtime's GPU.
template <class In, class Out>
SpammInfo spamm_on_devices(Runtime& self, detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b,
                           DeviceDense<Out>& c, const SpammOptions& options);

}  // namespace sparsejit::ops
