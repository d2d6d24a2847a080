#include "tuner/measure.hpp"

#include <algorithm>

#include "cuda/graph.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::tuner {

namespace {

using Launch = std::function<void(int, CUstream)>;

std::vector<double> event_samples(const Context& context, CUstream stream, int sets, const TimingOptions& options,
                                  const Launch& launch) {
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
  std::vector<double> samples;
  for (int i = 0; i < options.repeat; ++i) samples.push_back(elapsed_ms(starts[std::size_t(i)], ends[std::size_t(i)]));
  return samples;
}

std::vector<double> graph_samples(const Context& context, CUstream stream, int sets, const TimingOptions& options,
                                  const Launch& launch) {
  if (options.calls_per_graph < 1)
    throw InvalidInputError("calls per graph " + std::to_string(options.calls_per_graph) + " must be >= 1");
  const int calls = (options.calls_per_graph + sets - 1) / sets * sets;
  const cuda::CapturedGraph graph(context, stream, [&] {
    for (int i = 0; i < calls; ++i) launch(i % sets, stream);
  });
  graph.launch(stream);  // the first replay uploads the graph
  std::vector<Event> marks;
  for (int i = 0; i <= options.repeat; ++i) marks.emplace_back(context);
  marks[0].record(stream);
  for (int i = 0; i < options.repeat; ++i) {
    graph.launch(stream);
    marks[std::size_t(i) + 1].record(stream);
  }
  std::vector<double> samples;
  for (int i = 0; i < options.repeat; ++i)
    samples.push_back(elapsed_ms(marks[std::size_t(i)], marks[std::size_t(i) + 1]) / calls);
  return samples;
}

}  // namespace

const char* to_string(Clock clock) { return clock == Clock::Graph ? "graph" : "events"; }

Clock parse_clock(const std::string& text) {
  if (text == "graph") return Clock::Graph;
  if (text == "events") return Clock::Events;
  throw InvalidInputError("clock '" + text + "' is not one of: graph, events");
}

Timing time_on_stream(const Context& context, CUstream stream, int sets, const TimingOptions& options, const Launch& launch) {
  if (sets < 1) throw InvalidInputError("operand sets " + std::to_string(sets) + " must be >= 1");
  if (options.repeat < 1) throw InvalidInputError("repeat " + std::to_string(options.repeat) + " must be >= 1");
  for (int i = 0; i < options.warmup; ++i) launch(i % sets, stream);
  Timing t;
  t.samples_ms = options.clock == Clock::Graph ? graph_samples(context, stream, sets, options, launch)
                                               : event_samples(context, stream, sets, options, launch);
  t.median_ms = median(t.samples_ms);
  const auto [least, most] = std::minmax_element(t.samples_ms.begin(), t.samples_ms.end());
  t.min_ms = *least;
  t.max_ms = *most;
  return t;
}

double median(std::vector<double> samples) {
  if (samples.empty()) return 0;
  std::sort(samples.begin(), samples.end());
  const std::size_t n = samples.size();
  return n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
}

int operand_sets(int64_t bytes_per_set, int64_t l2_bytes, int max_sets) {
  if (bytes_per_set <= 0) return 1;
  const int64_t needed = (2 * l2_bytes + bytes_per_set - 1) / bytes_per_set;
  return int(std::clamp<int64_t>(needed, 1, max_sets));
}

}  // namespace sparsejit::tuner
