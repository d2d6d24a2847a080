#include "plan/spgemm_reuse.hpp"

#include <algorithm>

#include "formats/spgemm_bitmap_tiles.hpp"

namespace sparsejit {

const char* to_string(PositionsKernel kernel) {
  switch (kernel) {
    case PositionsKernel::Entries: return "entries";
    case PositionsKernel::Warps: return "warps";
    case PositionsKernel::Blocks: return "blocks";
    case PositionsKernel::Tiles: return "tiles";
    case PositionsKernel::Rows: return "rows";
    case PositionsKernel::Auto: break;
  }
  return "auto";
}

}  // namespace sparsejit

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

// A warp a task: 4 KiB of sums a warp (f32: 1024 entries, f64: 512) keeps 10 blocks of 4
// warps resident per multiprocessor (at 48 registers a thread) while a row of up to that many
// C entries is one task.
constexpr int64_t kWarpRegionBytes = 4 * 1024;
// Tasks per multiprocessor: about one for each warp it holds at once (shorter tasks clear,
// store and stage more per product), within these bounds.
constexpr int64_t kWarpTasksPerMultiprocessor = 40;
constexpr int64_t kMinWarpTaskProducts = 256, kMaxWarpTaskProducts = 8192;
// A position, a segment (three ints), a task (eight ints), a step's schedule (two), a group's
// counter and first sum.
constexpr int64_t kWarpPositionBytes = 2, kSegmentBytes = 12, kWarpTaskBytes = 32, kStepBytes = 8, kGroupBytes = 8;

// Entries: warp ranges per multiprocessor (about one for each warp it holds at once, so the
// small products that take entries still fill the device), within these bounds.
constexpr int64_t kEntryRangesPerMultiprocessor = 48;
constexpr int64_t kMinRangeProducts = 64, kMaxRangeProducts = 4096;
// Two indices a product, a range (int4), a slot's part count and counter (its sum beside).
constexpr int64_t kEntryProductBytes = 8, kEntryRangeBytes = 16, kSlotBytes = 8;
// The most padding places after a unit (formats/spgemm_entry_products.hpp aligns them to 4).
constexpr int64_t kRangePadding = 3;
// The device build's scratch (formats/spgemm_entry_products_gpu.cu): a product's key and
// number, each twice for the sort; an entry's start, unit flag and number, first entry and two
// unit sizes; and CUB's temporary storage.
constexpr int64_t kEntryBuildBytesPerProduct = 16, kEntryBuildBytesPerEntry = 48, kEntryBuildCubBytes = int64_t(32) << 20;
// The warps' build (formats/spgemm_warp_tasks_gpu.cu): four ints an entry of A; six ints, four
// int64 and two 32-byte shares a row; a task's copy, keys, numbers and steps.
constexpr int64_t kWarpBuildBytesPerEntry = 16, kWarpBuildBytesPerRow = 120, kWarpBuildBytesPerTask = 84;
// The blocks' build (formats/spgemm_positions_gpu.cu; product_at is kept): seven ints an entry
// of A; five ints and two 24-byte shares a row.
constexpr int64_t kBlocksBuildBytesPerEntry = 28, kBlocksBuildBytesPerRow = 68;
// Tiles (variants/spgemm/bitmap_passes.hpp's layout): a tile product's key, pair, their sorted
// copies, its tile of C's key, bitmap, run length and start, and that tile's 8 row starts.
constexpr int64_t kTileBytesPerTileProduct = 88;
// Rows: the bins of templates/spgemm_row_sums.cu. A row's key bounds its products by
// kRowSlotProducts x limit, so a thread gets at most 8 products (the last two bins: 16, and
// any number past the key): on the H200, rows of up to 64 products a thread (hash rows'
// shapes) ran long chains of dependent loads, with too few rows to hide them, and a warp a
// row of up to 1024 entries with plain adds was slower still
// (bench/results/2026-12-03-h200-spgemm-numeric-rows). Groups past a warp are whole blocks.
// The last bins only where their blocks' shared memory fits.
constexpr RowSumsBin kRowBins[] = {{16, 8, 256},     {64, 32, 256},      {256, 128, 128},
                                   {1024, 512, 512}, {4096, 1024, 1024}, {8192, 1024, 1024}};
// CUB's temporary storage for those two builds' scans and the warps' sort of its tasks.
constexpr int64_t kListBuildCubBytes = int64_t(1) << 20;

