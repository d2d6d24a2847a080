// How SpAMM's C is shared among several GPUs (cuSpAMM 3.6's load balance): C's tile rows in
// contiguous blocks, one per GPU, cut where the kept tile products, not the rows, are even.
// A GPU's block of C needs its rows of A and all of B; the kept products are its work.
#pragma once

#include <cstdint>
#include <vector>

#include "sparsejit/features.hpp"

namespace sparsejit::plan {

// Kept tile products per tile row i of C at τ: #{(k, j) : ‖A_ik‖·‖B_kj‖ ≥ τ}, the kernels'
// test; a row map of A (tile_rows × tile_inner) and B's map (tile_inner × tile_cols).
// O(tile_inner · tile_cols · log) per row (B's rows sorted once), rows counted on every core.
// The CPU specification of templates/spamm_row_counts.cu, which the spread call runs (on the
// host this took 10-17 ms at N = 32768, tile 64, on 64 and on 2 cores).
std::vector<int64_t> kept_per_tile_row(const NormMap& a, const NormMap& b, double tau);

// A GPU's block: tile rows [first, end) and the products kept in them.
struct RowBlock {
  int32_t first = 0, end = 0;
  int64_t kept = 0;
};

// `parts` contiguous blocks covering every row, cut where the running sum of `kept` is nearest
// to each even share of the total. A block may be empty when rows are fewer than parts.
// InvalidInputError for parts < 1 or a negative count.
std::vector<RowBlock> split_rows(const std::vector<int64_t>& kept, int parts);
// The same with block p cut nearest the share shares[p] of the total (shares ≥ 0, summing to
// 1 within 1e-6; InvalidInputError naming the value otherwise).
std::vector<RowBlock> split_rows(const std::vector<int64_t>& kept, const std::vector<double>& shares);

// How a GPU went in the previous call on the same GPUs: how long after the call's start its
// operands had arrived (0 where they were there already: rank 0, or operands placed on every
// GPU beforehand) and how long its products took per kept tile product (norm pass included).
struct RankPace {
  double start_ms = 0;
  double ms_per_kept = 0;  // ≤ 0: not measured
};

// Shares of the kept products (summing to 1) with which every GPU finishes at once: the finish
// F with Σ_r max(0, F − start_r) / ms_per_kept_r = total, share_r = max(0, F − start_r) /
// ms_per_kept_r / total. A GPU whose operands arrive late takes less, one that waits for none
// (rank 0, which holds them) more: the transfers overlap its products. Unmeasured paces take
// the mean of the measured ones; none measured (or total 0): even shares. InvalidInputError
// for no GPUs or a negative start.
std::vector<double> shares_to_finish_together(const std::vector<RankPace>& paces, int64_t total);

// When the last GPU would finish with these blocks at these paces: max over GPUs of start +
// kept · ms_per_kept (unmeasured paces as above; no pace measured: 0). InvalidInputError when
// the counts differ.
double finish_ms(const std::vector<RankPace>& paces, const std::vector<RowBlock>& blocks);

// How a call's blocks were cut.
enum class CutSource {
  Even,            // no pace measured yet: even shares of the kept products
  FinishTogether,  // the shares with which every GPU finishes at once at the paces
  Previous,        // the blocks the paces were measured on, again
};
const char* to_string(CutSource source);

struct BlockCut {
  std::vector<RowBlock> blocks;
  std::vector<double> shares;  // each block's share of the kept products as planned
  CutSource source = CutSource::Even;
  double predicted_ms = 0;  // finish_ms at the paces (0 when Even)
};

// The blocks of a call over `kept` (per tile row) for `parts` GPUs: even shares when `paces` is
// null; else the shares that finish together at *paces, unless `previous` (the blocks those
// paces were measured on, covering the same rows) is predicted within 2% of that new cut: then
// those blocks again, their kept products recounted. Keeping a block's rows keeps what was
// prepared for it (its kernels, its part of a distributed C), and four identical GPUs' paces
// differ by up to 13% from call to call. InvalidInputError as split_rows.
BlockCut cut_blocks(const std::vector<int64_t>& kept, int parts, const std::vector<RankPace>* paces,
                    const std::vector<RowBlock>& previous);

// The largest block's kept products over the mean (1: perfect balance; 0 kept: 1).
double imbalance(const std::vector<RowBlock>& blocks);

}  // namespace sparsejit::plan
