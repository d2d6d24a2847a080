// What tiled_shared and reindexed_tiled share (the GPU-Shared and GPU-Preprocessing kernels
// of templates/sddmm_tiled.cu): S cut in tile_rows x tile_cols tiles (formats/sddmm_tiles.hpp,
// plain or over each row panel's used columns), each tile's B rows staged in shared memory, K
// in slices over the grid's second dimension, the results of a tile's lane groups combined by
// atomics or a reduction. Everything but the staged columns, the admission and the traits.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "variants/sddmm/sddmm_variant.hpp"

namespace sparsejit::variants::sddmm {

class TiledVariant : public SddmmVariantOf<TiledVariant> {
 public:
  TiledVariant(std::string name, int rank, std::string summary, Traits traits, bool reindexed)
      : SddmmVariantOf(std::move(name), rank, std::move(summary), traits), reindexed_(reindexed) {}

  nlohmann::json defaults(const SddmmPlanInputs& in) const override;
  void check(const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const override;
  nlohmann::json cost_terms(const SddmmPlanInputs& in, const nlohmann::json& params) const override;
  std::vector<nlohmann::json> neighbour_changes(const plan::SddmmProblem& problem, const plan::DeviceTarget& device,
                                                const nlohmann::json& params) const override;
  std::vector<nlohmann::json> search_space(const SddmmPlanInputs& in) const override;
  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                            const plan::DeviceTarget& device) const override;

  // T: float or double (instantiated in tiled.cpp).
  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const;

 protected:
  // The B rows the tiles of S stage in all, and the tiles of one row panel, when `nnz`
  // nonzeros of `cols` columns spread uniformly over `panels` row panels.
  struct Staging {
    double staged_rows = 0;
    double tiles_per_panel = 0;
  };
  virtual Staging staging(double nnz, double cols, double panels, double tile_cols) const = 0;

 private:
  const bool reindexed_;  // tiles over each panel's used columns (the kernel's `reindexed`)
};

}  // namespace sparsejit::variants::sddmm