std::string do_not_fit(const std::string& taking, int64_t bytes, std::optional<int64_t> free_bytes, std::optional<int64_t> limit) {
  if (limit && bytes > *limit)
    return "recompute: positions take " + taking + std::to_string(bytes) + " bytes, more than the memory limit of " + std::to_string(*limit);
  if (free_bytes && bytes > *free_bytes / 2)
    return "recompute: positions take " + taking + std::to_string(bytes) + " bytes, more than half of the " + std::to_string(*free_bytes) +
           " free";
  return {};
}

int64_t pow2_at_least(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

}  // namespace

int64_t warp_positions_bytes(const WarpPositionsSize& s, DType dtype) {
  return s.products * kWarpPositionBytes + s.segments * kSegmentBytes + 4 + s.tasks * kWarpTaskBytes + s.steps * kStepBytes +
         s.scratch_entries * int64_t(size_of(dtype)) + kGroupBytes * s.groups;
}

int64_t entry_sums_bytes(int64_t places, int64_t ranges, int64_t slots, DType dtype) {
  return places * kEntryProductBytes + ranges * kEntryRangeBytes + slots * (kSlotBytes + int64_t(size_of(dtype)));
}

int64_t entry_build_bytes(int64_t products, int64_t a_entries, int64_t c_entries) {
  return kEntryBuildBytesPerProduct * products + kEntryBuildBytesPerEntry * (c_entries + 1) + 8 * (a_entries + 1) + kEntryBuildCubBytes;
}

int64_t warp_build_bytes(int64_t a_entries, int64_t rows, int64_t tasks) {
  return kWarpBuildBytesPerEntry * (a_entries + 1) + kWarpBuildBytesPerRow * (rows + 1) + kWarpBuildBytesPerTask * tasks +
         kListBuildCubBytes;
}

int64_t blocks_build_bytes(int64_t a_entries, int64_t rows) {
  return kBlocksBuildBytesPerEntry * (a_entries + 1) + kBlocksBuildBytesPerRow * (rows + 1) + kListBuildCubBytes;
}

int64_t tile_sums_bytes(const SpgemmFeatures& f, DType dtype, int64_t& build) {
  const int64_t value_bytes = int64_t(size_of(dtype)), rows = int64_t(f.a.rows) + 1;
  const int64_t tile_entries = int64_t(formats::kBitmapTileEdge) * formats::kBitmapTileEdge;
  const int64_t c_entries_most = std::min(f.products, tile_entries * f.tile_products);
  build = formats::bitmap_tiles_bytes(f.a.nnz) + formats::bitmap_tiles_bytes(f.b.nnz) + (4 + value_bytes) * c_entries_most +
          4 * rows + kEntryBuildCubBytes;
  return kTileBytesPerTileProduct * f.tile_products + value_bytes * (f.a.nnz + f.b.nnz) + 8 * (f.a_tiles + 1) + 12 * rows;
}

int64_t row_sums_shared_bytes(const RowSumsBin& bin, DType dtype) {
  const int64_t groups = bin.block_threads / bin.group_threads, slots = 2 * int64_t(bin.limit);
  return int64_t(size_of(dtype)) * groups * (slots + bin.group_threads) + 4 * (groups * (slots + 2 * bin.group_threads) + 32);
}

RowSumsPlan plan_row_sums(DType dtype, const DeviceTarget& device) {
  RowSumsPlan p;
  for (const RowSumsBin& bin : kRowBins)
    if (row_sums_shared_bytes(bin, dtype) <= device.shared_per_block_optin) p.bins.push_back(bin);
  return p;
}

int64_t row_sums_bytes(int64_t rows) { return 4 * (rows + 1); }

std::string positions_do_not_fit(int64_t bytes, std::optional<int64_t> free_bytes, std::optional<int64_t> limit) {
  return do_not_fit("", bytes, free_bytes, limit);
}

