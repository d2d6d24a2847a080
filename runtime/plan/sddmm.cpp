// SDDMM planner: P = S ∘ (A·Bᵀ). Candidates (the GPU-Dynamic paper's variants, two of ours, the vendor):
//   coo_flat         GPU-Convert: one pass over the nonzeros, rows of A and B gathered per nonzero
//   row_gather       a lane group per row chunk: A's row loaded once, the chunk's B rows gathered
//                    (formats/sddmm_row_chunks.hpp)
//   panel_gather     row_gather's chunks cut by row band x column panel, one block per tile, so
//                    a panel's B rows are gathered from L1 by the whole band
//                    (formats/sddmm_panel_chunks.hpp)
//   dense_tile       dense-ish S: each non-empty Ti x Tj tile computed like a GEMM in registers,
//                    only S's entries written (formats/sddmm_dense_tiles.hpp)
//   dense_mma        dense_tile's tiles on tensor cores: f32 by the 3xTF32 split (mma.sync, sm_80+)
//   dense_wgmma      the same on sm_90's warpgroup instructions (wgmma, sm_90a only)
//   tiled_shared     GPU-Shared: S cut in Ti x Tj tiles, each tile's B rows staged in shared memory
//   reindexed_tiled  GPU-Preprocessing: like tiled_shared, tiles over each panel's used columns
//                    only; admitted only for reused patterns (Options::reuse, pattern_seen)
//   cusparse         cuSPARSE SDDMM (sampled dots) and a scale kernel
// Order of precedence: a forced choice; else the model's decision tree picks the variant (the
// shipped models/sddmm.json, or a tuned model passed in); the model's launch defaults give its
// parameters. Every candidate is priced with the model's cost formulas for the Decision, and when
// the tree's leaf cannot run the problem the cheapest eligible candidate is taken instead.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <set>

#include "formats/sddmm_dense_tiles.hpp"
#include "formats/sddmm_tiles.hpp"
#include "models/decision_tree.hpp"
#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "plan/tuned.hpp"

