// Timing of device work the way METHOD.md asks: warm-up first, CUDA events around each
// repetition, the median reported, and several operand sets rotated so that repeated runs
// do not just measure the L2 cache. Shared by `sparsejit bench` and `sparsejit tune`.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "sparsejit/device.hpp"

namespace sparsejit::tuner {

struct TimingOptions {
  int warmup = 5;    // untimed runs first (module loads, plan preparation, clocks up)
  int repeat = 20;   // timed runs; the median is reported
};

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  std::vector<double> samples_ms;
};

// Times launch(set, stream) `repeat` times after `warmup` runs, cycling set = 0, 1, ...,
// sets - 1 so each run reads another copy of the operands. Every run is bracketed by its own
// pair of events on `stream`.
Timing time_on_stream(const Context& context, CUstream stream, int sets, const TimingOptions& options,
                      const std::function<void(int set, CUstream stream)>& launch);

// How many operand sets make the working set at least twice the L2 (so a rotated run finds
// its data out of cache), between 1 and max_sets.
int operand_sets(int64_t bytes_per_set, int64_t l2_bytes, int max_sets = 8);

}  // namespace sparsejit::tuner
