#include "plan/spgemm_reuse.hpp"

#include <algorithm>

namespace sparsejit::plan {

namespace {

// The shared accumulator of a block: 32 KiB keeps seven 256-thread blocks resident per
// multiprocessor (f32: 8192 entries, f64: 4096), so a task's clearing and storing of C overlaps
// other blocks' products.
constexpr int64_t kSharedBytes = 32 * 1024;
// Tasks per multiprocessor the product is cut into at least (shorter tasks balance better,
// longer ones clear and store fewer shared entries per product), within these bounds.
constexpr int64_t kTasksPerMultiprocessor = 16;
constexpr int64_t kMinTaskProducts = 1024, kMaxTaskProducts = 16384;
// Wider rows of C get blocks of this many threads with the shared memory a block can have,
// less the staged entries (template: block_threads x (8 + acc bytes) + 4), in multiples of 1024.
constexpr int kWideBlockThreads = 1024;
// Positions are relative to a task's first C entry: 16 bits hold a task of up to this many.
constexpr int64_t kNarrowEntries = 65536;

int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace

SpgemmReusePlan plan_spgemm_reuse(const SpgemmFeatures& f, DType dtype, const DeviceTarget& device,
                                  std::optional<int64_t> free_bytes, std::optional<int64_t> limit) {
  SpgemmReusePlan p;
  const int64_t value_bytes = int64_t(size_of(dtype));
  p.shared_entries = kSharedBytes / value_bytes;
  p.wide_block_threads = kWideBlockThreads;
  const int64_t staged = int64_t(kWideBlockThreads) * (8 + value_bytes) + 4;
  p.wide_entries = std::max(p.shared_entries, (device.shared_per_block_optin - staged) / value_bytes / 1024 * 1024);
  const int64_t nnz_a = std::max<int64_t>(f.a.nnz, 1);
  p.group_lanes = int(std::clamp<int64_t>(pow2_at_least((f.products + nnz_a - 1) / nnz_a), 4, 32));
  p.task_products = std::clamp<int64_t>(f.products / (kTasksPerMultiprocessor * std::max(device.multiprocessors, 1)),
                                        kMinTaskProducts, kMaxTaskProducts);
  // A row is cut into runs of whole entries of A, so a task holds at most 2 x task_products
  // products or one entry's; tasks number at most the rows plus the products over a run.
  const int64_t position_bytes = f.max_row_products > kNarrowEntries ? 4 : 2;
  const int64_t tasks = int64_t(f.a.rows) + f.products / p.task_products + 1;
  p.bytes = f.products * position_bytes + 4 * (f.a.nnz + 1) + 32 * tasks + 8 * int64_t(f.a.rows);
  if (limit && p.bytes > *limit) {
    p.why = "recompute: positions take up to " + std::to_string(p.bytes) + " bytes, more than the memory limit of " +
            std::to_string(*limit);
  } else if (free_bytes && p.bytes > *free_bytes / 2) {
    p.why = "recompute: positions take up to " + std::to_string(p.bytes) + " bytes, more than half of the " +
            std::to_string(*free_bytes) + " free";
  } else {
    p.by_positions = true;
    p.why = "positions: " + std::to_string(position_bytes) + " bytes a product at most, " + std::to_string(p.bytes) +
            " bytes kept on C";
  }
  return p;
}

}  // namespace sparsejit::plan
