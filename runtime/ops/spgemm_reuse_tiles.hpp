// SpGEMM's numeric phase by tiles (plan/spgemm_reuse.hpp times it on the first call where tile
// products are dense; templates/spgemm_bitmap_tc.cu computes, variants/spgemm/bitmap_passes.hpp
// runs its passes): the first spgemm_numeric on a C runs bitmap_tc's pattern steps once (A's
// and B's 8 x 8 tiles, every tile product sorted under C's tile, C's tiles' bitmaps and where
// their rows start in C), checks that they give C's pattern, and keeps their arrays on C's
// handle. Every call then packs A's (and B's) values into their tiles and sums each tile of C's
// tile products on tensor cores (f64 DMMA, f32 the 3xTF32 split): work by the tile product, not
// by the scalar product, so it pays where a tile product holds many (block-dense meshes).
// Like bitmap_tc, a tile product multiplies a tile's zeros too: an Inf or NaN of A or B reaches
// the C entries of its tile row or column that share a tile product with it.
#pragma once

#include <memory>
#include <string>

#include "sparsejit/device_matrix.hpp"
#include "sparsejit/features.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::ops {

// What a C keeps for the numeric phase by tiles.
template <class T>
struct TileSums;

// Builds them for c = A·B, with two synchronizations (the tile count, then the pattern check),
// or returns none with the reason in `why` (no tile products, or C's pattern is not the one
// the tiles give). On success `why` describes them. C's arrays must be complete in the
// stream's order.
template <class T>
std::shared_ptr<TileSums<T>> build_tile_sums(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& operands,
                                             const DeviceCsr<T>& c, const SpgemmFeatures& features, std::string& why);

// C's values into `values` on the operands' stream: A's (and B's) values packed, then one
// multiply kernel.
template <class T>
void compute_tile_sums(const TileSums<T>& sums, const variants::SpgemmOperands<T>& operands, CUdeviceptr values);

}  // namespace sparsejit::ops
