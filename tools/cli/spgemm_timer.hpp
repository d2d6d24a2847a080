// SpGEMM's whole call C = A·A timed on the device, as `bench --op spgemm` and `tune --op
// spgemm` time it. Each call learns NNZ(C) on the host before allocating C, so a call cannot be
// captured in a graph: every time is an event pair around the host's call (what a caller waits
// for), on a stream of the timer's own.
#pragma once
#include <cstdint>
#include <utility>

#include "sparsejit/runtime.hpp"
#include "tuner/measure.hpp"

namespace sparsejit::cli {

// T: float or double.
template <class T>
class SpgemmTimer {
 public:
  // `timing`'s warm-up and repeat counts; its clock is always events.
  SpgemmTimer(Runtime& rt, const DeviceCsr<T>& a, const tuner::TimingOptions& timing);

  // One untimed call (plan, kernel loads and any failure surface there), then the median of
  // the timed calls. Returns the untimed call's info and the median ms.
  std::pair<CallInfo, double> time(Options options);

  // Device bytes one call holds at its peak besides what was held before it (cuda::held_bytes:
  // workspace, scratch and C's arrays, in stream order); kernels already loaded.
  int64_t peak_bytes(Options options);

  // Host wall-clock ms of the first call on a fresh handle of A (features, plan, the call),
  // kernels already loaded by the runs before.
  double first_call_ms(const Csr<T>& host, const Options& options);

 private:
  Runtime& rt_;
  const DeviceCsr<T>& a_;
  tuner::TimingOptions timing_;
  Stream stream_;
};

}  // namespace sparsejit::cli
