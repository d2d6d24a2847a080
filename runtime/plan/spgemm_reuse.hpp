// How spgemm_numeric recomputes C's values for patterns it has multiplied before (the
// two-phase form): by positions (templates/spgemm_positions.cu: each product's place in C found
// once, kept on C's handle; then every call only gathers, multiplies and adds) when they fit
// the device's memory, else by the plan's variant run again (its numeric pass over hash tables
// or cuSPARSE's whole call). Pure: the executor measures the memory and carries it out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "plan/planner.hpp"
#include "sparsejit/features.hpp"

namespace sparsejit::plan {

struct SpgemmReusePlan {
  bool by_positions = false;
  std::string why;         // the reason, for the call's info
  int group_lanes = 32;    // lanes per entry of A: B's rows are this long on average, or longer
  int block_threads = 256;
  int64_t task_products = 0;   // products a block takes (rows grouped up to it, longer rows cut)
  int64_t shared_entries = 0;  // C entries a block sums in shared memory
  int wide_block_threads = 1024;
  int64_t wide_entries = 0;    // the same for the blocks of wider rows (the most shared memory)
  int64_t bytes = 0;           // device bytes the positions and tasks take, at most
};

// free_bytes: what the device can give now (none: unknown); limit: Options::memory_limit_bytes.
// Positions are taken when their bytes (4 a product at most, 2 where C's rows are narrow
// enough, plus the task list) are within half of what is free and within the limit: they stay
// allocated for C's life, so they leave room for the work around them.
SpgemmReusePlan plan_spgemm_reuse(const SpgemmFeatures& features, DType dtype, const DeviceTarget& device,
                                  std::optional<int64_t> free_bytes, std::optional<int64_t> limit);

}  // namespace sparsejit::plan
