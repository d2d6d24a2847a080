// dense_tile: for dense-ish S, each non-empty tile_rows x tile_cols tile computed like a GEMM
// in registers (a micro_rows x micro_cols micro-tile per thread, K in slices staged through
// shared memory, `stages` of them in flight), only S's entries written.
#include <algorithm>
#include <array>

#include "variants/sddmm/dense_tiles.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

namespace {

using nlohmann::json;

// Threads of one block: one per micro-tile, (tile_rows / micro_rows) * (tile_cols / micro_cols).
int64_t dense_tile_threads(const json& params) {
  return (params.at("tile_rows").get<int64_t>() / params.at("micro_rows").get<int64_t>()) *
         (params.at("tile_cols").get<int64_t>() / params.at("micro_cols").get<int64_t>());
}

// The blocks per SM its launch bounds promise: as many as leave each thread registers for its
// micro-tile's accumulators and one 16-byte run per micro row and column, about 64 at 4 x 4
// and 128 at 8 x 8 (left to itself the compiler takes 128 at 4 x 4, hoisting the reads of the
// whole slice, and halves the blocks per SM).
int64_t dense_tile_min_blocks(const json& params) {
  const int64_t micro_rows = params.at("micro_rows").get<int64_t>(), micro_cols = params.at("micro_cols").get<int64_t>();
  const int64_t registers = micro_rows * micro_cols + 4 * (micro_rows + micro_cols) + 16;  // 64 at 4 x 4
  const int64_t per_block = dense_tile_threads(params) * pow2_at_least(registers);
  return std::max<int64_t>(1, 65536 / per_block);
}

jit::KernelSpec dense_tile_spec(const Decision& d, DType dtype) {
  const int width = d.params.at("vector_width").get<int>();
  const int tile_cols = d.params.at("tile_cols").get<int>();
  return {"sddmm_dense_tile.cu", "sj_sddmm_dense_tile",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", dtype == DType::F64 ? "double" : "float"},
           {"run_t", vec_type(dtype, 16 / int(size_of(dtype)))}, {"vec_width", width},
           {"tile_rows", d.params.at("tile_rows")}, {"tile_cols", tile_cols}, {"words", (tile_cols + 63) / 64},
           {"slice", d.params.at("slice")}, {"stages", dense_tile_stages(d.params)},
           {"micro_rows", d.params.at("micro_rows")}, {"micro_cols", d.params.at("micro_cols")},
           {"block_size", dense_tile_threads(d.params)},
           {"min_blocks", dense_tile_min_blocks(d.params)}, {"fp16", false}, {"bf16", false}},
          {}};
}

}  // namespace

class DenseTile final : public SddmmVariantOf<DenseTile> {
 public:
  DenseTile()
      : SddmmVariantOf("dense_tile", 40,
                       "dense-ish S: each non-empty tile computed like a GEMM in registers, only S's entries written") {}

  std::string rejected(const SddmmPlanInputs& in) const override {
    const std::string why = SddmmVariant::rejected(in);
    return why.empty() ? dense_format_rejection(in, name) : why;
  }

  json defaults(const SddmmPlanInputs& in) const override {
    return dense_defaults(in.problem, in.model, name, dense_slice_unit(vector_width(in.problem), in.problem.dtype),
                          {"micro_rows", "micro_cols"});
  }

  void check(const plan::SddmmProblem& problem, const plan::DeviceTarget& device, const json& params) const override {
    check_vector_width(params, problem, name);
    for (const char* micro : {"micro_rows", "micro_cols"}) {
      const int64_t edge = int_param(params, name, micro);
      require(edge == 4 || edge == 8, name, "micro-tile edge " + std::to_string(edge) + " is neither 4 nor 8");
    }
    check_tile_edge(params, name, "tile_rows", "micro_rows");
    check_tile_edge(params, name, "tile_cols", "micro_cols");
    const int64_t threads = dense_tile_threads(params);
    require(threads % 32 == 0 && threads <= 1024, name,
            "(tile_rows / micro_rows) * (tile_cols / micro_cols) = " + std::to_string(threads) +
                " threads is not a multiple of 32 in [32, 1024]");
    const int64_t width = int_param(params, name, "vector_width");
    check_dense_staging(params, device, name, dense_slice_unit(width, problem.dtype),
                        "vector_width = " + std::to_string(width) + " and a 16-byte run of " + to_string(problem.dtype),
                        dense_tile_shared_bytes(params, problem.dtype));
  }

  json cost_terms(const SddmmPlanInputs& in, const json& params) const override { return dense_terms(in, params); }

  std::vector<json> neighbour_changes(const plan::SddmmProblem& problem, const plan::DeviceTarget&,
                                      const json& params) const override {
    return dense_staging_changes(problem, params);
  }

  // It builds a bitmap per tile: measured only where tiles are reasonably full; each slice
  // with two and four of them in flight (at most all of K).
  std::vector<json> search_space(const SddmmPlanInputs& in) const override {
    std::vector<json> space;
    if (!dense_tiles_worth_it(in)) return space;
    const plan::SddmmProblem& problem = in.problem;
    const int width = vector_width(problem);
    const int64_t unit = dense_slice_unit(width, problem.dtype);
    const int64_t long_slice = round_up(std::min<int64_t>(32, problem.k), unit);
    const int64_t short_slice = round_up(std::min<int64_t>(16, problem.k), unit);
    std::vector<int64_t> slices = {long_slice};
    if (short_slice != long_slice) slices.push_back(short_slice);
    for (const auto& [ti, tj, mi, mj] : std::vector<std::array<int64_t, 4>>{
             {64, 64, 4, 4}, {128, 64, 8, 4}, {64, 128, 4, 8}, {128, 128, 8, 8}, {32, 64, 4, 4}, {32, 32, 4, 4}})
      for (int64_t s : slices)
        for (int64_t stages : searched_stages(problem.k, s))
          space.push_back({{"vector_width", width}, {"tile_rows", ti}, {"tile_cols", tj}, {"micro_rows", mi},
                           {"micro_cols", mj}, {"slice", s}, {"stages", stages}});
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                            const plan::DeviceTarget&) const override {
    return {dense_tile_spec(d, problem.dtype)};
  }

  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const {
    const json& params = p.decision.params;
    return dense_execution(p, dense_tile_spec(p.decision, p.problem.dtype), dense_tile_threads(params),
                           dense_tile_shared_bytes(params, p.problem.dtype));
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, dense_tile, sparsejit::variants::sddmm::DenseTile)
