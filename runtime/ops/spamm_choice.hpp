// What auto learns about SpAMM calls with τ given, per runtime and problem (shapes, leading
// dimensions, types, precision, tile), for one pair of operand buffers and one τ.
//
// Two memories, both exact or cheap when stale:
// - A cuBLAS choice is remembered: the next calls on the same buffers with the same τ go to
//   cuBLAS before any norm pass (a norm pass and its read-back cost 0.1-0.2 ms of a 1.3 ms
//   HGEMM at N = 8192 on an H100), until every kRecheckEvery-th call measures the share at τ
//   again. cuBLAS computes the exact product whatever the share, so a stale memory costs time
//   at most, never accuracy.
// - A close call is timed. Where the model prices its pick and the best of the other side
//   (cuBLAS against the tile kernels) within kCloseCall of each other, its prices are not to be
//   trusted (at N = 4096 it priced mma tf32 at 10% kept at 0.24 ms; it took 0.38 ms, against
//   0.32 ms for cuBLAS). The next calls then take kSamples timings of each side, whole calls
//   between events on the caller's stream (the tile side with its norm pass, τ's read-back and
//   the host's planning; the cuBLAS side as it runs when remembered), read without waiting
//   when a later call begins, and follow the faster side while the share at τ stays within
//   kSameShare of the one measured. A call that compiled or loaded its kernels is no sample.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "sparsejit/decision.hpp"
#include "sparsejit/device.hpp"

namespace sparsejit::ops {

constexpr int kRecheckEvery = 8;
constexpr double kCloseCall = 2.0;
constexpr int kSamples = 2;
constexpr double kSameShare = 0.1;  // relative

// Two events around one call.
struct TimedCall {
  TimedCall(const Context& context) : start(context), end(context) {}
  Event start, end;
};

class SpammChoice {
 public:
  enum class Side { None, Tile, Vendor };

  // One call's part in what is learned.
  struct Call {
    std::optional<Decision> before_norms;  // cuBLAS, run without a norm pass
    int remembered_calls = 0;              // calls since the share was measured, when remembered
    Side timed = Side::None;               // the side this call samples
    std::unique_ptr<TimedCall> timing;     // its events, the start recorded at begin
    int64_t generation = 0;                // the comparison it samples
  };

  explicit SpammChoice(const Context& context) : context_(context) {}

  // At a call's start, on operands a and b with τ: what was learned for other operands or
  // another τ is forgotten, finished samples are read, and the call learns whether cuBLAS runs
  // before the norms (remembered, or a cuBLAS sample).
  Call begin(CUdeviceptr a, CUdeviceptr b, double tau, CUstream stream);
  // After the norm pass and τ's evaluation: the decision to run at share `share`, given the
  // model's `model`, and whether the call is a tile sample.
  Decision after_norms(Call& call, Decision model, double share);
  // After the call's launches: its end is recorded when it is a sample (prepared_now: it
  // compiled or loaded kernels, and is none).
  void end(Call& call, bool prepared_now, CUstream stream);

 private:
  struct Sample {
    std::unique_ptr<TimedCall> timing;
    Side side = Side::None;
    int64_t generation = 0;
  };
  struct Comparison {
    Decision tile, vendor;  // the two sides, as the model parametrized them
    double share = 0;       // the share at τ they are compared at
    std::vector<float> tile_ms, vendor_ms;
    int tile_pending = 0, vendor_pending = 0;
    bool wants(Side side) const;
    Side faster() const;  // None until both sides have their samples
  };

  void forget();
  void collect();
  Decision annotated(Decision d) const;
  std::unique_ptr<TimedCall> timing();

  Context context_;
  std::mutex mutex_;
  CUdeviceptr a_ = 0, b_ = 0;
  double tau_ = -1;
  std::optional<Decision> vendor_;  // the remembered cuBLAS choice
  int calls_since_check_ = 0;
  std::optional<Comparison> comparison_;
  int64_t generation_ = 0;  // counts comparisons begun or dropped: a sample counts for its own only
  std::vector<Sample> pending_;
  std::vector<std::unique_ptr<TimedCall>> spare_;
};

}  // namespace sparsejit::ops
