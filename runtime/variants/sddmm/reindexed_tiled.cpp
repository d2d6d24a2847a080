// reindexed_tiled (GPU-Preprocessing): like tiled_shared (tiled.hpp), with tiles over each row
// panel's used columns only, so no staged B row goes unused. The per-pattern column reindexing
// is built on the host and pays only when the pattern is reused: admitted only for reused
// patterns (Options::reuse, SddmmProblem::pattern_seen), and no leaf of the decision tree,
// which decides for a first call too.
#include <algorithm>
#include <cmath>

#include "variants/sddmm/sddmm_common.hpp"
#include "variants/sddmm/tiled.hpp"

namespace sparsejit::variants::sddmm {

class ReindexedTiled final : public TiledVariant {
 public:
  ReindexedTiled()
      : TiledVariant("reindexed_tiled", 80,
                     "GPU-Preprocessing: like tiled_shared, tiles over each panel's used columns only",
                     Traits{}.reused_only().not_a_leaf(), true) {}

  std::string rejected(const SddmmPlanInputs& in) const override {
    const std::string why = SddmmVariant::rejected(in);
    if (!why.empty() || in.pattern_reused) return why;
    return "builds a per-pattern column reindexing: only for reused patterns (Options::reuse = Reuse::Many, or a handle "
           "that already served an SDDMM call)";
  }

 protected:
  // The used (panel, column) pairs are staged, tile_cols of them per tile.
  Staging staging(double nnz, double cols, double panels, double tile_cols) const override {
    const double staged_rows = occupied(nnz, panels * cols);
    return {staged_rows, std::ceil(staged_rows / std::max(panels, 1.0) / tile_cols)};
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, reindexed_tiled, sparsejit::variants::sddmm::ReindexedTiled)
