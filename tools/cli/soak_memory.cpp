#include <algorithm>
#include <fstream>
#include <string>

#include "cli/soak.hpp"

namespace sparsejit::cli::soak {

int64_t resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;  // "VmRSS:   123456 kB"
  }
  return 0;
}

namespace {

// Mean of `quantity` over the samples with seconds in [from, to] (at least one lies there).
double window_mean(const std::vector<MemorySample>& samples, int64_t MemorySample::*quantity, double from, double to) {
  double sum = 0;
  int count = 0;
  for (const MemorySample& s : samples) {
    if (s.seconds < from || s.seconds > to) continue;
    sum += double(s.*quantity);
    ++count;
  }
  return sum / count;
}

}  // namespace

Growth judge_growth(const std::vector<MemorySample>& samples, int64_t MemorySample::*quantity, double warmup_seconds,
                    int64_t floor_bytes) {
  Growth g;
  if (samples.empty()) return g;
  g.first = samples.front().*quantity;
  g.last = samples.back().*quantity;
  for (const MemorySample& s : samples) g.max = std::max(g.max, s.*quantity);
  std::vector<MemorySample> after;
  for (const MemorySample& s : samples)
    if (s.seconds >= warmup_seconds) after.push_back(s);
  if (after.size() < 2) return g;
  const double start = after.front().seconds, end = after.back().seconds, tenth = (end - start) / 10;
  // Each window holds at least its outer sample (the first, the last), however coarse the sampling.
  g.baseline = window_mean(after, quantity, start, start + tenth);
  g.final = window_mean(after, quantity, end - tenth, end);
  g.limit = std::max(double(floor_bytes), 0.1 * g.baseline);
  g.judged = true;
  g.grew = g.final - g.baseline > g.limit;
  return g;
}

}  // namespace sparsejit::cli::soak