namespace {

// What the positions take at once while they are built: what C keeps, and the builds' scratch.
int64_t peak_bytes(const SpgemmReusePlan& p) { return p.bytes + p.build_bytes; }

// The blocks' kernel: its tasks and their positions' bytes (at most).
void plan_blocks(SpgemmReusePlan& p, const SpgemmFeatures& f, int64_t value_bytes, const DeviceTarget& device) {
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
  p.build_bytes = blocks_build_bytes(f.a.nnz, f.a.rows);
  p.why = "positions: " + std::to_string(position_bytes) + " bytes a product at most, " + std::to_string(p.bytes) +
          " bytes kept on C";
}

// A warp a task: at least one segment an entry of A and one task a row.
void plan_warps(SpgemmReusePlan& p, const SpgemmFeatures& f, DType dtype, const DeviceTarget& device) {
  p.warp.region_entries = std::min(kMaxWarpRegionEntries, kWarpRegionBytes / int64_t(size_of(dtype)));
  p.warp.task_products = std::clamp<int64_t>(f.products / (kWarpTasksPerMultiprocessor * std::max(device.multiprocessors, 1)),
                                             kMinWarpTaskProducts, kMaxWarpTaskProducts);
  WarpPositionsSize least;
  least.products = f.products;
  least.segments = f.a.nnz;
  least.tasks = std::min<int64_t>(f.a.rows, f.products / p.warp.task_products + 1);
  least.steps = (f.products + kWarpStepProducts - 1) / kWarpStepProducts;
  p.bytes = warp_positions_bytes(least, dtype);
  p.build_bytes = warp_build_bytes(f.a.nnz, f.a.rows, int64_t(f.a.rows) + f.products / p.warp.task_products + 1);
  p.why = "positions: 2 bytes a product, a warp a task, at least " + std::to_string(p.bytes) + " bytes kept on C";
}

// Entries (formats/spgemm_entry_products.hpp's greedy ranges, R = range_products): two ranges
// of whole entries in a row hold more than R products but around a long entry, so with P_s
// products in short entries and P_l in long ones (at most P_l / R of those) there are at most
// 2 P_s / R + P_l / R + 1 such ranges, and at most 2 P_l / R parts: 3 P / R + 1 ranges, 2 P / R + 1
// units (a range of whole entries or a long entry, each padded by at most 3 places), P / R slots.
void plan_entries(SpgemmReusePlan& p, const SpgemmFeatures& f, DType dtype, const DeviceTarget& device) {
  const int64_t range_products =
      std::clamp<int64_t>(f.products / (kEntryRangesPerMultiprocessor * std::max(device.multiprocessors, 1)), kMinRangeProducts,
                          kMaxRangeProducts);
  p.entries.range_products = range_products;
  const int64_t blocks = f.products / range_products;
  p.bytes = entry_sums_bytes(f.products + kRangePadding * (2 * blocks + 1), 3 * blocks + 1, blocks, dtype);
  p.build_bytes = entry_build_bytes(f.products, f.a.nnz, f.products);  // C has at most an entry a product
  p.why = "positions: entries, 8 bytes a product, at most " + std::to_string(p.bytes) + " bytes kept on C and " +
          std::to_string(p.build_bytes) + " more while they are built";
}

// The blocks' fields beside a warp a task's, for the first call to time both where both fit
// (the plan's bytes and reason stay the warps').
void plan_timing_against_blocks(SpgemmReusePlan& p, const SpgemmFeatures& f, int64_t value_bytes, const DeviceTarget& device,
                                std::optional<int64_t> free_bytes, std::optional<int64_t> limit) {
  const int64_t warps_bytes = p.bytes, warps_build = p.build_bytes;
  const std::string warps_why = p.why;
  plan_blocks(p, f, value_bytes, device);
  const int64_t build = std::max(warps_build, p.build_bytes);  // one build after the other
  p.time_against_blocks = do_not_fit("", warps_bytes + p.bytes + build, free_bytes, limit).empty();
  p.bytes = warps_bytes;
  p.build_bytes = p.time_against_blocks ? build : warps_build;
  p.why = warps_why;
}

// A warp a task beside entries, for the first call to time both where both fit (the plan's
// bytes and reason stay the entries').
void plan_timing_against_warps(SpgemmReusePlan& p, const SpgemmFeatures& f, DType dtype, const DeviceTarget& device,
                               std::optional<int64_t> free_bytes, std::optional<int64_t> limit) {
  if (f.products < kTimedEntriesProducts) return;
  SpgemmReusePlan warps = p;
  plan_warps(warps, f, dtype, device);
  const int64_t build = std::max(p.build_bytes, warps.build_bytes);  // one build after the other
  p.time_against_warps = do_not_fit("", p.bytes + warps.bytes + build, free_bytes, limit).empty();
  if (!p.time_against_warps) return;
  p.warp = warps.warp;
  p.build_bytes = build;
}

// Tiles: bitmap_tc's pattern steps kept, its packing and multiply passes each call.
void plan_tiles(SpgemmReusePlan& p, const SpgemmFeatures& f, DType dtype) {
  p.bytes = tile_sums_bytes(f, dtype, p.build_bytes);
  p.why = "tiles: " + std::to_string(f.tile_products) + " tile products, at most " + std::to_string(p.bytes) + " bytes kept on C";
}

// Tiles beside the plan's kernel where tile products are dense, tensor cores are there (sm_80:
// bitmap_tc's mma) and both fit (the plan's bytes and reason stay its kernel's).
void plan_timing_against_tiles(SpgemmReusePlan& p, const SpgemmFeatures& f, DType dtype, const DeviceTarget& device,
                               std::optional<int64_t> free_bytes, std::optional<int64_t> limit) {
  const bool dense = f.tile_products > 0 && double(f.products) >= kTimedTileDensity * double(f.tile_products);
  if (!dense || device.sm < 80) return;
  int64_t tiles_build = 0;
  const int64_t tiles = tile_sums_bytes(f, dtype, tiles_build);
  p.time_against_tiles = do_not_fit("", peak_bytes(p) + tiles + tiles_build, free_bytes, limit).empty();
  if (p.time_against_tiles) p.build_bytes += tiles + tiles_build;
}

// Rows: their bins and row list.
void plan_rows(SpgemmReusePlan& p, const SpgemmFeatures& f, DType dtype, const DeviceTarget& device) {
  p.rows = plan_row_sums(dtype, device);
  p.bytes = row_sums_bytes(f.a.rows);
  p.build_bytes = 0;  // binned on the host
  p.why = "rows: C's rows binned in tables of up to " + std::to_string(p.rows.bins.back().limit) + " entries, " +
          std::to_string(p.bytes) + " bytes kept on C";
}

}  // namespace

