// SpMM planner: C = A·B (or Aᵀ·B). Candidates:
//   csr_rowwarp  one warp per row, scalar loads (A·B only)
//   csr_vector   the RS light (horizontal) kernel over the whole matrix: groups of 8/16/32
//                lanes per row, 16-byte loads of B, plain stores (Aᵀ·B: C cleared, then
//                atomics)
//   csr_rowsplit every row split between `parts` lane groups of one block, partial sums added
//                in shared memory, plain stores (A·B only): few long rows (pruned layers)
//   csr_merge    nonzero-balanced: every lane group takes nnz_per_group consecutive nonzeros
//                (rows from the cached COO row array), so no group waits on the longest row;
//                C cleared first, rows split between groups added atomically, the others
//                stored (Aᵀ·B: every product added atomically)
//   rs           the RS-SpMM split: light kernel over the light part (plain stores), then
//                the heavy (vertical, shared-memory panel) kernel adding atomically
//   dense        A expanded once per values into a dense copy cached on the handle, then one
//                cuBLAS GEMM in full precision (near-dense operands: pruned layers at 50-80%
//                sparsity); admitted while the copy stays within kDenseMaxBytes
//   cusparse     the vendor: CSR_ALG3 for A·B, CSR_ALG2 for Aᵀ·B (alg forced: 1, 2 or 3)
// Order of precedence (DESIGN.md): forced, tuned record, model (cost formulas), default.
//
// Parameter defaults (all derived from K, the value size and the device):
//   vec_width      16 / value size when that divides K, ldb and ldc, else 1
//   lanes          8, 16 or 32: the fewest lanes whose vectors cover K (a row's group)
//   cf_h, cf_v     vectors per lane: enough to cover K, at most kMaxRowBytes per group row
//   panel_width    RS-SpMM 3.1: W * slice bytes * blocks_per_sm = shared memory per SM
//                  (less the 1 KiB the hardware reserves per block), rounded down to a
//                  multiple of 32, at most cols, at most the per-block opt-in limit
//   threshold      the model's "threshold_tree" leaf when models/spmm.json has one, else
//                  the cheapest of kThresholdGrid by the cost formulas
//   segments_per_block  heavy segments per work item: enough items for two waves of
//                  blocks, at least 2 and at most 16 segments per lane group
//   csr_merge      vec_width, lanes and cf as the light kernel; unroll 8 / cf (at least 2:
//                  a group of 8 lanes loads its whole chunk of B rows at once);
//                  nnz_per_group the cheapest of kMergeRanges by the cost formulas;
//                  kMergeThreads threads per block (small matrices still spread over SMs)
//   csr_rowsplit   vec_width, lanes and cf as the light kernel; parts the cheapest of
//                  kRowsplitParts (at least cf) by the cost formulas
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>

#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "models/model_store.hpp"
#include "plan/choose.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "plan/tuned.hpp"