namespace sparsejit::plan {

namespace {

using nlohmann::json;

bool tiled(const std::string& variant) { return variant == "tiled_shared" || variant == "reindexed_tiled"; }

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

int64_t pow2_at_least(int64_t value) {
  int64_t p = 1;
  while (p < value) p *= 2;
  return p;
}

bool is_pow2(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

// Widest 16-byte-or-less vector that divides K and both leading dimensions, so every row of
// A and B starts aligned (device allocations are 256-byte aligned).
int vector_width(const SddmmProblem& p) {
  const int widest = p.dtype == DType::F64 ? 2 : 4;
  for (int w = widest; w > 1; w /= 2)
    if (p.k % w == 0 && p.lda % w == 0 && p.ldb % w == 0) return w;
  return 1;
}

// coo_flat: threads that share one nonzero's dot product: enough to cover K in one vector
// step, between 4 and 32 (a power of two, so the shuffle reduction is a tree).
int coo_group_size(const SddmmProblem& p, int width) {
  const int steps = (p.k + width - 1) / width;
  int g = 4;
  while (g < 32 && g < steps) g *= 2;
  return g;
}

int64_t pow2_at_most(int64_t value) {
  int64_t p = 1;
  while (p * 2 <= value) p *= 2;
  return p;
}

// row_gather: A vectors each lane holds (K over group_size lanes of vector_width elements).
int64_t row_lane_vectors(int64_t k, int64_t width, int64_t group) { return (k + width * group - 1) / (width * group); }

// Beyond this many A vectors per lane the row no longer fits registers: row_gather declines.
constexpr int64_t kMaxLaneVectors = 16;
// B vectors a lane keeps in flight (unroll * lane_vectors) in the default unroll.
constexpr int64_t kRowLoadsInFlight = 16;
// panel_gather: B vectors a lane keeps in flight at most (its gathers mostly hit L1).
constexpr int64_t kPanelLoadsInFlight = 32;
// panel_gather is proposed only where its tiles give every SM this many blocks and a row has
// this many nonzeros in a panel on average: its blocks walk their chunks one group per chunk,
// so a few tiles or short chunks leave it latency-bound (measured 2-6x slower than row_gather
// on 512-row layers, 72 tiles, and on 1% rows, H200), while with both it beats row_gather's L2
// gathers (4096² at 10%: 1.09x at K = 64 with 256 tiles, 1.45x at K = 128 with 512).
constexpr double kPanelBlocksPerSm = 1.5;
constexpr double kMinPanelRun = 8.0;
// The tuner measures dense_tile only above this tile fill (64 x 64 tiles).
constexpr double kDenseTileSearchFill = 0.01;
// dense_tile's format grows with the tiles, not the nonzeros: past this estimate it declines.
constexpr double kMaxDenseTileFormatBytes = 1024.0 * 1024 * 1024;

// A launch default of `variant` from the model, else from the shipped model (always complete).
json launch_value(const json& model, const std::string& variant, const std::string& key) {
  if (model.contains("launch") && model["launch"].contains(variant) && model["launch"][variant].contains(key))
    return model["launch"][variant][key];
  return models::shipped_model("sddmm").at("launch").at(variant).at(key);
}

// Panel height so that a Ti x Tj tile holds about `target` nonzeros at the matrix's density:
// thin panels starve the staged B rows of reuse, tall ones only add rows (rows are free: each
// nonzero reads its A row once per row change either way). Never taller than the matrix.
int64_t default_tile_rows(const Features& f, int64_t tile_cols, const json& model, const std::string& variant) {
  const double target = launch_value(model, variant, "tile_nnz_target").get<double>();
  const int64_t lo = launch_value(model, variant, "min_tile_rows").get<int64_t>();
  const int64_t hi = launch_value(model, variant, "max_tile_rows").get<int64_t>();
  const double per_row = std::max(f.basic.density, 1e-12) * double(tile_cols);
  const double wanted = std::min(target / per_row, double(hi));
  int64_t rows = std::clamp(pow2_at_least(int64_t(std::ceil(wanted))), lo, hi);
  rows = std::min(rows, pow2_at_least(std::max<int64_t>(f.basic.rows, 1)));
  return std::clamp<int64_t>(rows, 1, int64_t(formats::kMaxTileEdge));
}

json tiled_defaults(const Features& f, const SddmmProblem& p, const json& model, const std::string& variant) {
  const int width = vector_width(p);
  const int64_t tile_cols = launch_value(model, variant, "tile_cols").get<int64_t>();
  const int64_t units = (p.k + width - 1) / width;  // vectors covering K
  const int64_t group = std::min(launch_value(model, variant, "group_size").get<int64_t>(), pow2_at_least(units));
  const int64_t slice = round_up(std::min<int64_t>(launch_value(model, variant, "slice").get<int64_t>(), p.k), width * group);
  return {{"tile_rows", default_tile_rows(f, tile_cols, model, variant)},
          {"tile_cols", tile_cols},
          {"slice", slice},
          {"group_size", group},
          {"combine", launch_value(model, variant, "combine")},
          {"batch", launch_value(model, variant, "batch")},
          {"threads_per_block", launch_value(model, variant, "threads_per_block")},
          {"vector_width", width}};
}

// What row_gather and panel_gather share for a lane group of `group`: as many nonzeros in flight
// as keeps unroll * lane_vectors B vectors per lane at about `loads_in_flight` (at most the
// model's unroll), and the model's max_nnz and block size for `variant`.
json gather_defaults(const SddmmProblem& p, const json& model, const std::string& variant, int64_t group,
                     int64_t loads_in_flight) {
  const int64_t width = vector_width(p);
  const int64_t lane_vectors = row_lane_vectors(p.k, width, group);
  const int64_t unroll = std::min({group, launch_value(model, variant, "unroll").get<int64_t>(),
                                   pow2_at_most(std::max<int64_t>(1, loads_in_flight / lane_vectors))});
  return {{"vector_width", width}, {"group_size", group}, {"unroll", unroll},
          {"max_nnz", launch_value(model, variant, "max_nnz")},
          {"threads_per_block", launch_value(model, variant, "threads_per_block")}};
}

// row_gather: the fewest lanes (4 to 32) whose vectors cover K in one pass, about
// kRowLoadsInFlight B vectors in flight per lane.
json row_gather_defaults(const SddmmProblem& p, const json& model) {
  const int64_t units = (p.k + vector_width(p) - 1) / vector_width(p);
  return gather_defaults(p, model, "row_gather", std::clamp<int64_t>(pow2_at_least(units), 4, 32), kRowLoadsInFlight);
}

// Expected count of occupied cells when `items` land uniformly in `cells` cells.
double occupied(double items, double cells) { return cells <= 0 ? 0 : cells * (1.0 - std::exp(-items / cells)); }

// panel_gather's column panel: the widest power of two whose B rows take at most the model's
// panel_bytes (256 KB: about the L1 of the SM that its one 512-thread block holds), 64 to 4096
// columns, never wider than S.
int64_t panel_cols_for(const Features& f, const SddmmProblem& p, const json& model) {
  const double row_bytes = double(p.k) * double(size_of(p.dtype));
  const double wanted = launch_value(model, "panel_gather", "panel_bytes").get<double>() / row_bytes;
  const int64_t cols = std::clamp<int64_t>(pow2_at_most(std::max<int64_t>(1, int64_t(wanted))), 64, 4096);
  return std::min(cols, pow2_at_least(std::max<int64_t>(f.basic.cols, 1)));
}

// Expected non-empty band_rows x panel_cols tiles (nonzeros spread uniformly).
double panel_tiles_estimate(const Features& f, double band_rows, double panel_cols) {
  const double bands = std::ceil(double(f.basic.rows) / band_rows), panels = std::ceil(double(f.basic.cols) / panel_cols);
  return occupied(double(f.basic.nnz), bands * panels);
}

std::string one_decimal(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// Why panel_gather with these parameters is not proposed for S (see kMinPanelRun), or "".
std::string panel_decline(const Features& f, const json& params, int multiprocessors) {
  const double band = params.at("band_rows").get<double>(), panel = params.at("panel_cols").get<double>();
  const double tiles = panel_tiles_estimate(f, band, panel);
  if (tiles < kPanelBlocksPerSm * multiprocessors)
    return "about " + std::to_string(int64_t(tiles)) + " tiles of " + params.at("band_rows").dump() + " x " +
           params.at("panel_cols").dump() + ", too few for " + std::to_string(multiprocessors) + " SMs";
  const double run = double(f.basic.nnz) / std::max(1.0, double(f.basic.rows)) * std::min(1.0, panel / std::max(1.0, double(f.basic.cols)));
  if (run < kMinPanelRun)
    return "about " + one_decimal(run) + " nonzeros per row in a panel of " + params.at("panel_cols").dump() +
           " columns, fewer than " + std::to_string(int64_t(kMinPanelRun));
  return "";
}

// row_gather's lane group (from the model's panel_gather group size, widened until A's row fits
// kMaxLaneVectors vectors per lane), unroll up to kPanelLoadsInFlight B vectors per lane, the
// panel for L1 and the model's band.
json panel_gather_defaults(const Features& f, const SddmmProblem& p, const json& model) {
  const int64_t width = vector_width(p);
  const int64_t units = (p.k + width - 1) / width;
  int64_t group = std::clamp<int64_t>(launch_value(model, "panel_gather", "group_size").get<int64_t>(), 4,
                                      std::clamp<int64_t>(pow2_at_least(units), 4, 32));
  while (group < 32 && row_lane_vectors(p.k, width, group) > kMaxLaneVectors) group *= 2;
  json params = gather_defaults(p, model, "panel_gather", group, kPanelLoadsInFlight);
  params["band_rows"] = launch_value(model, "panel_gather", "band_rows");
  params["panel_cols"] = panel_cols_for(f, p, model);
  return params;
}

// Non-empty ti x tj tiles: the problem's exact count when it has one, else estimated from the
// inspected bitmap tiles (features.tiles) spread uniformly over the ti x tj grid.
double dense_tiles_estimate(const Features& f, const SddmmProblem& p, double ti, double tj) {
  if (p.dense_tile_count) return double(p.dense_tile_count(int32_t(ti), int32_t(tj)));
  const double cells = std::ceil(double(f.basic.rows) / ti) * std::ceil(double(f.basic.cols) / tj);
  const double items = f.tiles.tiles > 0 ? double(f.tiles.tiles) : double(f.basic.nnz);
  return std::max(occupied(items, cells), f.basic.nnz > 0 ? 1.0 : 0.0);
}

// Elements of a 16-byte run, dense_tile's shared-memory read unit.
int64_t run_elements(DType dtype) { return 16 / int64_t(size_of(dtype)); }

// dense_tile's slice is a multiple of this: whole copies of `width` and whole 16-byte runs.
int64_t dense_slice_unit(int64_t width, DType dtype) { return std::lcm(width, run_elements(dtype)); }

// dense_mma's slice is whole mma steps.
constexpr int64_t kMmaStep = 8;

// dense_tile and dense_mma: the model's tile and the thread's (micro_rows, micro_cols) or the
// warp's (warp_rows, warp_cols) part, one K slice when K is short (a multiple of `unit`: for
// dense_tile the vector width and a 16-byte run, for dense_mma an mma step), and as many
// slices in flight as the model says, at most all of them.
json dense_defaults(const SddmmProblem& p, const json& model, const std::string& variant, int64_t unit,
                    const std::array<const char*, 2>& part) {
  const int64_t slice = round_up(std::min<int64_t>(launch_value(model, variant, "slice").get<int64_t>(), p.k), unit);
  const int64_t slices = (p.k + slice - 1) / slice;
  return {{"vector_width", vector_width(p)},
          {"tile_rows", launch_value(model, variant, "tile_rows")},
          {"tile_cols", launch_value(model, variant, "tile_cols")},
          {part[0], launch_value(model, variant, part[0])},
          {part[1], launch_value(model, variant, part[1])},
          {"slice", slice},
          {"stages", std::min(slices, launch_value(model, variant, "stages").get<int64_t>())}};
}

// Why dense_mma cannot run a problem of this type on sm, or "".
std::string dense_mma_rejection(const SddmmProblem& p, int sm) {
  if (p.dtype != DType::F32)
    return std::string("value type ") + to_string(p.dtype) + ": the 3xTF32 split serves f32 only";
  if (sm < 80) return "needs TF32 tensor cores (mma.sync, sm_80 or later); the device is sm_" + std::to_string(sm);
  return "";
}

// dense_wgmma's tile widths: the wgmma N of templates/wgmma_tf32.cuh.
constexpr std::array<int64_t, 6> kWgmmaTileCols = {64, 96, 128, 144, 192, 256};
// Its K slice: one 128-byte swizzled row of f32.
constexpr int64_t kWgmmaSlice = 32;
// Per-tile work that does not grow with tile_cols (loading A, the epilogue), in columns.
constexpr double kWgmmaTileOverheadCols = 48;

// Why dense_wgmma cannot run a problem of this type on sm, or "".
std::string dense_wgmma_rejection(const SddmmProblem& p, int sm) {
  if (p.dtype != DType::F32)
    return std::string("value type ") + to_string(p.dtype) + ": the 3xTF32 split serves f32 only";
  if (sm != 90) return "needs wgmma (sm_90a binaries run on sm_90 only); the device is sm_" + std::to_string(sm);
  return "";
}

// dense_wgmma's tile width: the one whose busiest SM has the least work, ceil(tiles / SMs)
// tiles of (tile_cols + overhead) columns each (blocks on one SM share its tensor cores, so
// wave quantization is what decides: on 512 x 4608, 144 gives 256 tiles, one per SM-slot,
// and measured 1.3-1.4x faster than 96 or 128).
int64_t wgmma_tile_cols(const Features& f, const SddmmProblem& p, int64_t tile_rows, const DeviceTarget& device) {
  int64_t best = kWgmmaTileCols[2];
  double best_work = INFINITY;
  for (int64_t cols : kWgmmaTileCols) {
    const double tiles = dense_tiles_estimate(f, p, double(tile_rows), double(cols));
    const double work = std::ceil(tiles / std::max(device.multiprocessors, 1)) * (double(cols) + kWgmmaTileOverheadCols);
    if (work < best_work) {
      best_work = work;
      best = cols;
    }
  }
  return best;
}

json dense_wgmma_defaults(const Features& f, const SddmmProblem& p, const json& model, const DeviceTarget& device,
                          bool choose_width) {
  const int64_t tile_rows = launch_value(model, "dense_wgmma", "tile_rows").get<int64_t>();
  const int64_t slices = (p.k + kWgmmaSlice - 1) / kWgmmaSlice;
  return {{"vector_width", vector_width(p) == 4 ? 4 : 1},
          {"tile_rows", tile_rows},
          {"tile_cols", choose_width ? wgmma_tile_cols(f, p, tile_rows, device) : kWgmmaTileCols[2]},
          {"stages", std::clamp<int64_t>(slices, 2, launch_value(model, "dense_wgmma", "stages").get<int64_t>())}};
}

double dense_tile_format_bytes(double tiles, double ti, double tj) {
  return tiles * (ti * std::ceil(tj / 64) * 8 + ti * 4 + 8);
}

std::vector<VariantSpec> sddmm_candidates(const Features& f, const SddmmProblem& p, const Options& options,
                                          const json& model, const DeviceTarget& device) {
  const int sm = device.sm;
  const bool supported_type = p.dtype == DType::F32 || p.dtype == DType::F64;
  const std::string type_reason = supported_type ? "" : std::string("value type ") + to_string(p.dtype) + " not supported";
  const int width = vector_width(p);
  const int group = coo_group_size(p, width);
  const int64_t per_group = std::min<int64_t>(launch_value(model, "coo_flat", "nnz_per_group").get<int64_t>(), group);
  VariantSpec flat{"coo_flat",
                   {{"vector_width", width}, {"group_size", group}, {"nnz_per_group", per_group},
                    {"threads_per_block", launch_value(model, "coo_flat", "threads_per_block")}},
                   type_reason};
  VariantSpec shared{"tiled_shared", tiled_defaults(f, p, model, "tiled_shared"), type_reason};
  VariantSpec reindexed{"reindexed_tiled", tiled_defaults(f, p, model, "reindexed_tiled"), type_reason};
  if (reindexed.rejected_because.empty() && options.reuse != Reuse::Many && !p.pattern_seen)
    reindexed.rejected_because =
        "builds a per-pattern column reindexing: only for reused patterns (Options::reuse = Reuse::Many, or a handle "
        "that already served an SDDMM call)";
  VariantSpec row{"row_gather", row_gather_defaults(p, model), type_reason};
  if (row.rejected_because.empty() && row_lane_vectors(p.k, vector_width(p), 32) > kMaxLaneVectors)
    row.rejected_because = "k = " + std::to_string(p.k) + " needs more than " + std::to_string(kMaxLaneVectors) +
                           " A vectors of width " + std::to_string(vector_width(p)) + " per lane of 32";
  VariantSpec panel{"panel_gather", panel_gather_defaults(f, p, model), row.rejected_because};
  panel.declined_because = panel_decline(f, panel.default_params, device.multiprocessors);
  // The dense-tile format of the variant's own default tile (counting the tiles reads every
  // nonzero: only for a variant the type already admits).
  const auto format_reason = [&](const std::string& variant) -> std::string {
    const double ti = launch_value(model, variant, "tile_rows").get<double>();
    const double tj = launch_value(model, variant, "tile_cols").get<double>();
    const double bytes = dense_tile_format_bytes(dense_tiles_estimate(f, p, ti, tj), ti, tj);
    if (bytes <= kMaxDenseTileFormatBytes) return "";
    return "its tile format would take about " + std::to_string(int64_t(bytes / (1 << 20))) +
           " MiB (sparse tiles): not worth building";
  };
  VariantSpec dense{"dense_tile",
                    dense_defaults(p, model, "dense_tile", dense_slice_unit(width, p.dtype), {"micro_rows", "micro_cols"}),
                    type_reason.empty() ? format_reason("dense_tile") : type_reason};
  const std::string mma_reason = dense_mma_rejection(p, sm);
  VariantSpec mma{"dense_mma", dense_defaults(p, model, "dense_mma", kMmaStep, {"warp_rows", "warp_cols"}),
                  mma_reason.empty() ? format_reason("dense_mma") : mma_reason};
  // dense_wgmma prices each of its tile widths only where dense tiles are worth counting.
  std::string wgmma_reason = dense_wgmma_rejection(p, sm);
  if (wgmma_reason.empty()) wgmma_reason = format_reason("dense_wgmma");
  const bool wgmma_width = wgmma_reason.empty() && sddmm_tile_fill(f, p, 64, 64) >= kDenseTileSearchFill;
  VariantSpec wgmma{"dense_wgmma", dense_wgmma_defaults(f, p, model, device, wgmma_width), wgmma_reason};
  VariantSpec vendor{"cusparse", json::object(), type_reason};
  return {flat, row, panel, dense, mma, wgmma, shared, reindexed, vendor};
}

// Cost terms of a variant with its parameters. The tiled terms assume uniformly scattered
// nonzeros (clustered patterns occupy fewer tiles, so these are upper bounds).
json sddmm_terms(const Features& f, const SddmmProblem& p, const std::string& variant, const json& params) {
  const double vb = double(size_of(p.dtype));
  const double nnz = double(f.basic.nnz), rows = double(f.basic.rows), cols = double(f.basic.cols), k = double(p.k);
  if (variant == "row_gather") {
    // One A row slice per chunk: about one per row, plus one per max_nnz nonzeros of long rows.
    const double chunks = std::min(nnz, rows - double(f.basic.empty_rows) + nnz / params.at("max_nnz").get<double>());
    return {{"launch", 1.0},
            {"sparse_bytes", nnz * (4.0 + 2.0 * vb) + chunks * 8.0},
            {"gather_bytes", (nnz + chunks) * k * vb}};
  }
  if (variant == "panel_gather") {
    // One chunk per occupied (row, panel), plus the cuts of long runs; per tile the panel's B
    // rows come from L2 once (at most one per nonzero), every product's B row from L1; and a
    // block per tile (on sparse rows many blocks with few products each).
    const double band = params.at("band_rows").get<double>(), panel = params.at("panel_cols").get<double>();
    const double panels = std::ceil(cols / panel);
    const double chunks = std::min(nnz, occupied(nnz, rows * panels) + nnz / params.at("max_nnz").get<double>());
    const double tiles = panel_tiles_estimate(f, band, panel);
    const double l2_rows = tiles * std::min(panel, nnz / std::max(tiles, 1.0)) + chunks;
    return {{"launch", 1.0},
            {"sparse_bytes", nnz * (4.0 + 2.0 * vb) + chunks * 12.0 + tiles * 4.0},
            {"gather_bytes", l2_rows * k * vb},
            {"l1_bytes", nnz * k * vb},
            {"tiles", tiles}};
  }
  if (variant == "dense_tile" || variant == "dense_mma" || variant == "dense_wgmma") {
    const double ti = params.at("tile_rows").get<double>(), tj = params.at("tile_cols").get<double>();
    const double tiles = dense_tiles_estimate(f, p, ti, tj);
    // dense_tile: FP32-equivalent (FP64 runs at half rate); dense_mma and dense_wgmma: f32
    // only, their tensor-core rate (three TF32 products per product) is their own coefficient.
    return {{"launch", 1.0},
            {"sparse_bytes", nnz * 2.0 * vb + dense_tile_format_bytes(tiles, ti, tj)},
            {"tile_bytes", tiles * (ti + tj) * k * vb},
            {"flops", 2.0 * tiles * ti * tj * k * vb / 4.0}};
  }
  if (!tiled(variant))
    return {{"launch", variant == "cusparse" ? 2.0 : 1.0},
            {"sparse_bytes", nnz * (8.0 + 2.0 * vb)},
            {"gather_bytes", 2.0 * nnz * k * vb}};
  const double ti = params.at("tile_rows").get<double>(), tj = params.at("tile_cols").get<double>();
  const double slices = std::ceil(k / params.at("slice").get<double>());
  const double panels = std::ceil(rows / ti);
  double staged_rows = 0, tiles_per_panel = 0;
  if (variant == "tiled_shared") {
    const double tiles = occupied(nnz, panels * std::ceil(cols / tj));
    staged_rows = tiles * tj;
    tiles_per_panel = tiles / std::max(panels, 1.0);
  } else {
    staged_rows = occupied(nnz, panels * cols);  // used (panel, column) pairs
    tiles_per_panel = std::ceil(staged_rows / std::max(panels, 1.0) / tj);
  }
  const double a_rows = occupied(nnz, rows * tiles_per_panel);  // (row, tile) segments: A row loads
  const bool atomic = params.at("combine") == "atomic";
  const double group = params.at("group_size").get<double>();
  const double atomics = atomic ? nnz * slices * group : (slices > 1 ? nnz * slices : 0.0);
  return {{"launch", atomics > 0 ? 2.0 : 1.0},
          {"sparse_bytes", slices * nnz * (8.0 + vb) + nnz * vb * (atomics > 0 ? 2.0 : 1.0)},
          {"gather_bytes", (staged_rows + a_rows) * k * vb},
          {"atomics", atomics}};
}

void require(bool ok, const std::string& variant, const std::string& what) {
  if (!ok) throw InvalidInputError("sddmm " + variant + ": " + what);
}

int64_t int_param(const json& params, const std::string& variant, const char* key) {
  const json& v = params.at(key);
  require(v.is_number_integer(), variant, std::string(key) + " = " + v.dump() + " is not an integer");
  return v.get<int64_t>();
}

void check_vector_width(const json& params, const SddmmProblem& p, const std::string& variant) {
  const int64_t w = int_param(params, variant, "vector_width");
  const int64_t widest = p.dtype == DType::F64 ? 2 : 4;
  require(w == 1 || (w == widest && p.k % w == 0 && p.lda % w == 0 && p.ldb % w == 0), variant,
          "vector_width = " + std::to_string(w) + " needs 1 or " + std::to_string(widest) +
              " dividing k = " + std::to_string(p.k) + ", lda = " + std::to_string(p.lda) + " and ldb = " + std::to_string(p.ldb));
}

void check_threads(const json& params, const std::string& variant, int64_t group) {
  const int64_t threads = int_param(params, variant, "threads_per_block");
  require(threads >= 32 && threads <= 1024 && threads % 32 == 0 && threads % group == 0, variant,
          "threads_per_block = " + std::to_string(threads) + " must be a multiple of 32 in [32, 1024]");
}

// row_gather's parameters, which panel_gather shares.
void check_row_gather(const json& params, const SddmmProblem& p, const std::string& variant) {
  const int64_t group = int_param(params, variant, "group_size");
  require(is_pow2(group) && group <= 32, variant, "group_size = " + std::to_string(group) + " is not a power of two in [1, 32]");
  check_threads(params, variant, group);
  const int64_t unroll = int_param(params, variant, "unroll");
  require(is_pow2(unroll) && unroll <= group, variant,
          "unroll = " + std::to_string(unroll) + " is not a power of two in [1, group_size = " + std::to_string(group) + "]");
  const int64_t max_nnz = int_param(params, variant, "max_nnz");
  require(max_nnz >= 1, variant, "max_nnz = " + std::to_string(max_nnz) + " must be >= 1");
  const int64_t lane_vectors = row_lane_vectors(p.k, int_param(params, variant, "vector_width"), group);
  require(lane_vectors <= kMaxLaneVectors, variant,
          "k = " + std::to_string(p.k) + " needs " + std::to_string(lane_vectors) + " A vectors per lane (group_size = " +
              std::to_string(group) + "), more than " + std::to_string(kMaxLaneVectors));
}

// A tile edge of dense_tile or dense_mma: a multiple of its thread's (or warp's) part.
void check_tile_edge(const json& params, const std::string& variant, const char* edge, const char* part) {
  const int64_t size = int_param(params, variant, edge), unit = int_param(params, variant, part);
  require(size >= unit && size <= formats::kMaxDenseTileEdge && size % unit == 0, variant,
          std::string(edge) + " = " + std::to_string(size) + " is not a multiple of " + part + " = " + std::to_string(unit) +
              " in [" + part + ", " + std::to_string(formats::kMaxDenseTileEdge) + "]");
}

// What dense_tile and dense_mma share: the slice (whole `unit`s, named by `unit_why`), the
// stages in flight and the shared memory of the ring.
void check_dense_staging(const json& params, const DeviceTarget& device, const std::string& variant, int64_t unit,
                         const std::string& unit_why, int64_t shared_bytes) {
  const int64_t slice = int_param(params, variant, "slice");
  require(slice >= 1 && slice % unit == 0, variant,
          "slice = " + std::to_string(slice) + " is not a positive multiple of " + std::to_string(unit) + " (" + unit_why + ")");
  const int64_t stages = sddmm_dense_tile_stages(params);
  require(stages >= 1 && stages <= 4, variant, "stages = " + std::to_string(stages) + " outside [1, 4]");
  if (shared_bytes > device.shared_per_block_optin)
    throw UnsupportedError("sddmm " + variant + ": stages x (tile_rows + tile_cols) x slice needs " + std::to_string(shared_bytes) +
                           " bytes of shared memory, the device allows " + std::to_string(device.shared_per_block_optin));
}

void check_dense_tile(const json& params, const SddmmProblem& p, const DeviceTarget& device) {
  const std::string variant = "dense_tile";
  for (const char* micro : {"micro_rows", "micro_cols"}) {
    const int64_t edge = int_param(params, variant, micro);
    require(edge == 4 || edge == 8, variant, "micro-tile edge " + std::to_string(edge) + " is neither 4 nor 8");
  }
  check_tile_edge(params, variant, "tile_rows", "micro_rows");
  check_tile_edge(params, variant, "tile_cols", "micro_cols");
  const int64_t threads = sddmm_dense_tile_threads(params);
  require(threads % 32 == 0 && threads <= 1024, variant,
          "(tile_rows / micro_rows) * (tile_cols / micro_cols) = " + std::to_string(threads) +
              " threads is not a multiple of 32 in [32, 1024]");
  const int64_t width = int_param(params, variant, "vector_width");
  check_dense_staging(params, device, variant, dense_slice_unit(width, p.dtype),
                      "vector_width = " + std::to_string(width) + " and a 16-byte run of " + to_string(p.dtype),
                      sddmm_dense_tile_shared_bytes(params, p.dtype));
}

void check_dense_mma(const json& params, const SddmmProblem& p, const DeviceTarget& device) {
  const std::string variant = "dense_mma";
  const std::string rejection = dense_mma_rejection(p, device.sm);
  if (!rejection.empty()) throw UnsupportedError("sddmm dense_mma: " + rejection);
  const int64_t warp_rows = int_param(params, variant, "warp_rows"), warp_cols = int_param(params, variant, "warp_cols");
  require(warp_rows >= 16 && warp_rows <= 64 && warp_rows % 16 == 0, variant,
          "warp_rows = " + std::to_string(warp_rows) + " is not 16, 32, 48 or 64");
  require(warp_cols >= 8 && warp_cols <= 64 && warp_cols % 8 == 0, variant,
          "warp_cols = " + std::to_string(warp_cols) + " is not a multiple of 8 in [8, 64]");
  check_tile_edge(params, variant, "tile_rows", "warp_rows");
  check_tile_edge(params, variant, "tile_cols", "warp_cols");
  const int64_t threads = sddmm_dense_mma_threads(params);
  require(threads <= 1024, variant,
          "32 * (tile_rows / warp_rows) * (tile_cols / warp_cols) = " + std::to_string(threads) + " threads is past 1024");
  check_dense_staging(params, device, variant, kMmaStep, "one mma step", sddmm_dense_tile_shared_bytes(params, p.dtype));
}

void check_dense_wgmma(const json& params, const SddmmProblem& p, const DeviceTarget& device) {
  const std::string variant = "dense_wgmma";
  const std::string rejection = dense_wgmma_rejection(p, device.sm);
  if (!rejection.empty()) throw UnsupportedError("sddmm dense_wgmma: " + rejection);
  const int64_t width = int_param(params, variant, "vector_width");
  require(width == 1 || width == 4, variant, "vector_width = " + std::to_string(width) + " is neither 1 nor 4");
  const int64_t rows = int_param(params, variant, "tile_rows"), cols = int_param(params, variant, "tile_cols");
  require(rows == 64 || rows == 128, variant, "tile_rows = " + std::to_string(rows) + " is neither 64 nor 128 (a warpgroup per 64)");
  require(std::find(kWgmmaTileCols.begin(), kWgmmaTileCols.end(), cols) != kWgmmaTileCols.end(), variant,
          "tile_cols = " + std::to_string(cols) + " is not one of 64, 96, 128, 144, 192, 256");
  const int64_t stages = int_param(params, variant, "stages");
  require(stages >= 2 && stages <= 4, variant, "stages = " + std::to_string(stages) + " outside [2, 4]");
  const int64_t bytes = sddmm_dense_wgmma_shared_bytes(params);
  if (bytes > device.shared_per_block_optin)
    throw UnsupportedError("sddmm dense_wgmma: stages x (tile_rows + tile_cols) x 128 bytes and the small ring need " +
                           std::to_string(bytes) + " bytes of shared memory, the device allows " +
                           std::to_string(device.shared_per_block_optin));
}

// Parameters after a forced merge can be anything: every combination a kernel cannot run is
// refused here, naming the value, before anything is rendered.
void check_params(const std::string& variant, const json& params, const SddmmProblem& p, const DeviceTarget& device) {
  if (variant == "cusparse") return;
  check_vector_width(params, p, variant);
  if (variant == "row_gather") return check_row_gather(params, p, variant);
  if (variant == "panel_gather") {
    check_row_gather(params, p, variant);
    for (const char* edge : {"band_rows", "panel_cols"}) {
      const int64_t v = int_param(params, variant, edge);
      require(v >= 1, variant, std::string(edge) + " = " + std::to_string(v) + " must be >= 1");
    }
    return;
  }
  if (variant == "dense_tile") return check_dense_tile(params, p, device);
  if (variant == "dense_mma") return check_dense_mma(params, p, device);
  if (variant == "dense_wgmma") return check_dense_wgmma(params, p, device);
  const int64_t group = int_param(params, variant, "group_size");
  require(is_pow2(group) && group <= 32, variant, "group_size = " + std::to_string(group) + " is not a power of two in [1, 32]");
  check_threads(params, variant, group);
  if (variant == "coo_flat") {
    const int64_t per = int_param(params, variant, "nnz_per_group");
    require(per >= 1 && per <= group, variant,
            "nnz_per_group = " + std::to_string(per) + " outside [1, group_size = " + std::to_string(group) + "]");
    return;
  }
  for (const char* edge : {"tile_rows", "tile_cols"}) {
    const int64_t v = int_param(params, variant, edge);
    require(v >= 1 && v <= int64_t(formats::kMaxTileEdge), variant,
            std::string(edge) + " = " + std::to_string(v) + " outside [1, " + std::to_string(int64_t(formats::kMaxTileEdge)) + "]");
  }
  const int64_t slice = int_param(params, variant, "slice");
  const int64_t unit = int_param(params, variant, "vector_width") * group;
  require(slice >= 1 && slice % unit == 0, variant,
          "slice = " + std::to_string(slice) + " is not a positive multiple of vector_width * group_size = " + std::to_string(unit));
  require(params.at("combine") == "atomic" || params.at("combine") == "reduce", variant,
          "combine = " + params.at("combine").dump() + " is neither \"atomic\" nor \"reduce\"");
  if (params.contains("batch")) {  // tuning records older than the parameter lack it: batch 1
    const int64_t batch = int_param(params, variant, "batch");
    require(is_pow2(batch) && batch <= 16, variant, "batch = " + std::to_string(batch) + " is not a power of two in [1, 16]");
  }
  const int64_t bytes = sddmm_tiled_shared_bytes(params, p.dtype);
  if (bytes > device.shared_per_block_optin)
    throw UnsupportedError("sddmm " + variant + ": tile_cols x slice needs " + std::to_string(bytes) +
                           " bytes of shared memory, the device allows " + std::to_string(device.shared_per_block_optin));
}

// The tree's leaf replaces choose()'s cheapest candidate when it can run the problem.
void apply_tree(Decision& d, const json& model, const std::vector<VariantSpec>& variants) {
  if (!model.contains("tree")) return;
  const models::TreeResult result = models::evaluate_tree(model["tree"], d.features);
  d.path = result.path;
  if (!result.leaf.is_string())
    throw InvalidInputError("sddmm model " + model.value("id", std::string("?")) + ": tree leaf " + result.leaf.dump() +
                            " is not a variant name");
  for (const auto& v : variants) {
    if (v.name == result.leaf.get<std::string>() && v.rejected_because.empty() && v.declined_because.empty()) {
      d.variant = v.name;
      d.params = v.default_params;
      return;
    }
  }
}

}  // namespace

int64_t sddmm_tiled_shared_bytes(const nlohmann::json& params, DType dtype) {
  const int64_t width = params.at("vector_width").get<int64_t>();
  const int64_t unit_bytes = width * int64_t(size_of(dtype));
  return params.at("tile_cols").get<int64_t>() * (params.at("slice").get<int64_t>() / width + 1) * unit_bytes;
}

int64_t sddmm_dense_tile_threads(const nlohmann::json& params) {
  return (params.at("tile_rows").get<int64_t>() / params.at("micro_rows").get<int64_t>()) *
         (params.at("tile_cols").get<int64_t>() / params.at("micro_cols").get<int64_t>());
}

int64_t sddmm_dense_tile_min_blocks(const nlohmann::json& params) {
  const int64_t micro_rows = params.at("micro_rows").get<int64_t>(), micro_cols = params.at("micro_cols").get<int64_t>();
  const int64_t registers = micro_rows * micro_cols + 4 * (micro_rows + micro_cols) + 16;  // 64 at 4 x 4
  const int64_t per_block = sddmm_dense_tile_threads(params) * pow2_at_least(registers);
  return std::max<int64_t>(1, 65536 / per_block);
}

int64_t sddmm_dense_mma_threads(const nlohmann::json& params) {
  return 32 * (params.at("tile_rows").get<int64_t>() / params.at("warp_rows").get<int64_t>()) *
         (params.at("tile_cols").get<int64_t>() / params.at("warp_cols").get<int64_t>());
}

int64_t sddmm_dense_mma_min_blocks(const nlohmann::json& params) {
  const int64_t steps_down = params.at("warp_rows").get<int64_t>() / 16, steps_across = params.at("warp_cols").get<int64_t>() / 8;
  // Accumulators, both halves of the A and B fragments, addresses: 80 at 32 x 32 (ptxas fits
  // that part in 80 without spilling; left to itself it takes 128 and 4 blocks per SM).
  const int64_t registers = 4 * steps_down * steps_across + 8 * steps_down + 4 * steps_across + 16;
  return std::max<int64_t>(1, 65536 / (sddmm_dense_mma_threads(params) * round_up(registers, 8)));
}

int64_t sddmm_dense_wgmma_threads(const nlohmann::json& params) { return 2 * params.at("tile_rows").get<int64_t>(); }

int64_t sddmm_dense_wgmma_shared_bytes(const nlohmann::json& params) {
  const int64_t rows = params.at("tile_rows").get<int64_t>(), cols = params.at("tile_cols").get<int64_t>();
  const int64_t row_bytes = kWgmmaSlice * 4;
  const int64_t rings = params.at("stages").get<int64_t>() * (rows + cols) * row_bytes + 2 * cols * row_bytes;
  return std::max(rings, rows * (cols + 8) * 4) + 1024;
}

int64_t sddmm_dense_wgmma_min_blocks(const nlohmann::json& params, const DeviceTarget& device) {
  const int64_t registers = round_up(params.at("tile_cols").get<int64_t>() / 2 + 72, 8);
  const int64_t by_registers = 65536 / (sddmm_dense_wgmma_threads(params) * registers);
  const int64_t by_shared = device.shared_per_sm / (sddmm_dense_wgmma_shared_bytes(params) + 1024);
  return std::clamp<int64_t>(std::min(by_registers, by_shared), 1, 4);
}

int64_t sddmm_dense_tile_stages(const nlohmann::json& params) { return params.value("stages", int64_t(1)); }

int64_t sddmm_dense_tile_shared_bytes(const nlohmann::json& params, DType dtype) {
  const int64_t rows = params.at("tile_rows").get<int64_t>() + params.at("tile_cols").get<int64_t>();
  const int64_t row_elements = params.at("slice").get<int64_t>() + run_elements(dtype);
  return sddmm_dense_tile_stages(params) * rows * row_elements * int64_t(size_of(dtype));
}

int64_t sddmm_row_lane_vectors(const nlohmann::json& params, int32_t k) {
  return row_lane_vectors(k, params.at("vector_width").get<int64_t>(), params.at("group_size").get<int64_t>());
}

double sddmm_tile_fill(const Features& features, const SddmmProblem& problem, int64_t tile_rows, int64_t tile_cols) {
  const double tiles = dense_tiles_estimate(features, problem, double(tile_rows), double(tile_cols));
  return tiles > 0 ? double(features.basic.nnz) / (tiles * double(tile_rows) * double(tile_cols)) : 0.0;
}

std::vector<std::string> sddmm_variants() {
  std::vector<std::string> names;
  const auto candidates =
      sddmm_candidates(Features{}, {1, DType::F32, 1, 1}, Options{}, models::shipped_model("sddmm"), DeviceTarget{});
  for (const auto& v : candidates) names.push_back(v.name);
  return names;
}

Decision plan_sddmm(const Features& features, const SddmmProblem& problem, const DeviceTarget& device, const Options& options,
                    const nlohmann::json& model, const TunedLookup& tuned) {
  Decision d;
  d.op = Op::SDDMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = to_json(features);
  d.features["k"] = problem.k;
  d.features["value_bytes"] = size_of(problem.dtype);
  d.features["pattern_reused"] = (options.reuse == Reuse::Many || problem.pattern_seen) ? 1 : 0;
  d.features["tile_fill"] = sddmm_tile_fill(features, problem, launch_value(model, "dense_tile", "tile_rows").get<int64_t>(),
                                            launch_value(model, "dense_tile", "tile_cols").get<int64_t>());
  const auto variants = sddmm_candidates(features, problem, options, model, device);
  const auto forced = forced_from_options(Op::SDDMM, options);
  choose(d, variants, model,
         [&](const std::string& name, const json& params) { return sddmm_terms(features, problem, name, params); }, forced,
         [&](const std::string& name, const json& params) { check_params(name, params, problem, device); });
  if (d.source == DecisionSource::Model) apply_tree(d, model, variants);
  const std::string bucket = sddmm_bucket(features, problem);
  d.features["feature_bucket"] = bucket;
  if (tuned && d.source != DecisionSource::Forced) apply_tuned_choice(d, tuned(bucket));
  check_params(d.variant, d.params, problem, device);
  return d;
}

Decision plan_sddmm(const Features& features, const SddmmProblem& problem, const DeviceTarget& device, const Options& options,
                    const PlanSources& sources) {
  const auto model = sources.model ? sources.model : std::make_shared<const json>(models::shipped_model("sddmm"));
  return plan_sddmm(features, problem, device, options, *model, sources.tuned);
}

std::vector<TimedChoice> sddmm_neighbors(const std::string& variant, const nlohmann::json& params, const SddmmProblem& problem,
                                        const DeviceTarget& device) {
  const auto get = [&](const char* key) { return params.at(key).get<int64_t>(); };
  std::vector<json> changes;
  if (variant == "row_gather") {
    changes = {{{"group_size", get("group_size") / 2}, {"unroll", std::min(get("unroll"), get("group_size") / 2)}},
               {{"group_size", get("group_size") * 2}},
               {{"max_nnz", get("max_nnz") / 4}},
               {{"max_nnz", get("max_nnz") * 4}}};
  } else if (variant == "panel_gather") {
    changes = {{{"band_rows", get("band_rows") / 2}}, {{"band_rows", get("band_rows") * 2}},
               {{"panel_cols", get("panel_cols") / 2}}, {{"panel_cols", get("panel_cols") * 2}},
               {{"group_size", get("group_size") / 2}, {"unroll", std::min(get("unroll"), get("group_size") / 2)}},
               {{"group_size", get("group_size") * 2}}};
  } else if (variant == "coo_flat") {
    changes = {{{"nnz_per_group", get("nnz_per_group") / 2}},
               {{"nnz_per_group", get("nnz_per_group") * 2}},
               {{"group_size", get("group_size") / 2}, {"nnz_per_group", std::min(get("nnz_per_group"), get("group_size") / 2)}},
               {{"group_size", get("group_size") * 2}}};
  } else if (variant == "dense_tile" || variant == "dense_mma") {
    // Fewer stages or a shorter slice stage less shared memory (more tiles per SM); more or
    // longer ones keep more of K in flight and sync less.
    const int64_t stages = sddmm_dense_tile_stages(params);
    changes = {{{"tile_rows", get("tile_rows") / 2}}, {{"tile_rows", get("tile_rows") * 2}},
               {{"tile_cols", get("tile_cols") / 2}}, {{"tile_cols", get("tile_cols") * 2}},
               {{"slice", get("slice") / 2}}};
    if (get("slice") < problem.k) changes.push_back({{"slice", get("slice") * 2}});
    if (stages > 1) changes.push_back({{"stages", stages - 1}});
    if (stages * get("slice") < problem.k) changes.push_back({{"stages", stages + 1}});
    if (variant == "dense_mma") {  // half or twice the tile with as many warps (on a few tiles, more blocks fill the SMs)
      changes.push_back({{"tile_rows", get("tile_rows") / 2}, {"warp_rows", get("warp_rows") / 2}});
      changes.push_back({{"tile_rows", get("tile_rows") * 2}, {"warp_rows", get("warp_rows") * 2}});
    }
  } else if (variant == "dense_wgmma") {
    const auto at = std::find(kWgmmaTileCols.begin(), kWgmmaTileCols.end(), get("tile_cols"));
    if (at != kWgmmaTileCols.begin() && at != kWgmmaTileCols.end()) changes.push_back({{"tile_cols", *(at - 1)}});
    if (at != kWgmmaTileCols.end() && at + 1 != kWgmmaTileCols.end()) changes.push_back({{"tile_cols", *(at + 1)}});
    changes.push_back({{"tile_rows", get("tile_rows") == 64 ? 128 : 64}});
    changes.push_back({{"stages", get("stages") - 1}});
    if (get("stages") * kWgmmaSlice < problem.k) changes.push_back({{"stages", get("stages") + 1}});
  } else if (variant == "tiled_shared" || variant == "reindexed_tiled") {
    const int64_t batch = params.value("batch", 1);
    changes = {{{"combine", params.at("combine") == "atomic" ? "reduce" : "atomic"}},
               {{"tile_rows", get("tile_rows") / 4}},
               {{"tile_rows", get("tile_rows") * 4}},
               {{"batch", batch * 2}}};
    if (batch > 1) changes.push_back({{"batch", batch / 2}});
  }
  return valid_neighbours(variant, params, changes, [&](const json& n) { check_params(variant, n, problem, device); });
}

std::vector<std::pair<std::string, nlohmann::json>> sddmm_search_space(const Features& features, const SddmmProblem& problem,
                                                                       const DeviceTarget& device) {
  std::vector<std::pair<std::string, json>> space;
  if (problem.dtype != DType::F32 && problem.dtype != DType::F64) return space;
  const json& model = models::shipped_model("sddmm");
  const int width = vector_width(problem);
  const int64_t units = (problem.k + width - 1) / width;
  const std::vector<VariantSpec> candidates = sddmm_candidates(features, problem, Options{}, model, device);
  auto keep = [&](const std::string& variant, const json& params) {
    try {
      check_params(variant, params, problem, device);
      space.emplace_back(variant, params);
    } catch (const Error&) {
      // a combination the kernel cannot run on this device: not worth measuring
    }
  };
  for (int64_t group : {4, 8, 16, 32}) {
    if (group > 2 * pow2_at_least(units) && group > 4) continue;  // most lanes would idle
    for (int64_t per : {1, 2, 4})
      for (int64_t threads : {128, 256})
        keep("coo_flat", {{"vector_width", width}, {"group_size", group}, {"nnz_per_group", std::min(per, group)},
                          {"threads_per_block", threads}});
  }
  for (int64_t group : {4, 8, 16, 32}) {
    if (group > 2 * pow2_at_least(units) && group > 4) continue;  // most lanes would idle
    for (int64_t unroll : {2, 4, 8}) {
      if (unroll > group) continue;
      for (int64_t max_nnz : {16, 64, 256})
        keep("row_gather", {{"vector_width", width}, {"group_size", group}, {"unroll", unroll}, {"max_nnz", max_nnz},
                            {"threads_per_block", 256}});
    }
  }
  // panel_gather at its panel for L1 and half of it, in bands of 64 and 128 rows (32 measured
  // 1.2-1.5x slower on 4096² at 10%), where the planner proposes it.
  const auto panel = std::find_if(candidates.begin(), candidates.end(), [](const VariantSpec& v) { return v.name == "panel_gather"; });
  if (panel != candidates.end() && panel->rejected_because.empty() && panel->declined_because.empty()) {
    const int64_t panel_cols = panel->default_params.at("panel_cols").get<int64_t>();
    for (int64_t group : {8, 16})
      for (int64_t band_rows : {64, 128})
        for (int64_t cols : {panel_cols, panel_cols / 2}) {
          json params = panel->default_params;
          params["group_size"] = group;
          params["unroll"] = std::min(params.at("unroll").get<int64_t>(), group);
          params["band_rows"] = band_rows;
          params["panel_cols"] = cols;
          keep("panel_gather", params);
        }
  }
  // dense_tile and dense_mma build a bitmap per tile: measured only where tiles are reasonably
  // full; each slice with two and four of them in flight (at most all of K).
  const bool dense_search = sddmm_tile_fill(features, problem, 64, 64) >= kDenseTileSearchFill;
  const auto stage_counts = [&](int64_t slice) {
    const int64_t count = (problem.k + slice - 1) / slice;
    return std::set<int64_t>{std::min<int64_t>(count, 2), std::min<int64_t>(count, 4)};
  };
  if (dense_search) {
    const int64_t unit = dense_slice_unit(width, problem.dtype);
    const int64_t long_slice = round_up(std::min<int64_t>(32, problem.k), unit);
    const int64_t short_slice = round_up(std::min<int64_t>(16, problem.k), unit);
    std::vector<int64_t> slices = {long_slice};
    if (short_slice != long_slice) slices.push_back(short_slice);
    for (const auto& [ti, tj, mi, mj] : std::vector<std::array<int64_t, 4>>{
             {64, 64, 4, 4}, {128, 64, 8, 4}, {64, 128, 4, 8}, {128, 128, 8, 8}, {32, 64, 4, 4}, {32, 32, 4, 4}})
      for (int64_t s : slices)
        for (int64_t stages : stage_counts(s))
          keep("dense_tile", {{"vector_width", width}, {"tile_rows", ti}, {"tile_cols", tj}, {"micro_rows", mi},
                              {"micro_cols", mj}, {"slice", s}, {"stages", stages}});
  }
  // dense_mma likewise, with one slice of 32 (or all of a shorter K).
  if (dense_search && dense_mma_rejection(problem, device.sm).empty()) {
    const int64_t slice = round_up(std::min<int64_t>(32, problem.k), kMmaStep);
    for (const auto& [ti, tj, wr, wc] : std::vector<std::array<int64_t, 4>>{
             {64, 64, 32, 32}, {128, 64, 64, 32}, {64, 128, 32, 64}, {128, 128, 64, 64}, {32, 64, 32, 32}, {32, 64, 16, 32}})
      for (int64_t stages : stage_counts(slice))
        keep("dense_mma", {{"vector_width", width}, {"tile_rows", ti}, {"tile_cols", tj}, {"warp_rows", wr},
                           {"warp_cols", wc}, {"slice", slice}, {"stages", stages}});
  }
  // dense_wgmma over its tile widths, one or two warpgroups, two and three slices in flight.
  if (dense_search && dense_wgmma_rejection(problem, device.sm).empty()) {
    for (int64_t rows : {64, 128})
      for (int64_t cols : kWgmmaTileCols)
        for (int64_t stages : {2, 3})
          keep("dense_wgmma", {{"vector_width", vector_width(problem) == 4 ? 4 : 1}, {"tile_rows", rows},
                               {"tile_cols", cols}, {"stages", stages}});
  }
  for (const std::string variant : {"tiled_shared", "reindexed_tiled"}) {
    for (int64_t tile_cols : {32, 64, 128}) {
      const int64_t rows = default_tile_rows(features, tile_cols, model, variant);
      for (int64_t tile_rows : {rows / 4, rows, rows * 4}) {
        if (tile_rows < 1 || tile_rows > int64_t(formats::kMaxTileEdge)) continue;
        for (int64_t group : {1, 4, 8}) {
          if (group > pow2_at_least(units)) continue;
          for (int64_t slice_max : {32, 64, 128}) {
            const int64_t slice = round_up(std::min<int64_t>(slice_max, problem.k), width * group);
            if (slice_max > 32 && slice < slice_max) continue;  // K already fits a smaller slice
            for (const char* combine : {"atomic", "reduce"})
              keep(variant, {{"tile_rows", tile_rows}, {"tile_cols", tile_cols}, {"slice", slice}, {"group_size", group},
                             {"combine", combine}, {"batch", 4}, {"threads_per_block", 256}, {"vector_width", width}});
          }
        }
      }
    }
  }
  space.emplace_back("cusparse", json::object());
  return space;
}

}  // namespace sparsejit::plan
