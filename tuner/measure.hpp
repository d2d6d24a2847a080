// Timing of device work the way METHOD.md asks: warm-up first, CUDA events around each
// repetition, the median reported, and several operand sets rotated so that repeated runs
// do not just measure the L2 cache. Shared by `sparsejit bench` and `sparsejit tune`.
//
// Two clocks. Events: one event pair around each call as the host makes it, so a call whose
// device work is shorter than its host work (a launch costs the host microseconds) measures
// the host. Graph: the calls are captured once into a CUDA graph and its replays are timed,
// so the device runs the calls back to back and the time is that of the device work (kernels,
// memsets and the gaps between them) — the kernel time of a library's call, the same way for
// ours and the vendor's. The host cost of a call is measured separately (`sparsejit run`).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sparsejit/device.hpp"

namespace sparsejit::tuner {

enum class Clock { Events, Graph };

struct TimingOptions {
  int warmup = 5;    // untimed runs first (module loads, plan preparation, clocks up)
  int repeat = 20;   // timed runs (Graph: timed replays); the median is reported
  Clock clock = Clock::Events;
  int calls_per_graph = 8;  // Graph: calls captured per replay (rounded up to a multiple of the sets)
};

// "events" / "graph", and back (InvalidInputError naming the text).
const char* to_string(Clock clock);
Clock parse_clock(const std::string& text);

// The median of samples (the mean of the middle two for an even count); 0 for none.
double median(std::vector<double> samples);

struct Timing {
  double median_ms = 0;
  double min_ms = 0;
  double max_ms = 0;
  std::vector<double> samples_ms;
};

// Times launch(set, stream) after `warmup` runs, cycling set = 0, 1, ..., sets - 1 so each run
// reads another copy of the operands. Events: `repeat` runs, each bracketed by its own pair of
// events on `stream`. Graph: the calls are captured on `stream` (a created stream, not the
// legacy default one; launch must enqueue on the stream it is given) and each of `repeat`
// replays is timed; a sample is the replay's time over the calls in it.
Timing time_on_stream(const Context& context, CUstream stream, int sets, const TimingOptions& options,
                      const std::function<void(int set, CUstream stream)>& launch);

// How many operand sets make the working set at least twice the L2 (so a rotated run finds
// its data out of cache), between 1 and max_sets.
int operand_sets(int64_t bytes_per_set, int64_t l2_bytes, int max_sets = 8);

}  // namespace sparsejit::tuner
