// How spgemm_numeric recomputes C's values for patterns it has multiplied before (the
// two-phase form): by positions (each product's place in C found once, kept on C's handle;
// then every call only gathers, multiplies and adds) when they fit the device's memory, else
// by the plan's variant run again (its numeric pass over hash tables or cuSPARSE's whole call).
// Three kernels take positions: entries (templates/spgemm_entry_sums.cu, products listed under
// their C entries, 8 bytes a product) below kWarpTaskProducts products, a warp a task
// (templates/spgemm_warp_positions.cu, 2 bytes a product) from there, and blocks sharing a task
// (templates/spgemm_positions.cu, 2 or 4 bytes) where entries do not fit the memory. Where tile
// products are dense (kTimedTileDensity), the first call also builds the numeric phase by tiles
// (bitmap_tc's tile products, ops/spgemm_reuse_tiles.hpp), times it against that kernel and keeps
// the faster. Where no positions fit the memory, the numeric phase by rows
// (ops/spgemm_reuse_rows.hpp: no positions, the products gathered again each call, 4 bytes a
// row kept). Pure: the executor measures the memory and carries it out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "plan/planner.hpp"
#include "sparsejit/options.hpp"
#include "sparsejit/features.hpp"

namespace sparsejit::plan {

// The numeric phase a warp a task (templates/spgemm_warp_positions.cu): each warp its own C
// entries and sums, added without atomics.
struct WarpTaskPlan {
  int warps = 4;               // warps a block (a task each)
  int64_t region_entries = 0;  // C entries a task sums in shared memory, at most 2048
  int64_t task_products = 0;   // products a task takes (rows grouped up to it, longer tasks cut in parts)
  int unroll = 4;              // steps of 32 products a warp has in flight
};

// The numeric phase by entries (templates/spgemm_entry_sums.cu): each warp sums whole entries'
// runs of products in registers, or a part of one long entry.
struct EntrySumsPlan {
  int warps = 4;               // warps a block (a range each)
  // Products a lane sums one after another in a tile, their loads in flight. 4: a warp's
  // index loads are then 512 contiguous bytes, and on the H200 a tile of 128 took 0.7-0.85x
  // the time of 256 (8 a lane) on 1-10 M products, f32 and f64; 2 and 16 were slower
  // (bench/results/2026-12-04-h200-spgemm-entries-per-lane).
  int per_lane = 4;
  int64_t range_products = 0;  // products a warp range takes at most (longer entries cut into parts)
};

// The numeric phase by rows (templates/spgemm_row_sums.cu): Gustavson's product over C's own
// columns, a group of threads a row with the row's table of sums in shared memory. A bin takes
// the rows whose key max(nnz, ceil(products / kRowSlotProducts)) is at most its limit and above
// the previous bin's; the last bin also takes rows past its key but not its limit in C
// entries. Rows of more entries than the last limit do not fit any table.
struct RowSumsBin {
  int limit = 0;          // a row's C entries (and key) at most; its table has 2 x limit slots
  int group_threads = 0;  // threads a row
  int block_threads = 0;
};
struct RowSumsPlan {
  std::vector<RowSumsBin> bins;  // ascending limits
};
// Products a table slot is given in a row's key: a row's work as well as its entries picks its
// bin.
constexpr int64_t kRowSlotProducts = 4;
// Products a thread loads before adding them (their loads in flight at once).
constexpr int kRowBatch = 4;
// Dynamic shared memory of one block of a bin (the layout of templates/spgemm_row_sums.cu).
int64_t row_sums_shared_bytes(const RowSumsBin& bin, DType dtype);
// The bins whose blocks fit the device's shared memory for this value type.
RowSumsPlan plan_row_sums(DType dtype, const DeviceTarget& device);

struct SpgemmReusePlan {
  bool by_positions = false;  // a kernel keeps what it needs on C (positions, tiles or rows): else the variant again
  std::string why;         // the reason, for the call's info
  std::string note;        // added to the built kernel's description: why rows, where no positions fit
  // Which kernel (never Auto here): entries below kWarpTaskProducts (one launch, no atomics:
  // what small products, bound by latency and the launch, need), a warp a task from there (2
  // bytes a product where entries would take 8: the most products a second), blocks sharing a
  // task where the entries' bytes do not fit; or Options::positions_kernel's.
  PositionsKernel kernel = PositionsKernel::Entries;
  // A warp a task chosen by the plan, up to kTimedPositionsProducts, where the blocks' kernel
  // fits beside it: the first call builds both, times each and keeps the faster (the warps'
  // adds need no atomics, but on some patterns the blocks' still win: cyl6, 0.82x, H200).
  bool time_against_blocks = false;
  // Entries chosen by the plan from kTimedEntriesProducts, where a warp a task fits beside
  // them: the first call builds both, times each and keeps the faster (in f64 the warps won
  // 1.3-1.6x on meshes and a graph of 4.5-5.1 M products and lost 1.5x on rajat01's 5.4 M,
  // whose products rarely share an entry).
  bool time_against_warps = false;
  // Tiles built beside that kernel on the first call, both timed and the faster kept (never
  // with a forced kernel): where a tile product holds kTimedTileDensity products or more and
  // both fit.
  bool time_against_tiles = false;
  EntrySumsPlan entries;
  RowSumsPlan rows;        // the kernel by rows: forced, or where no positions fit (unless another is forced)
  WarpTaskPlan warp;
  int group_lanes = 32;    // lanes per entry of A: B's rows are this long on average, or longer
  int block_threads = 256;
  int64_t task_products = 0;   // products a block takes (rows grouped up to it, longer rows cut)
  int64_t shared_entries = 0;  // C entries a block sums in shared memory
  int wide_block_threads = 1024;
  int64_t wide_entries = 0;    // the same for the blocks of wider rows (the most shared memory)
  int64_t bytes = 0;           // device bytes the positions and tasks take, at most
  // Device scratch the first call's builds take besides (formats/*_gpu.cu), freed when they
  // end; with the timed choice, the larger of the two builds'. A warp a task's cells (an entry
  // of A in a slice of a wide row) are not known before the build, which checks them itself.
  int64_t build_bytes = 0;
};

// The products from which the numeric phase takes a warp a task (below: entries).
constexpr int64_t kWarpTaskProducts = 8'000'000;
// The most products for which the first call also builds and times the blocks' kernel: beyond,
// the two kernels' positions take more than 800 MB together, and on the matrices measured above
// 100 M products the warps won every time (bench/results/2026-12-02-h200-spgemm-entries).
constexpr int64_t kTimedPositionsProducts = 200'000'000;
// The products from which entries are timed against a warp a task on the first call: below,
// entries won on every input measured (H200, f32 and f64, up to 2.7 M products:
// bench/results/2026-12-03-h200-spgemm-entries-or-warps).
constexpr int64_t kTimedEntriesProducts = 2'000'000;
// The warp kernel's layout as the plan sizes it (formats/spgemm_warp_tasks.hpp holds the same,
// checked where both are seen, ops/spgemm_reuse_warps.cpp): a task's sums at most (its places
// take 11 bits of a position), products a step.
constexpr int64_t kMaxWarpRegionEntries = 2048, kWarpStepProducts = 32;

// The products a tile product holds on average from which the first call also times the
// numeric phase by tiles. Its multiply ran 2.0-2.3 G tile products a second on the H200
// (bench/results/2026-12-03-h200-spgemm-numeric-tiles), the other kernels 190-370 G products:
// the tiles won at 161 products a tile product (cyl6, 1.13-1.23x) and lost at 14-105 (0.25-0.65x),
// so below this the build and the timing would be spent for nothing.
constexpr double kTimedTileDensity = 128;

// What the numeric phase by rows keeps on C, at most: a row list (4 bytes a row of A) and the
// flag its first call checks.
int64_t row_sums_bytes(int64_t rows);

// What the numeric phase by tiles keeps on C (the steps' arrays: about 90 bytes a tile product,
// the packed values, counts per tile of A and row of C) and, in `build`, what its first call
// takes besides (the operands' tiles when their handles lack them, the pattern check's C
// columns and values, CUB's storage), at most.
int64_t tile_sums_bytes(const SpgemmFeatures& features, DType dtype, int64_t& build);

// What positions a warp a task cost beyond the products' 2 bytes, once the work list is built.
struct WarpPositionsSize {
  int64_t products = 0, segments = 0, tasks = 0, steps = 0, scratch_entries = 0, groups = 0;
};
int64_t warp_positions_bytes(const WarpPositionsSize& size, DType dtype);

// What entries cost once their list is cut: 8 bytes a place of the list (a product, or the
// padding that aligns each range: at most 3 a range), 16 a range, a slot's part count, counter
// and sum.
int64_t entry_sums_bytes(int64_t places, int64_t ranges, int64_t slots, DType dtype);
// The scratch of formats/spgemm_entry_products_gpu's build, at most.
int64_t entry_build_bytes(int64_t products, int64_t a_entries, int64_t c_entries);
// The device builds' scratch of a warp a task's and the blocks' work lists (without the cells),
// for A's entries and rows and the tasks' count.
int64_t warp_build_bytes(int64_t a_entries, int64_t rows, int64_t tasks);
int64_t blocks_build_bytes(int64_t a_entries, int64_t rows);

// The memory test on the bytes a built work list needs (a warp a task: wide rows cut into
// slices have more segments than entries of A; entries: the ranges): empty when they fit,
// else why not.
std::string positions_do_not_fit(int64_t bytes, std::optional<int64_t> free_bytes, std::optional<int64_t> limit);

// free_bytes: what the device can give now (none: unknown); limit: Options::memory_limit_bytes.
// Positions are taken when their bytes (4 a product at most, 2 where C's rows are narrow
// enough, plus the task list; a warp a task: 2 a product, 8 a step of 32 and 12 an entry of A
// at least; entries: 8 a product and 16 a range) are within half of what is free and within the
// limit: they stay allocated for C's life, so they leave room for the work around them.
// `forced`: Options::positions_kernel (Auto: the plan's own); a forced kernel whose bytes do
// not fit is declined like any other (the variant again), never swapped for another.
SpgemmReusePlan plan_spgemm_reuse(const SpgemmFeatures& features, DType dtype, const DeviceTarget& device,
                                  std::optional<int64_t> free_bytes, std::optional<int64_t> limit,
                                  PositionsKernel forced = PositionsKernel::Auto);

}  // namespace sparsejit::plan
