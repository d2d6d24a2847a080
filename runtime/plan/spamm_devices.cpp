#include "plan/spamm_devices.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include "sparsejit/error.hpp"

namespace sparsejit::plan {

std::vector<int64_t> kept_per_tile_row(const NormMap& a, const NormMap& b, double tau) {
  if (a.tile_cols != b.tile_rows)
    throw InvalidInputError("kept_per_tile_row: A's map has " + std::to_string(a.tile_cols) + " tile columns, B's " +
                            std::to_string(b.tile_rows) + " tile rows");
  // B's rows sorted descending: the j kept with ‖A_ik‖ are a prefix, found by bisection with
  // the kernels' own test (a product compared with τ, not τ divided by a norm).
  std::vector<std::vector<double>> rows(std::size_t(b.tile_rows));
  for (int32_t k = 0; k < b.tile_rows; ++k) {
    rows[std::size_t(k)].assign(b.norms.begin() + std::ptrdiff_t(k) * b.tile_cols, b.norms.begin() + std::ptrdiff_t(k + 1) * b.tile_cols);
    std::sort(rows[std::size_t(k)].begin(), rows[std::size_t(k)].end(), std::greater<>());
  }
  std::vector<int64_t> kept(std::size_t(a.tile_rows), 0);
  for (int32_t i = 0; i < a.tile_rows; ++i)
    for (int32_t k = 0; k < a.tile_cols; ++k) {
      const double norm = a.at(i, k);
      const std::vector<double>& row = rows[std::size_t(k)];
      const auto first_dropped = std::partition_point(row.begin(), row.end(), [&](double x) { return norm * x >= tau; });
      kept[std::size_t(i)] += first_dropped - row.begin();
    }
  return kept;
}

std::vector<RowBlock> split_rows(const std::vector<int64_t>& kept, int parts) {
  if (parts < 1) throw InvalidInputError("split_rows: " + std::to_string(parts) + " parts (at least 1)");
  int64_t total = 0;
  for (int64_t x : kept) {
    if (x < 0) throw InvalidInputError("split_rows: a row keeps " + std::to_string(x) + " products");
    total += x;
  }
  const int32_t rows = int32_t(kept.size());
  std::vector<RowBlock> blocks(static_cast<std::size_t>(parts));
  int32_t row = 0;
  int64_t running = 0;
  for (int p = 0; p < parts; ++p) {
    RowBlock& block = blocks[std::size_t(p)];
    block.first = row;
    if (p == parts - 1) {
      row = rows;
    } else if (total == 0) {
      row = int32_t(int64_t(rows) * (p + 1) / parts);  // nothing kept: even rows
    } else {
      const double target = double(total) * (p + 1) / parts;
      // Take rows while the running sum gets nearer the target.
      while (row < rows && std::abs(double(running + kept[std::size_t(row)]) - target) <= std::abs(double(running) - target))
        running += kept[std::size_t(row++)];
    }
    block.end = row;
    block.kept = 0;
    for (int32_t r = block.first; r < block.end; ++r) block.kept += kept[std::size_t(r)];
  }
  return blocks;
}

double imbalance(const std::vector<RowBlock>& blocks) {
  int64_t total = 0, most = 0;
  for (const RowBlock& b : blocks) {
    total += b.kept;
    most = std::max(most, b.kept);
  }
  return total == 0 ? 1.0 : double(most) * double(blocks.size()) / double(total);
}

}  // namespace sparsejit::plan
