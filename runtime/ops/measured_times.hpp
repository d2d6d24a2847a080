// Measured selection's shortlist times, kept by a Runtime per pattern and problem key so that a
// new handle of a measured pattern takes the fastest without timing again.
#pragma once
#include <cstddef>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "plan/choose.hpp"

namespace sparsejit::ops {

// Bounded: a long-running process meets ever new patterns (a soak measures thousands a minute),
// and unbounded, these times were memory that grew for the process's life. Past `capacity` keys
// the one remembered first goes (first in, first out: a re-measured pattern costs a few ms,
// not worth a clock per lookup). Thread-safe.
class MeasuredTimes {
 public:
  explicit MeasuredTimes(std::size_t capacity) : capacity_(capacity) {}

  std::optional<std::vector<plan::TimedChoice>> find(const std::string& key) const;
  void remember(const std::string& key, std::vector<plan::TimedChoice> times);
  std::size_t size() const;

 private:
  const std::size_t capacity_;
  mutable std::mutex mutex_;
  std::map<std::string, std::vector<plan::TimedChoice>> times_;
  std::deque<std::string> order_;  // the keys of times_, first remembered first
};

// What a Runtime keeps: a shortlist's times are a few kB, so about 20 MB at most.
inline constexpr std::size_t kMeasuredPatterns = 4096;

}  // namespace sparsejit::ops
