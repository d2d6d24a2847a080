#include "tuner/measure.hpp"

#include <algorithm>

#include "sparsejit/error.hpp"

namespace sparsejit::tuner {

Timing time_on_stream(const Context& context, CUstream stream, int sets, const TimingOptions& options,
                      const std::function<void(int, CUstream)>& launch) {
  if (sets < 1) throw InvalidInputError("operand sets " + std::to_string(sets) + " must be >= 1");
  if (options.repeat < 1) throw InvalidInputError("repeat " + std::to_string(options.repeat) + " must be >= 1");
  for (int i = 0; i < options.warmup; ++i) launch(i % sets, stream);
  std::vector<Event> starts, ends;
  for (int i = 0; i < options.repeat; ++i) {
    starts.emplace_back(context);
    ends.emplace_back(context);
  }
  for (int i = 0; i < options.repeat; ++i) {
    starts[std::size_t(i)].record(stream);
    launch((options.warmup + i) % sets, stream);
    ends[std::size_t(i)].record(stream);
  }
  Timing t;
  for (int i = 0; i < options.repeat; ++i) t.samples_ms.push_back(elapsed_ms(starts[std::size_t(i)], ends[std::size_t(i)]));
  std::vector<double> sorted = t.samples_ms;
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  t.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  t.min_ms = sorted.front();
  t.max_ms = sorted.back();
  return t;
}

int operand_sets(int64_t bytes_per_set, int64_t l2_bytes, int max_sets) {
  if (bytes_per_set <= 0) return 1;
  const int64_t needed = (2 * l2_bytes + bytes_per_set - 1) / bytes_per_set;
  return int(std::clamp<int64_t>(needed, 1, max_sets));
}

}  // namespace sparsejit::tuner