SpgemmReusePlan plan_spgemm_reuse(const SpgemmFeatures& f, DType dtype, const DeviceTarget& device,
                                  std::optional<int64_t> free_bytes, std::optional<int64_t> limit, PositionsKernel forced) {
  SpgemmReusePlan p;
  const int64_t value_bytes = int64_t(size_of(dtype));
  p.kernel = forced != PositionsKernel::Auto      ? forced
             : f.products >= kWarpTaskProducts ? PositionsKernel::Warps
                                               : PositionsKernel::Entries;
  if (p.kernel == PositionsKernel::Entries) {
    plan_entries(p, f, dtype, device);
    // Where entries' 8 bytes a product do not fit, the blocks' 2 or 4 may (unless forced).
    if (forced == PositionsKernel::Auto && !do_not_fit("", peak_bytes(p), free_bytes, limit).empty()) p.kernel = PositionsKernel::Blocks;
    else if (forced == PositionsKernel::Auto) plan_timing_against_warps(p, f, dtype, device, free_bytes, limit);
  }
  if (p.kernel == PositionsKernel::Warps) {
    plan_warps(p, f, dtype, device);
    if (forced == PositionsKernel::Auto && f.products <= kTimedPositionsProducts)
      plan_timing_against_blocks(p, f, value_bytes, device, free_bytes, limit);
  }
  if (p.kernel == PositionsKernel::Blocks) plan_blocks(p, f, value_bytes, device);
  if (p.kernel == PositionsKernel::Tiles) plan_tiles(p, f, dtype);
  if (p.kernel == PositionsKernel::Rows) plan_rows(p, f, dtype, device);
  if (forced == PositionsKernel::Auto) plan_timing_against_tiles(p, f, dtype, device, free_bytes, limit);
  const char* taking = p.kernel == PositionsKernel::Warps ? "at least " : p.kernel == PositionsKernel::Blocks ? "up to " : "at most ";
  const std::string refused = do_not_fit(taking, peak_bytes(p), free_bytes, limit);
  p.by_positions = refused.empty();
  if (!p.by_positions) p.why = refused;
  if (!p.by_positions && forced == PositionsKernel::Auto) {
    // Where no positions fit, rows may: 4 bytes a row.
    SpgemmReusePlan rows;
    rows.kernel = PositionsKernel::Rows;
    plan_rows(rows, f, dtype, device);
    if (do_not_fit("", peak_bytes(rows), free_bytes, limit).empty()) {
      rows.by_positions = true;
      rows.note = " (" + refused.substr(std::string("recompute: ").size()) + ")";
      rows.why += rows.note;
      return rows;
    }
  }
  if (p.kernel == PositionsKernel::Tiles && device.sm < 80) {
    p.by_positions = false;
    p.why = "recompute: tiles need tensor cores with f64 and TF32 mma (sm_80 or later); the device is sm_" + std::to_string(device.sm);
  }
  return p;
}

}  // namespace sparsejit::plan
