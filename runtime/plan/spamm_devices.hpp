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
// O(tile_inner · tile_cols · log) per row (B's rows sorted once).
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

// The largest block's kept products over the mean (1: perfect balance; 0 kept: 1).
double imbalance(const std::vector<RowBlock>& blocks);

}  // namespace sparsejit::plan
