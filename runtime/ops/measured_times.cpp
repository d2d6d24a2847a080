#include "ops/measured_times.hpp"

namespace sparsejit::ops {

std::optional<std::vector<plan::TimedChoice>> MeasuredTimes::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = times_.find(key);
  if (it == times_.end()) return std::nullopt;
  return it->second;
}

void MeasuredTimes::remember(const std::string& key, std::vector<plan::TimedChoice> times) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto [it, added] = times_.insert_or_assign(key, std::move(times));
  if (!added) return;
  order_.push_back(key);
  while (order_.size() > capacity_) {
    times_.erase(order_.front());
    order_.pop_front();
  }
}

std::size_t MeasuredTimes::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return times_.size();
}

}  // namespace sparsejit::ops
