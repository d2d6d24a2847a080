// Host-side parallel loops for the CPU references and the generators: contiguous parts of an
// index range, one std::thread each. Results never depend on how many threads ran, because
// every part writes only its own outputs (and generators seed per row or per chunk).
#pragma once
#include <algorithm>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

namespace sparsejit::detail {

// std::thread::hardware_concurrency, at least 1.
inline int worker_count() {
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

// Below this much work per call a thread costs more than it saves.
constexpr int64_t kMinWorkPerThread = int64_t(1) << 15;

// How many parts to cut `total_work` into: one per worker, fewer when the work is small.
inline int part_count(int64_t total_work) {
  const int64_t by_work = std::max<int64_t>(1, total_work / kMinWorkPerThread);
  return static_cast<int>(std::min<int64_t>(worker_count(), by_work));
}

// Runs fn(part, begin, end) for consecutive bounds[part]..bounds[part + 1], each part on its
// own thread (the last one on the caller's). The first exception thrown by a part is rethrown
// after all parts finished.
template <class Fn>
void run_parts(const std::vector<int64_t>& bounds, Fn fn) {
  const int parts = static_cast<int>(bounds.size()) - 1;
  if (parts <= 0) return;
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(parts));
  auto run_one = [&](int part) {
    try {
      fn(part, bounds[std::size_t(part)], bounds[std::size_t(part) + 1]);
    } catch (...) {
      errors[std::size_t(part)] = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  for (int part = 0; part + 1 < parts; ++part) threads.emplace_back(run_one, part);
  run_one(parts - 1);
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& error : errors)
    if (error) std::rethrow_exception(error);
}

// Cuts [0, n) into `parts` pieces of equal length.
inline std::vector<int64_t> even_bounds(int64_t n, int parts) {
  std::vector<int64_t> bounds(std::size_t(parts) + 1);
  for (int p = 0; p <= parts; ++p) bounds[std::size_t(p)] = n * p / parts;
  return bounds;
}

// Cuts the rows of a CSR pattern into `parts` pieces of about equal weight, where a row weighs
// its nonzeros times `per_nonzero` plus `per_row` (so power-law rows do not pile on one thread).
// row_ptr may be any prefix sum of per-row work (int32 CSR offsets or int64 flop counts).
template <class Offset>
std::vector<int64_t> balanced_row_bounds(const Offset* row_ptr, int32_t rows, int parts,
                                         int64_t per_nonzero, int64_t per_row) {
  auto weight_before = [&](int32_t r) { return int64_t(row_ptr[r]) * per_nonzero + int64_t(r) * per_row; };
  const int64_t total = weight_before(rows);
  std::vector<int64_t> bounds(std::size_t(parts) + 1, rows);
  bounds[0] = 0;
  int32_t row = 0;
  for (int p = 1; p < parts; ++p) {
    const int64_t target = total * p / parts;
    while (row < rows && weight_before(row) < target) ++row;
    bounds[std::size_t(p)] = row;
  }
  return bounds;
}

// Runs fn(part, begin, end) over [0, n) in even pieces sized by `work_per_item`.
template <class Fn>
void parallel_for(int64_t n, int64_t work_per_item, Fn fn) {
  run_parts(even_bounds(n, part_count(n * std::max<int64_t>(1, work_per_item))), fn);
}

// Runs fn(part, begin_row, end_row) over the rows of a CSR pattern, balanced by nonzeros.
template <class Offset, class Fn>
void parallel_for_rows(const Offset* row_ptr, int32_t rows, int64_t per_nonzero, int64_t per_row, Fn fn) {
  const int64_t total = int64_t(row_ptr[rows]) * per_nonzero + int64_t(rows) * per_row;
  run_parts(balanced_row_bounds(row_ptr, rows, part_count(total), per_nonzero, per_row), fn);
}

}  // namespace sparsejit::detail
