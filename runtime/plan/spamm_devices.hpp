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

// A general solver, over any unit of work: how a GPU goes, its operands arriving start_ms
// after the call's start (0 where they were there already: rank 0, or operands placed on every
// GPU beforehand) and then ms_per_kept per unit.
struct RankPace {
  double start_ms = 0;
  double ms_per_kept = 0;  // ≤ 0: not measured
};

// Shares of the work (summing to 1) with which every GPU finishes at once: the finish F with
// Σ_r max(0, F − start_r) / ms_per_kept_r = total, share_r = max(0, F − start_r) /
// ms_per_kept_r / total. A GPU whose operands arrive late takes less, one that waits for none
// (rank 0, which holds them) more: the transfers overlap its products. Unmeasured paces take
// the mean of the measured ones; none measured (or total 0): even shares. InvalidInputError
// for no GPUs or a negative start.
std::vector<double> shares_to_finish_together(const std::vector<RankPace>& paces, int64_t total);

// One GPU's block in a timed call: its tile rows, its kept products, when its operands had
// arrived (ms after the call's start) and how long its products took.
struct BlockTiming {
  int32_t rows = 0;
  int64_t kept = 0;
  double start_ms = 0, products_ms = 0;
};

// What the calls of one problem on one set of GPUs measured: each GPU's start, and what the
// products cost, one cost for all the GPUs (those of one host are alike): ms_per_row per tile
// row of C plus ms_per_kept per kept tile product. A tile row costs its walk of the norm maps
// and its writes of C whatever it keeps: on four H200s (fp16, N = 32768, 5%) the block of the
// first rows, which keep fewer products each, took 30% longer per kept product than the others,
// and blocks cut by a pace per kept product alone were re-cut call after call. Fitted by least
// squares over the GPUs' blocks and the calls, the latest call weighing 1/min(calls,
// kPaceMemory) against the ones before: one call's times vary by up to 13%, and since the cost
// is the rows' and not a block's, calls on other blocks still count.
constexpr int kPaceMemory = 8;
class Paces {
 public:
  // Adds a call's timings, one per GPU. InvalidInputError for a GPU count other than the earlier
  // calls' or a negative or non-finite value.
  void add(const std::vector<BlockTiming>& call);
  int calls() const { return calls_; }
  int ranks() const { return int(start_ms_.size()); }
  double start_ms(int rank) const { return start_ms_.at(std::size_t(rank)); }
  double ms_per_row() const { return ms_per_row_; }
  double ms_per_kept() const { return ms_per_kept_; }
  // A cost fitted (some products were timed).
  bool measured() const { return ms_per_row_ > 0 || ms_per_kept_ > 0; }
  // When GPU `rank` would finish `rows` tile rows keeping `kept` products.
  double finish_ms(int rank, int32_t rows, int64_t kept) const {
    return start_ms(rank) + ms_per_row_ * double(rows) + ms_per_kept_ * double(kept);
  }

 private:
  void fit();
  int calls_ = 0;
  std::vector<double> start_ms_;
  // The weighted sums of the normal equations: rows², rows·kept, kept², rows·ms, kept·ms.
  double rr_ = 0, rk_ = 0, kk_ = 0, rt_ = 0, kt_ = 0;
  double ms_per_row_ = 0, ms_per_kept_ = 0;
};

// When the last GPU would finish these blocks (max over GPUs of Paces::finish_ms).
// InvalidInputError when the counts differ.
double finish_ms(const Paces& paces, const std::vector<RowBlock>& blocks);

// How a call's blocks were cut.
enum class CutSource {
  Even,            // no call of the problem timed yet: even shares of the kept products
  FinishTogether,  // the blocks with which every GPU finishes at once at the paces
  Previous,        // the blocks the last call ran, again
};
const char* to_string(CutSource source);

struct BlockCut {
  std::vector<RowBlock> blocks;
  std::vector<double> shares;  // each block's share of the kept products
  CutSource source = CutSource::Even;
  double predicted_ms = 0;  // finish_ms at the paces (0 when Even)
};

// The blocks of a call over `kept` (per tile row) for `parts` GPUs: even shares of the kept
// products when `paces` is null or measured nothing; else the blocks with which all finish
// together (each tile row weighing ms_per_row + ms_per_kept · kept, the GPUs' starts as
// measured), unless `previous` (the blocks of the last call, covering the same rows) is
// predicted within 2% of that cut: then those blocks again, their kept products recounted.
// InvalidInputError as split_rows, or for paces of another GPU count.
BlockCut cut_blocks(const std::vector<int64_t>& kept, int parts, const Paces* paces, const std::vector<RowBlock>& previous);

// The largest block's kept products over the mean (1: perfect balance; 0 kept: 1).
double imbalance(const std::vector<RowBlock>& blocks);

}  // namespace sparsejit::plan