namespace sparsejit::plan {

namespace {

constexpr int kMaxRowBytes = 512;        // bytes of C one lane group covers per pass
constexpr int kLightThreads = 256;
// Heavy blocks: 512 threads at two per SM, 256 past that, so the register budget per thread
// (65536 / resident threads) never drops below 64.
int heavy_threads_for(int blocks_per_sm) { return blocks_per_sm <= 2 ? 512 : 256; }
constexpr int kDefaultBlocksPerSm = 2;   // RS-SpMM 3.1: two resident heavy blocks per SM
constexpr int kReservedSharedPerBlock = 1024;
constexpr int kUnroll = 4;
const int kThresholdGrid[] = {2, 4, 8, 16};
const int kSearchThresholds[] = {2, 4, 8, 16, 32};
const int kMergeRanges[] = {16, 32, 64, 128, 256};
const int kSearchMergeRanges[] = {32, 64, 128, 256};
constexpr int kMergeThreads = 128;
const int kRowsplitParts[] = {2, 4, 8, 16};
// The dense copy lives as long as the handle: 1 GiB keeps it a fraction of any data-centre
// GPU's memory (a 16384 x 16384 fp32 matrix).
constexpr double kDenseMaxBytes = double(1LL << 30);
// cuBLAS's output tile edge for the shapes the dense variant wins (what sets its parallelism).
constexpr double kGemmTile = 128;

int value_bytes(const SpmmProblem& p) { return int(size_of(p.dtype)); }
int64_t ld_or_k(int64_t ld, int32_t k) { return ld > 0 ? ld : k; }

// The 16-byte vector when it divides K and both leading dimensions (so every row of B and C
// starts aligned: device allocations are 256-byte aligned), else single values.
int vector_width(const SpmmProblem& p) {
  const int w = 16 / value_bytes(p);
  return p.k % w == 0 && ld_or_k(p.ldb, p.k) % w == 0 && ld_or_k(p.ldc, p.k) % w == 0 ? w : 1;
}

int vector_units(const SpmmProblem& p, int vec) { return (p.k + vec - 1) / vec; }

// The fewest lanes (8, 16, 32) whose vectors cover K in one step.
int lanes_for(int units) { return units <= 8 ? 8 : units <= 16 ? 16 : 32; }

// Vectors per lane: enough to cover K, capped so one group's row stays within kMaxRowBytes
// (registers, and the shared tile's row for the heavy kernel), and within {1, 2, 4}.
int cf_for(const SpmmProblem& p, int vec, int lanes) {
  const int needed = (vector_units(p, vec) + lanes - 1) / lanes;
  const int cap = std::max(1, kMaxRowBytes / (lanes * vec * value_bytes(p)));
  const int cf = std::min({needed, cap, 4});
  return cf >= 4 ? 4 : cf >= 2 ? 2 : 1;
}

// Tile rows read ahead by the heavy kernel: 4 vectors in flight per lane whatever cf_v is, so
// the registers fit the 64 per thread that two 512-thread blocks per SM leave.
int heavy_unroll_for(int cf_v) { return std::max(1, kUnroll / std::max(1, cf_v)); }

int slice_columns(int lanes, int vec, int cf) { return lanes * vec * cf; }
int64_t slices(int32_t k, int slice) { return (k + slice - 1) / slice; }

// RS-SpMM's panel width for a tile row of row_bytes and blocks_per_sm resident blocks.
int32_t panel_width_for(const DeviceTarget& device, int32_t cols, int64_t row_bytes, int blocks_per_sm) {
  const int64_t per_block = std::min<int64_t>(device.shared_per_sm / blocks_per_sm - kReservedSharedPerBlock,
                                              device.shared_per_block_optin);
  int64_t w = per_block / row_bytes / 32 * 32;
  w = std::max<int64_t>(w, 32);
  return int32_t(std::max<int64_t>(1, std::min<int64_t>(w, cols)));
}

nlohmann::json light_params(const SpmmProblem& p) {
  const int vec = vector_width(p);
  const int lanes = lanes_for(vector_units(p, vec));
  return {{"vec_width", vec}, {"lanes_per_row", lanes}, {"cf_h", cf_for(p, vec, lanes)},
          {"unroll", kUnroll}, {"block_threads", kLightThreads}};
}

// The csr_merge parameters except nnz_per_group (which the cost formulas pick).
nlohmann::json merge_base_params(const SpmmProblem& p) {
  const int vec = vector_width(p);
  const int lanes = lanes_for(vector_units(p, vec));
  const int cf = cf_for(p, vec, lanes);
  return {{"vec_width", vec}, {"lanes", lanes}, {"cf", cf}, {"unroll", std::max(2, 8 / cf)},
          {"nnz_per_group", 64}, {"block_threads", kMergeThreads}};
}

// The csr_rowsplit parameters with `parts` groups per row.
nlohmann::json rowsplit_params(const SpmmProblem& p, int parts) {
  const int vec = vector_width(p);
  const int lanes = lanes_for(vector_units(p, vec));
  return {{"vec_width", vec}, {"lanes", lanes}, {"cf", cf_for(p, vec, lanes)}, {"unroll", kUnroll}, {"parts", parts}};
}

int heavy_slice(const nlohmann::json& params) {
  return slice_columns(params.at("heavy_lanes").get<int>(), params.at("vec_width").get<int>(), params.at("cf_v").get<int>());
}

// The rs parameters except threshold and segments_per_block (which need split statistics).
nlohmann::json rs_base_params(const Features& f, const SpmmProblem& p, const DeviceTarget& device, int blocks_per_sm) {
  nlohmann::json params = light_params(p);
  const int vec = params.at("vec_width").get<int>();
  const int lanes = lanes_for(vector_units(p, vec));
  params["heavy_lanes"] = lanes;
  params["cf_v"] = cf_for(p, vec, lanes);
  params["heavy_unroll"] = heavy_unroll_for(params.at("cf_v").get<int>());
  params["heavy_threads"] = heavy_threads_for(blocks_per_sm);
  params["blocks_per_sm"] = blocks_per_sm;
  params["panel_width"] = panel_width_for(device, f.basic.cols, int64_t(heavy_slice(params)) * value_bytes(p), blocks_per_sm);
  params["threshold"] = 4;
  params["segments_per_block"] = 8 * (heavy_threads_for(blocks_per_sm) / lanes);
  return params;
}

// Heavy segments per work item: about two waves of blocks over the device, between 2 and 16
// segments per lane group of a block.
int segments_per_block(const SplitStats& s, const nlohmann::json& params, const DeviceTarget& device) {
  const int groups = params.at("heavy_threads").get<int>() / params.at("heavy_lanes").get<int>();
  const int64_t target_items = 2LL * device.multiprocessors * params.at("blocks_per_sm").get<int>();
  const int64_t wanted = (s.heavy_segments + target_items - 1) / std::max<int64_t>(target_items, 1);
  return int(std::clamp<int64_t>(wanted, 2 * groups, 16 * groups));
}

// Work items of the heavy kernel: one per segments_per_block segments of each panel; the
// panels holding heavy segments are not counted by the statistics, so every panel is
// assumed to hold some (an upper bound when heavy segments are few).
double heavy_items(const SplitStats& s, int spb) {
  if (s.heavy_segments == 0) return 0;
  return std::min<double>(double(s.panels), double(s.heavy_segments)) + double(s.heavy_segments) / spb;
}

// ---------------------------------------------------------------------------------------
// Cost terms. Every byte count is what the kernel moves, in its class:
//   sparse_bytes   indices, values and offsets (DRAM, read once per K slice)
//   gather_bytes   rows of B read per nonzero (from L2 mostly: B usually fits in it)
//   output_bytes   C written once (plain stores or the memset before atomics)
//   panel_bytes    B's panel rows staged into shared memory by the heavy kernel
//   shared_bytes   shared-memory reads of the staged rows (one row slice per heavy nonzero)
//   shared_atomic_bytes  shared-memory atomics of the transposed heavy kernel
//   atomic_bytes   bytes added into C with global atomics
//   critical_nnz   nonzeros one lane group walks in sequence (the longest row it may get)
//   critical_loads dependent memory round trips of the slowest lane group: a row-per-group
//                  kernel loads indices once per `lanes` nonzeros and B rows once per
//                  `unroll` nonzeros of its longest row, in sequence; csr_merge walks
//                  nnz_per_group nonzeros (indices prefetched) whatever the rows
//   critical_row   longest row times K (csr_rowwarp's, one warp walks K in passes)
//                  csr_rowwarp's critical_loads: its longest row once per pass, one B load each
//   launch         kernel launches and memsets
nlohmann::json base_terms(const Features& f, const SpmmProblem& p) {
  const double vb = value_bytes(p);
  const double nnz = double(f.basic.nnz);
  const double out_rows = p.transpose_a ? f.basic.cols : f.basic.rows;
  return {{"launch", 1.0},
          {"sparse_bytes", nnz * (4.0 + vb) + (f.basic.rows + 1.0) * 4.0},
          {"gather_bytes", nnz * p.k * vb},
          {"output_bytes", out_rows * p.k * vb},
          {"panel_bytes", 0.0},
          {"shared_bytes", 0.0},
          {"shared_atomic_bytes", 0.0},
          {"atomic_bytes", 0.0},
          {"critical_nnz", double(f.basic.row_max)},
          {"critical_loads", 0.0},
          {"critical_row", double(f.basic.row_max) * p.k}};
}

double ceil_div(double a, double b) { return std::ceil(a / b); }

// Round trips of a light-kernel group walking `row` nonzeros: index loads every `lanes`
// nonzeros, and for A·B B-row loads every `unroll` nonzeros after them (Aᵀ·B's atomics do
// not wait). Fitted on the first H200 benchmark: about 0.2 µs per round trip.
double light_critical_loads(double row, const nlohmann::json& params, bool transpose) {
  const double index_loads = ceil_div(row, params.at("lanes_per_row").get<int>());
  return transpose ? index_loads : index_loads + ceil_div(row, params.at("unroll").get<int>());
}

// csr_rowwarp walks its longest row once per pass of 32 * cols_per_lane columns, one B load
// after another (the first benchmark: about 0.15-0.3 µs per nonzero of the longest row at
// K = 32, e.g. cora 168 nonzeros 26 µs, email-Enron 1383 nonzeros 392 µs).
// Every pass re-reads the row's indices and values, so A's bytes count once per pass.
nlohmann::json csr_rowwarp_terms(const Features& f, const SpmmProblem& p, const nlohmann::json& params) {
  nlohmann::json t = base_terms(f, p);
  const double passes = ceil_div(p.k, 32.0 * params.at("cols_per_lane").get<int>());
  t["critical_loads"] = double(f.basic.row_max) * passes;
  t["sparse_bytes"] = t["sparse_bytes"].get<double>() * passes;
  return t;
}

nlohmann::json csr_vector_terms(const Features& f, const SpmmProblem& p, const nlohmann::json& params) {
  nlohmann::json t = base_terms(f, p);
  const double vb = value_bytes(p);
  const double nnz = double(f.basic.nnz);
  const int64_t k_slices = slices(p.k, slice_columns(params.at("lanes_per_row").get<int>(),
                                                     params.at("vec_width").get<int>(), params.at("cf_h").get<int>()));
  t["sparse_bytes"] = nnz * (4.0 + vb) * k_slices + (f.basic.rows + 1.0) * 4.0;
  t["critical_loads"] = light_critical_loads(double(f.basic.row_max), params, p.transpose_a);
  if (p.transpose_a) {  // memset C, read each row of B once, scatter every product
    t["launch"] = 2.0;
    t["gather_bytes"] = double(f.basic.rows) * p.k * vb;
    t["atomic_bytes"] = nnz * p.k * vb;
  }
  return t;
}

// csr_merge: the memset of C and one kernel; (row, column, value) per nonzero and K slice;
// A·B: B rows per nonzero, C written twice (memset, then stores or atomics), at most the two
// boundary rows of each range added atomically; Aᵀ·B: every product added atomically. No
// group waits on a long row: its round trips are its range's B loads (indices come ahead).
nlohmann::json csr_merge_terms(const Features& f, const SpmmProblem& p, const nlohmann::json& params) {
  nlohmann::json t = base_terms(f, p);
  const double vb = value_bytes(p);
  const double nnz = double(f.basic.nnz);
  const double range = params.at("nnz_per_group").get<int>();
  const double groups = ceil_div(nnz, range);
  const double row_bytes = double(p.k) * vb;
  const int64_t k_slices = slices(p.k, slice_columns(params.at("lanes").get<int>(), params.at("vec_width").get<int>(),
                                                     params.at("cf").get<int>()));
  t["launch"] = 2.0;
  t["sparse_bytes"] = nnz * (8.0 + vb) * k_slices;
  t["critical_loads"] = ceil_div(range, params.at("unroll").get<int>()) + 1.0;
  if (p.transpose_a) {
    t["atomic_bytes"] = nnz * row_bytes;
  } else {
    t["output_bytes"] = 2.0 * f.basic.rows * row_bytes;
    t["atomic_bytes"] = std::min(2.0 * groups, double(f.basic.rows) + groups) * row_bytes;
  }
  return t;
}

// csr_rowsplit: a block per row and K slice whose `parts` groups each walk 1/parts of the
// row (a share's chain of round trips, plus one for the shared-memory sum); the partial sums
// go through shared memory. Blocks are small (lanes * parts threads), so when rows are many
// the device holds only max_blocks_per_sm of them per SM at a time: the blocks run in waves,
// each as long as its rows' chains; the slowest wave holds the longest row and the others
// are priced at the mean row (the first H200 benchmark: trpcage_8K, 16863 rows of 7
// nonzeros, 16-thread blocks in 4 waves, took 12.9 µs where one wave predicted 7.9 µs).
nlohmann::json csr_rowsplit_terms(const Features& f, const SpmmProblem& p, const nlohmann::json& params, const DeviceTarget& device) {
  nlohmann::json t = base_terms(f, p);
  const double vb = value_bytes(p);
  const double rows = f.basic.rows;
  const int lanes = params.at("lanes").get<int>();
  const int parts = params.at("parts").get<int>();
  const int unroll = params.at("unroll").get<int>();
  const int slice = slice_columns(lanes, params.at("vec_width").get<int>(), params.at("cf").get<int>());
  const double k_slices = double(slices(p.k, slice));
  const auto chain = [&](double row) {
    const double share = ceil_div(row, parts);
    return ceil_div(share, lanes) + ceil_div(share, unroll) + 1.0;
  };
  const double resident = std::max(1, std::min(device.max_blocks_per_sm, device.max_threads_per_sm / (lanes * parts)));
  const double waves = std::max(1.0, ceil_div(rows * k_slices, resident * device.multiprocessors));
  t["sparse_bytes"] = double(f.basic.nnz) * (4.0 + vb) * k_slices + (rows + 1.0) * 4.0 * k_slices;
  t["critical_loads"] = chain(double(f.basic.row_max)) + (waves - 1.0) * chain(f.basic.row_mean);
  t["shared_bytes"] = rows * k_slices * parts * slice * vb;
  t["thread_slots"] = rows * k_slices * lanes * parts;
  return t;
}

// Round trips of the slowest heavy group, which runs after the light kernel: a group walks
// segments_per_block / groups segments one after another, the longest one (at most the
// longest row, at most a panel wide) and the others of mean length, loading indices every
// heavy_lanes nonzeros and tile rows every heavy_unroll nonzeros. (The first benchmark: a
// DLMC layer of 128 rows x ~576 nonzeros took rs 77 µs at K = 32, where the light term alone
// said a few µs.)
double heavy_critical_loads(const Features& f, const nlohmann::json& params, const SplitStats& s) {
  if (s.heavy_segments == 0) return 0.0;
  const double groups = params.at("heavy_threads").get<int>() / params.at("heavy_lanes").get<int>();
  const double per_group = ceil_div(std::min<double>(params.at("segments_per_block").get<int>(), double(s.heavy_segments)), groups);
  const double longest = std::min<double>(double(f.basic.row_max), params.at("panel_width").get<int>());
  const double walk = longest + (per_group - 1.0) * double(s.heavy_nnz) / double(s.heavy_segments);
  return ceil_div(walk, params.at("heavy_lanes").get<int>()) + ceil_div(walk, params.at("heavy_unroll").get<int>());
}

nlohmann::json rs_terms(const Features& f, const SpmmProblem& p, const nlohmann::json& params, const SplitStats& s) {
  nlohmann::json t = base_terms(f, p);
  const double vb = value_bytes(p);
  const double k = p.k;
  const double items = heavy_items(s, params.at("segments_per_block").get<int>());
  const double panel_rows = std::min<double>(params.at("panel_width").get<int>(), f.basic.cols);
  const double k_slices = double(slices(p.k, heavy_slice(params)));
  t["sparse_bytes"] = double(f.basic.nnz) * (4.0 + vb) + (f.basic.rows + 1.0) * 4.0 +
                      (double(s.heavy_segments) * 8.0 + items * 12.0) * k_slices;
  t["critical_nnz"] = std::min<double>(double(f.basic.row_max), double(s.panels) * (s.threshold - 1));
  t["critical_loads"] = light_critical_loads(t["critical_nnz"].get<double>(), params, p.transpose_a) +
                        heavy_critical_loads(f, params, s);
  t["launch"] = s.heavy_segments > 0 ? 2.0 : 1.0;
  if (!p.transpose_a) {
    t["gather_bytes"] = double(s.light_nnz) * k * vb;
    t["panel_bytes"] = items * panel_rows * k * vb;
    t["shared_bytes"] = double(s.heavy_nnz) * k * vb;
    t["atomic_bytes"] = double(s.heavy_segments) * k * vb;
  } else {
    t["launch"] = t["launch"].get<double>() + 1.0;  // the memset
    t["gather_bytes"] = double(s.light_rows + s.heavy_segments) * k * vb;
    t["shared_atomic_bytes"] = double(s.heavy_nnz) * k * vb;
    t["atomic_bytes"] = (double(s.light_nnz) + items * panel_rows) * k * vb;
  }
  return t;
}

// dense: one GEMM over all rows x cols entries of A, zeros included (its own terms, none of
// the sparse kernels'): the flops; the bytes of the dense copy, B and C; and the flops of one
// multiprocessor's share when the output has fewer 128x128 tiles than the device has
// multiprocessors (cuBLAS then splits the inner dimension, at a cost the fit prices), so a
// few-row layer with long rows is not priced as if the whole device worked on it.
nlohmann::json dense_terms(const Features& f, const SpmmProblem& p, const DeviceTarget& device) {
  const double vb = value_bytes(p);
  const double rows = f.basic.rows, cols = f.basic.cols, k = p.k;
  const double outer = p.transpose_a ? cols : rows;
  const double inner = p.transpose_a ? rows : cols;
  const double flops = 2.0 * rows * cols * k;
  const double tiles = ceil_div(outer, kGemmTile) * ceil_div(k, kGemmTile);
  return {{"launch", 1.0},
          {"dense_flops", flops},
          {"dense_bytes", (rows * cols + inner * k + outer * k) * vb},
          {"dense_serial_flops", flops / std::max(1.0, std::min<double>(tiles, device.multiprocessors))}};
}

std::string dense_rejection(const Features& f, const SpmmProblem& p) {
  const double bytes = double(f.basic.rows) * double(f.basic.cols) * value_bytes(p);
  if (bytes > kDenseMaxBytes)
    return "its dense copy of A (" + std::to_string(f.basic.rows) + "x" + std::to_string(f.basic.cols) + ", " +
           std::to_string(int64_t(bytes)) + " bytes) would exceed " + std::to_string(int64_t(kDenseMaxBytes)) + " bytes";
  return "";
}

// ---------------------------------------------------------------------------------------
// Checks of (possibly forced) parameters: InvalidInputError naming the value.
void require_one_of(const std::string& variant, const nlohmann::json& params, const char* key, std::initializer_list<int> allowed) {
  const int v = params.at(key).get<int>();
  std::string list;
  for (int a : allowed) {
    if (a == v) return;
    list += (list.empty() ? "" : ", ") + std::to_string(a);
  }
  throw InvalidInputError(variant + ": " + key + " = " + std::to_string(v) + " must be one of " + list);
}

// vec_width: single values, or the 16-byte vector when it divides K and both leading dimensions.
void check_vector_width(const std::string& variant, const nlohmann::json& params, const SpmmProblem& p) {
  const int vec = params.at("vec_width").get<int>();
  if (vec != 1 && vec != 16 / value_bytes(p))
    throw InvalidInputError(variant + ": vec_width = " + std::to_string(vec) + " must be 1 or " + std::to_string(16 / value_bytes(p)));
  if (vec > 1 && vector_width(p) < vec)
    throw InvalidInputError(variant + ": vec_width = " + std::to_string(vec) + " does not divide K = " + std::to_string(p.k) +
                            ", ldb = " + std::to_string(ld_or_k(p.ldb, p.k)) + " and ldc = " + std::to_string(ld_or_k(p.ldc, p.k)));
}

void check_light_params(const std::string& variant, const nlohmann::json& params, const SpmmProblem& p) {
  require_one_of(variant, params, "lanes_per_row", {8, 16, 32});
  require_one_of(variant, params, "cf_h", {1, 2, 4});
  require_one_of(variant, params, "unroll", {1, 2, 4, 8});
  require_one_of(variant, params, "block_threads", {64, 128, 256, 512, 1024});
  check_vector_width(variant, params, p);
}

void check_merge_params(const nlohmann::json& params, const SpmmProblem& p) {
  require_one_of("csr_merge", params, "lanes", {8, 16, 32});
  require_one_of("csr_merge", params, "cf", {1, 2, 4});
  require_one_of("csr_merge", params, "unroll", {1, 2, 4, 8});
  require_one_of("csr_merge", params, "block_threads", {64, 128, 256, 512, 1024});
  const int range = params.at("nnz_per_group").get<int>();
  if (range < 1 || range > 4096)
    throw InvalidInputError("csr_merge: nnz_per_group = " + std::to_string(range) + " must be in [1, 4096]");
  check_vector_width("csr_merge", params, p);
}

void check_rowsplit_params(const nlohmann::json& params, const SpmmProblem& p) {
  require_one_of("csr_rowsplit", params, "lanes", {8, 16, 32});
  require_one_of("csr_rowsplit", params, "cf", {1, 2, 4});
  require_one_of("csr_rowsplit", params, "unroll", {1, 2, 4, 8});
  require_one_of("csr_rowsplit", params, "parts", {2, 4, 8, 16});
  if (params.at("parts").get<int>() < params.at("cf").get<int>())  // the final sum takes a thread per vector
    throw InvalidInputError("csr_rowsplit: parts = " + params.at("parts").dump() + " must be >= cf = " + params.at("cf").dump());
  check_vector_width("csr_rowsplit", params, p);
}

void check_rs_params(const nlohmann::json& params, const SpmmProblem& p, const DeviceTarget& device) {
  check_light_params("rs", params, p);
  require_one_of("rs", params, "heavy_lanes", {8, 16, 32});
  require_one_of("rs", params, "cf_v", {1, 2, 4});
  require_one_of("rs", params, "heavy_unroll", {1, 2, 4, 8});
  require_one_of("rs", params, "heavy_threads", {64, 128, 256, 512, 1024});
  for (const char* key : {"threshold", "panel_width", "segments_per_block", "blocks_per_sm"}) {
    if (params.at(key).get<int64_t>() < 1)
      throw InvalidInputError(std::string("rs: ") + key + " = " + params.at(key).dump() + " must be >= 1");
  }
  const int64_t shared = int64_t(params.at("panel_width").get<int>()) * heavy_slice(params) * value_bytes(p);
  if (shared > device.shared_per_block_optin)
    throw InvalidInputError("rs: panel_width = " + params.at("panel_width").dump() + " needs " + std::to_string(shared) +
                            " bytes of shared memory per block, more than the device's " +
                            std::to_string(device.shared_per_block_optin));
}

// The threshold tree's leaf (models/spmm.json "threshold_tree"), recorded in the path.
std::optional<int> threshold_from_tree(Decision& d, const nlohmann::json& model) {
  if (!model.contains("threshold_tree")) return std::nullopt;
  models::TreeResult r = models::evaluate_tree(model.at("threshold_tree"), d.features);
  d.path.insert(d.path.end(), r.path.begin(), r.path.end());
  return r.leaf.get<int>();
}

struct RsChoice {
  nlohmann::json params;
  nlohmann::json terms;
};

// The rs parameters the cost formulas like best over the threshold candidates.
RsChoice best_rs(Decision& d, const Features& f, const SpmmProblem& p, const DeviceTarget& device,
                 const nlohmann::json& model, const SplitStatsSource& split_stats) {
  const nlohmann::json base = rs_base_params(f, p, device, kDefaultBlocksPerSm);
  std::vector<int> thresholds(std::begin(kThresholdGrid), std::end(kThresholdGrid));
  if (const auto t = threshold_from_tree(d, model)) thresholds = {*t};
  const nlohmann::json& costs = model.at("cost");
  RsChoice best;
  double best_ms = std::numeric_limits<double>::infinity();
  for (int t : thresholds) {
    nlohmann::json params = base;
    params["threshold"] = t;
    const SplitStats s = split_stats(params.at("panel_width").get<int>(), t);
    params["segments_per_block"] = segments_per_block(s, params, device);
    nlohmann::json terms = rs_terms(f, p, params, s);
    const double ms = costs.contains("rs") ? models::linear_cost(costs.at("rs"), terms) : 0.0;
    if (best.params.is_null() || ms < best_ms) {
      best_ms = ms;
      best = {params, terms};
    }
  }
  return best;
}

// Of several parameter sets of one variant, the one its cost formula prices lowest (the first
// when the model prices no such variant).
nlohmann::json cheapest_params(const std::string& variant, const std::vector<nlohmann::json>& sets, const nlohmann::json& model,
                               const std::function<nlohmann::json(const nlohmann::json&)>& terms) {
  const nlohmann::json& costs = model.at("cost");
  if (!costs.contains(variant)) return sets.front();
  const nlohmann::json* best = &sets.front();
  double best_ms = std::numeric_limits<double>::infinity();
  for (const nlohmann::json& params : sets) {
    const double ms = models::linear_cost(costs.at(variant), terms(params));
    if (ms < best_ms) {
      best_ms = ms;
      best = &params;
    }
  }
  return *best;
}

// The csr_merge parameters with the range the cost formulas like best among kMergeRanges.
nlohmann::json best_merge_params(const Features& f, const SpmmProblem& p, const nlohmann::json& model) {
  std::vector<nlohmann::json> sets;
  for (int range : kMergeRanges) {
    sets.push_back(merge_base_params(p));
    sets.back()["nnz_per_group"] = range;
  }
  return cheapest_params("csr_merge", sets, model, [&](const nlohmann::json& params) { return csr_merge_terms(f, p, params); });
}

// The csr_rowsplit parameters with the group count the cost formulas like best among
// kRowsplitParts (at least cf: the final sum takes a thread per vector).
nlohmann::json best_rowsplit_params(const Features& f, const SpmmProblem& p, const DeviceTarget& device, const nlohmann::json& model) {
  std::vector<nlohmann::json> sets;
  for (int parts : kRowsplitParts) {
    nlohmann::json params = rowsplit_params(p, parts);
    if (parts >= params.at("cf").get<int>()) sets.push_back(params);
  }
  return cheapest_params("csr_rowsplit", sets, model, [&](const nlohmann::json& params) { return csr_rowsplit_terms(f, p, params, device); });
}

// cuSPARSE's algorithm: CSR_ALG3 (preprocessed, the fastest for A·B on most shapes of the
// H200 benchmark), CSR_ALG2 for Aᵀ·B, which ALG3 does not compute.
int vendor_algorithm(const SpmmProblem& p) { return p.transpose_a ? 2 : 3; }

std::string type_rejection(const SpmmProblem& p) {
  const bool supported = p.dtype == DType::F32 || p.dtype == DType::F64;
  return supported ? "" : std::string("value type ") + to_string(p.dtype) + " not supported";
}

std::vector<VariantSpec> spmm_candidates(const SpmmProblem& p, const nlohmann::json& rs_params, const nlohmann::json& merge_params,
                                         const nlohmann::json& rowsplit_params, bool have_split, const std::string& dense_reason) {
  const std::string type_reason = type_rejection(p);
  // Each lane keeps cols_per_lane columns of C in registers, so one pass over a row covers
  // 32 * cols_per_lane columns; past 128 columns a second pass beats register pressure.
  const int cols_per_lane = std::clamp((p.k + 31) / 32, 1, 4);
  VariantSpec rowwarp{"csr_rowwarp", {{"warps_per_block", 4}, {"cols_per_lane", cols_per_lane}}, type_reason};
  if (rowwarp.rejected_because.empty() && p.transpose_a) rowwarp.rejected_because = "computes A·B only (Aᵀ·B needs the split variants)";
  VariantSpec vector{"csr_vector", type_reason.empty() ? light_params(p) : nlohmann::json::object(), type_reason};
  VariantSpec rowsplit{"csr_rowsplit", rowsplit_params, type_reason};
  if (rowsplit.rejected_because.empty() && p.transpose_a) rowsplit.rejected_because = "computes A·B only";
  VariantSpec merge{"csr_merge", merge_params, type_reason};
  VariantSpec rs{"rs", rs_params, type_reason};
  if (rs.rejected_because.empty() && !have_split) rs.rejected_because = "needs the matrix pattern to measure the split";
  VariantSpec dense{"dense", nlohmann::json::object(), type_reason.empty() ? dense_reason : type_reason};
  VariantSpec vendor{"cusparse", {{"alg", vendor_algorithm(p)}}, type_reason};
  return {rowwarp, vector, rowsplit, rs, merge, dense, vendor};
}

// A forced rs choice without a panel width (or read-ahead) gets the formula's width (and
// read-ahead) for its own slice, before choose() prices it.
void complete_forced_rs(std::optional<ForcedChoice>& forced, const nlohmann::json& rs_defaults, const Features& f,
                        const SpmmProblem& p, const DeviceTarget& device) {
  if (!forced || forced->variant != "rs") return;
  const nlohmann::json merged = merge_params("rs", rs_defaults, forced->params);
  if (!forced->params.contains("heavy_unroll")) forced->params["heavy_unroll"] = heavy_unroll_for(merged.at("cf_v").get<int>());
  if (!forced->params.contains("panel_width")) {
    const int64_t row_bytes = int64_t(slice_columns(merged.at("heavy_lanes").get<int>(), merged.at("vec_width").get<int>(),
                                                    merged.at("cf_v").get<int>())) * value_bytes(p);
    forced->params["panel_width"] = panel_width_for(device, f.basic.cols, row_bytes, merged.at("blocks_per_sm").get<int>());
  }
}

void check_params(const std::string& variant, const nlohmann::json& params, const SpmmProblem& p, const DeviceTarget& device) {
  if (variant == "csr_vector") check_light_params("csr_vector", params, p);
  if (variant == "csr_merge") check_merge_params(params, p);
  if (variant == "csr_rowsplit") check_rowsplit_params(params, p);
  if (variant == "rs") check_rs_params(params, p, device);
  if (variant == "cusparse") {
    require_one_of("cusparse", params, "alg", {1, 2, 3});
    if (p.transpose_a && params.at("alg").get<int>() == 3) throw InvalidInputError("cusparse: alg = 3 (CSR_ALG3) computes A·B only, not Aᵀ·B");
  }
}

}  // namespace

std::vector<std::string> spmm_variants() {
  std::vector<std::string> names;
  const nlohmann::json none = nlohmann::json::object();
  for (const auto& v : spmm_candidates({}, none, none, none, false, "")) names.push_back(v.name);
  return names;
}

Decision plan_spmm(const Features& features, const SpmmProblem& problem, const DeviceTarget& device, const Options& options,
                   const SplitStatsSource& split_stats) {
  if (problem.k < 1) throw InvalidInputError("spmm: k = " + std::to_string(problem.k) + " must be >= 1");
  Decision d;
  d.op = Op::SpMM;
  d.device = device.name;
  d.sm = device.sm;
  d.features = to_json(features);
  d.features["k"] = problem.k;
  d.features["value_bytes"] = size_of(problem.dtype);
  d.features["transpose_a"] = problem.transpose_a;
  // Accumulations per nonzero: how much of the clustering survives the column panels (a
  // threshold-tree feature, comparable across matrix sizes).
  d.features["accumulations_per_nnz"] =
      features.basic.nnz > 0 ? double(features.clustering.accumulations) / double(features.basic.nnz) : 0.0;
  const auto model_ptr = planner_model(Op::SpMM, device);  // tuned model of this device, else shipped
  const nlohmann::json& model = *model_ptr;
  const bool priced = type_rejection(problem).empty();
  const bool have_split = bool(split_stats) && priced;
  RsChoice rs;
  if (have_split) rs = best_rs(d, features, problem, device, model, split_stats);
  else if (priced) rs.params = rs_base_params(features, problem, device, kDefaultBlocksPerSm);
  const nlohmann::json merge = priced ? best_merge_params(features, problem, model) : nlohmann::json::object();
  const nlohmann::json rowsplit = priced ? best_rowsplit_params(features, problem, device, model) : nlohmann::json::object();
  auto forced = forced_choice(Op::SpMM, options);
  if (have_split) complete_forced_rs(forced, rs.params, features, problem, device);
  // Only eligible candidates are priced: the value type is supported and, for rs, the split
  // statistics exist.
  const CostTerms terms = [&](const std::string& variant, const nlohmann::json& params) {
    if (variant == "csr_rowwarp") return csr_rowwarp_terms(features, problem, params);
    if (variant == "csr_vector") return csr_vector_terms(features, problem, params);
    if (variant == "csr_merge") return csr_merge_terms(features, problem, params);
    if (variant == "csr_rowsplit") return csr_rowsplit_terms(features, problem, params, device);
    if (variant == "dense") return dense_terms(features, problem, device);
    if (variant == "rs") {
      if (params == rs.params) return rs.terms;
      return rs_terms(features, problem, params, split_stats(params.at("panel_width").get<int>(), params.at("threshold").get<int>()));
    }
    return base_terms(features, problem);
  };
  choose(d, spmm_candidates(problem, rs.params, merge, rowsplit, have_split, dense_rejection(features, problem)), model, terms, forced,
         [&](const std::string& variant, const nlohmann::json& params) { check_params(variant, params, problem, device); });
  const std::string bucket = spmm_bucket(features, problem);
  d.features["feature_bucket"] = bucket;
  apply_tuned_choice(d, device, bucket);
  check_params(d.variant, d.params, problem, device);
  return d;
}

std::vector<TimedChoice> spmm_neighbors(const std::string& variant, const nlohmann::json& params, const SpmmProblem& problem,
                                       const DeviceTarget& device) {
  using json = nlohmann::json;
  const auto get = [&](const char* key) { return params.at(key).get<int>(); };
  std::vector<json> changes;
  if (variant == "csr_vector") {
    // Half the lanes per row with twice the vectors each (two rows per warp: short rows), and back.
    changes = {{{"lanes_per_row", get("lanes_per_row") / 2}, {"cf_h", get("cf_h") * 2}},
               {{"lanes_per_row", get("lanes_per_row") * 2}, {"cf_h", get("cf_h") / 2}}};
  } else if (variant == "csr_rowsplit") {
    changes = {{{"parts", get("parts") / 2}},
               {{"parts", get("parts") * 2}},
               {{"lanes", get("lanes") / 2}},  // K in twice the slices: twice the blocks
               {{"unroll", get("unroll") * 2}}};
  } else if (variant == "csr_merge") {
    changes = {{{"nnz_per_group", get("nnz_per_group") / 2}}, {{"nnz_per_group", get("nnz_per_group") * 2}}};
  } else if (variant == "cusparse") {
    for (int alg : {1, 2, 3}) changes.push_back({{"alg", alg}});
  }
  return valid_neighbours(variant, params, changes, [&](const json& n) { check_params(variant, n, problem, device); });
}

std::vector<std::pair<std::string, nlohmann::json>> spmm_search_space(const Features& features, const SpmmProblem& problem,
                                                                      const DeviceTarget& device) {
  std::vector<std::pair<std::string, nlohmann::json>> space;
  if (!type_rejection(problem).empty()) return space;
  const int vec = vector_width(problem);
  const int units = vector_units(problem, vec);
  // A coarsening factor past what covers K only idles lanes, except 1 which is always valid.
  auto useful_cf = [&](int lanes, int cf) { return cf == 1 || (cf - 1) * lanes < units; };
  std::vector<int> lanes_and_32{lanes_for(units)};
  if (lanes_and_32[0] != 32) lanes_and_32.push_back(32);
  if (!problem.transpose_a) {
    space.emplace_back("csr_rowwarp", nlohmann::json{{"warps_per_block", 4}, {"cols_per_lane", std::clamp((problem.k + 31) / 32, 1, 4)}});
  }
  for (int lanes : {8, 16, 32}) {
    for (int cf : {1, 2}) {
      if (!useful_cf(lanes, cf)) continue;
      nlohmann::json params = light_params(problem);
      params["lanes_per_row"] = lanes;
      params["cf_h"] = cf;
      space.emplace_back("csr_vector", params);
    }
  }
  // csr_rowsplit (A·B): the lanes covering K and 32 lanes, every group count of at least cf.
  if (!problem.transpose_a) {
    for (int lanes : lanes_and_32) {
      for (int parts : kRowsplitParts) {
        nlohmann::json params = rowsplit_params(problem, parts);
        params["lanes"] = lanes;
        params["cf"] = cf_for(problem, vec, lanes);
        if (parts >= params.at("cf").get<int>()) space.emplace_back("csr_rowsplit", params);
      }
    }
  }
  // csr_merge: the lanes covering K and 32 lanes (fewer vectors per lane, more columns per
  // group), every searched range, and unroll 4 or 8 B rows in flight.
  for (int lanes : lanes_and_32) {
    for (int range : kSearchMergeRanges) {
      for (int unroll : {4, 8}) {
        nlohmann::json params = merge_base_params(problem);
        params["lanes"] = lanes;
        params["cf"] = cf_for(problem, vec, lanes);
        params["nnz_per_group"] = range;
        params["unroll"] = unroll;
        space.emplace_back("csr_merge", params);
      }
    }
  }
  for (int blocks_per_sm : {2, 3, 4}) {
    for (int threshold : kSearchThresholds) {
      for (int cf_v : {1, 2, 4}) {
        for (int cf_h : {1, 2}) {
          nlohmann::json params = rs_base_params(features, problem, device, blocks_per_sm);
          const int lanes = params.at("heavy_lanes").get<int>();
          if (!useful_cf(lanes, cf_v) || !useful_cf(params.at("lanes_per_row").get<int>(), cf_h)) continue;
          params["cf_v"] = cf_v;
          params["heavy_unroll"] = heavy_unroll_for(cf_v);
          params["cf_h"] = cf_h;
          params["threshold"] = threshold;
          params["panel_width"] = panel_width_for(device, features.basic.cols,
                                                  int64_t(heavy_slice(params)) * value_bytes(problem), blocks_per_sm);
          space.emplace_back("rs", params);
        }
      }
    }
  }
  if (dense_rejection(features, problem).empty()) space.emplace_back("dense", nlohmann::json::object());
  space.emplace_back("cusparse", nlohmann::json{{"alg", vendor_algorithm(problem)}});
  return space;
}

}  // namespace sparsejit::plan
