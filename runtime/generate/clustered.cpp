// Clustered sparse matrix: a controlled share of every row sits in dense column runs shared by
// a group of consecutive rows, the rest is uniform.
#include <algorithm>
#include <cmath>

#include "generate/rows.hpp"
#include "sparsejit/generate.hpp"

namespace sparsejit::generate {
namespace {

struct ClusterLayout {
  int32_t clustered_per_row;  // F: nonzeros per row inside the runs
  int32_t runs_per_group;     // ceil(F / run_length)
  int32_t run_slots;          // cols / run_length aligned places a run can take
};

ClusterLayout plan_clusters(int32_t rows, int32_t cols, int32_t nnz_per_row, double fraction, int32_t run_length,
                            int32_t group_rows) {
  const char* name = "clustered";
  detail::require_non_negative(rows, name, "rows");
  detail::require_non_negative(cols, name, "cols");
  detail::require_non_negative(nnz_per_row, name, "nnz_per_row");
  detail::require(nnz_per_row <= cols, name,
                  "nnz_per_row " + std::to_string(nnz_per_row) + " exceeds cols " + std::to_string(cols));
  detail::require(fraction >= 0.0 && fraction <= 1.0, name,
                  "clustered fraction " + std::to_string(fraction) + " outside [0, 1]");
  detail::require(run_length >= 1, name, "run length " + std::to_string(run_length) + " must be at least 1");
  detail::require(group_rows >= 1, name, "group of " + std::to_string(group_rows) + " rows must hold at least 1");
  detail::require_nnz_fits(rows, nnz_per_row, name);
  ClusterLayout layout;
  layout.clustered_per_row = int32_t(std::llround(fraction * nnz_per_row));
  layout.runs_per_group = (layout.clustered_per_row + run_length - 1) / run_length;
  layout.run_slots = cols / run_length;
  detail::require(layout.runs_per_group <= layout.run_slots, name,
                  std::to_string(layout.clustered_per_row) + " clustered nonzeros per row need " +
                      std::to_string(layout.runs_per_group) + " runs of " + std::to_string(run_length) +
                      " columns, but only " + std::to_string(layout.run_slots) + " fit in " + std::to_string(cols) +
                      " columns");
  const int64_t outside_runs = int64_t(cols) - int64_t(layout.runs_per_group) * run_length;
  detail::require(nnz_per_row - layout.clustered_per_row <= outside_runs, name,
                  std::to_string(nnz_per_row - layout.clustered_per_row) + " uniform nonzeros per row exceed the " +
                      std::to_string(outside_runs) + " columns outside the runs");
  return layout;
}

}  // namespace

Csr<double> clustered(int32_t rows, int32_t cols, int32_t nnz_per_row, double clustered_fraction, int32_t run_length,
                      uint64_t seed, int32_t group_rows) {
  const ClusterLayout layout = plan_clusters(rows, cols, nnz_per_row, clustered_fraction, run_length, group_rows);
  return detail::build_rows("clustered", rows, cols, seed, nnz_per_row,
                            [&](int32_t row, detail::Rng& rng, std::vector<int32_t>& out) {
    // The group's runs come from the group's own stream, so every row of the group agrees.
    detail::Rng group_rng(seed, detail::Stream::Group, uint64_t(row / group_rows));
    std::vector<int32_t> slots;
    detail::draw_distinct(group_rng, layout.run_slots, layout.runs_per_group, slots);
    std::vector<detail::ColumnRun> runs;
    for (int32_t slot : slots) runs.push_back({slot * run_length, run_length});

    const std::size_t start = out.size();
    detail::draw_distinct_outside(rng, cols, runs, nnz_per_row - layout.clustered_per_row, out);
    int32_t placed = 0;
    for (const detail::ColumnRun& run : runs)
      for (int32_t c = run.begin; c < run.begin + run.length && placed < layout.clustered_per_row; ++c, ++placed)
        out.push_back(c);
    std::sort(out.begin() + std::ptrdiff_t(start), out.end());
  });
}

}  // namespace sparsejit::generate
