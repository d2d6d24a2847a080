// tiled_shared (GPU-Shared): S cut in tile_rows x tile_cols tiles, each tile's B rows staged in
// shared memory (tiled.hpp).
#include <algorithm>
#include <cmath>

#include "variants/sddmm/sddmm_common.hpp"
#include "variants/sddmm/tiled.hpp"

namespace sparsejit::variants::sddmm {

class TiledShared final : public TiledVariant {
 public:
  TiledShared()
      : TiledVariant("tiled_shared", 70, "GPU-Shared: S cut in tiles, each tile's B rows staged in shared memory", {},
                     false) {}

 protected:
  // Every column of an occupied tile is staged.
  Staging staging(double nnz, double cols, double panels, double tile_cols) const override {
    const double tiles = occupied(nnz, panels * std::ceil(cols / tile_cols));
    return {tiles * tile_cols, tiles / std::max(panels, 1.0)};
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, tiled_shared, sparsejit::variants::sddmm::TiledShared)
