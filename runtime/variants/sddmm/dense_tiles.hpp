// What the dense-tile variants share (dense_tile, dense_mma, dense_wgmma): each non-empty
// tile_rows x tile_cols tile of S is computed densely, only S's entries written, from the
// dense-tile format (formats/sddmm_dense_tiles.hpp: a bitmap per tile), which all three build
// the same way and share on the handle per tile shape. Their tile counts, format size, cost
// terms, the staged K slices of dense_tile and dense_mma, and the execution (one block per
// non-empty tile). Also each one's block formulas that the tests check.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "jit/kernel_spec.hpp"
#include "plan/planner.hpp"
#include "variants/sddmm/sddmm_variant.hpp"

namespace sparsejit::variants::sddmm {

// The tuner measures the dense-tile variants only above this tile fill (64 x 64 tiles), and
// dense_wgmma prices each of its tile widths only there.
inline constexpr double kDenseTileSearchFill = 0.01;
// The dense-tile format grows with the tiles, not the nonzeros: past this estimate a variant
// declines.
inline constexpr double kMaxDenseTileFormatBytes = 1024.0 * 1024 * 1024;

// Whether S's tiles are full enough to be worth counting and measuring (kDenseTileSearchFill).
bool dense_tiles_worth_it(const SddmmPlanInputs& in);

// Bytes of the dense-tile format of `tiles` ti x tj tiles.
double dense_tile_format_bytes(double tiles, double ti, double tj);
// Why the dense-tile format of `variant`'s own default tile (the model's) is not worth
// building for S, or "" (counting the tiles reads every nonzero: ask only for a variant the
// problem already admits).
std::string dense_format_rejection(const SddmmPlanInputs& in, const std::string& variant);

// The cost terms of a dense-tile run with these parameters. dense_tile: FP32-equivalent
// (FP64 runs at half rate); dense_mma and dense_wgmma: f32 only, their tensor-core rate
// (three TF32 products per product) is their own coefficient.
nlohmann::json dense_terms(const SddmmPlanInputs& in, const nlohmann::json& params);

// Elements of a 16-byte run, dense_tile's shared-memory read unit.
int64_t run_elements(DType dtype);
// dense_tile's slice is a multiple of this: whole copies of `width` and whole 16-byte runs.
int64_t dense_slice_unit(int64_t width, DType dtype);

// dense_tile and dense_mma: the model's tile and the thread's (micro_rows, micro_cols) or the
// warp's (warp_rows, warp_cols) part, one K slice when K is short (a multiple of `unit`: for
// dense_tile the vector width and a 16-byte run, for dense_mma an mma step), and as many
// slices in flight as the model says, at most all of them.
nlohmann::json dense_defaults(const plan::SddmmProblem& p, const nlohmann::json& model, const std::string& variant, int64_t unit,
                              const std::array<const char*, 2>& part);

// dense_tile's (and dense_mma's: the same ring, f32) K slices in flight ("stages"; tuning
// records older than the parameter lack it: 1, load then multiply) and the dynamic shared
// memory of one block: stages buffers of tile_rows + tile_cols staged rows of slice elements
// plus a 16-byte run of padding.
int64_t dense_tile_stages(const nlohmann::json& params);
int64_t dense_tile_shared_bytes(const nlohmann::json& params, DType dtype);

// A tile edge of dense_tile or dense_mma: a multiple of its thread's (or warp's) part.
void check_tile_edge(const nlohmann::json& params, const std::string& variant, const char* edge, const char* part);
// What dense_tile and dense_mma share: the slice (whole `unit`s, named by `unit_why`), the
// stages in flight and the shared memory of the ring.
void check_dense_staging(const nlohmann::json& params, const plan::DeviceTarget& device, const std::string& variant, int64_t unit,
                         const std::string& unit_why, int64_t shared_bytes);

// dense_tile's and dense_mma's neighbours: half and twice each tile edge, half the slice
// (twice while shorter than K) and a stage less or more.
std::vector<nlohmann::json> dense_staging_changes(const plan::SddmmProblem& problem, const nlohmann::json& params);
// The stage counts measured for a slice: two and four slices in flight, at most all of K.
std::set<int64_t> searched_stages(int32_t k, int64_t slice);

// Loads the kernel of `spec`, builds (or finds on the handle) the dense-tile format of the
// decision's tile, and launches one block of `threads` per non-empty tile with `shared_bytes`
// of dynamic shared memory. T: float or double.
template <class T>
std::unique_ptr<SddmmExecution<T>> dense_execution(const SddmmPreparation<T>& p, const jit::KernelSpec& spec, int64_t threads,
                                                   int64_t shared_bytes);

// dense_mma (dense_mma.cpp): threads of one block, a warp per warp part, 32 * (tile_rows /
// warp_rows) * (tile_cols / warp_cols).
int64_t dense_mma_threads(const nlohmann::json& params);

// dense_wgmma (dense_wgmma.cpp, sm_90a warpgroup tiles): threads of a block (a warpgroup of
// 128 per 64 tile rows) and its dynamic shared memory (stages slices of 32 for tile_rows +
// tile_cols rows, two of small_b for tile_cols rows, and 1 KB of alignment; at least the
// tile's staged results).
int64_t dense_wgmma_threads(const nlohmann::json& params);
int64_t dense_wgmma_shared_bytes(const nlohmann::json& params);

}  // namespace sparsejit::variants::sddmm
