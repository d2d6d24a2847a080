// bitmap_tc: tSparse's SpGEMM over 8 x 8 bitmap tiles with the tile products on tensor cores
// (templates/spgemm_bitmap_tc.cu). A and B are cut into tiles on the device by the first call
// with their handle (formats/spgemm_bitmap_tiles_gpu, a sort of the entries by tile and one
// synchronization; kept on the handle); one call:
//   pack        A's and B's values scattered into their tiles' packed arrays
//   expand      every tile product (tile (I, K) of A times each tile of B's tile row K) gets
//               the key of C's tile (I, J) and the pair of tiles it multiplies
//   sort        CUB's radix sort of the products by key, then the runs of equal keys: C's tiles
//   tiles       each tile of C's bitmap (the OR of its products' boolean products: which slots
//               they reach) and its rows' entries counted into C's row counts; CUB's scans
//               make C's row offsets and the tile rows' first tiles
//   sync        the one synchronization: NNZ(C) and the tile count; C's arrays allocated
//   positions   where each tile's rows start in C (tiles in column order: rows come out sorted)
//   multiply    a warp per 4 consecutive tiles of C sums their tile products on tensor cores
//               (f64: DMMA; f32: TF32 with the 3xTF32 split for f32 accuracy; reduced precision
//               only a caller asks for: precision = "tf32", one TF32 product, or "fp16" /
//               "bf16", the values rounded to them with f32 sums) and writes the tiles'
//               columns and sums
// Every slot the patterns reach is kept, a sum that cancels to zero included (the reference's
// structural product). Against the paper: C's tile pattern comes from one sort instead of a
// counting kernel on tensor cores, and C is CSR, not a tile format.
#include <algorithm>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "formats/spgemm_bitmap_tiles_gpu.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/spgemm/bitmap_passes.hpp"
#include "variants/spgemm/spgemm_variant.hpp"

namespace sparsejit::variants::spgemm {

namespace {

using formats::DeviceBitmapTiles;

bool is_f64(DType dtype) { return dtype == DType::F64; }

// The f32 precisions the multiply pass offers: "full" (3xTF32) and, reduced and opt-in, "tf32",
// "fp16", "bf16".
bool is_half(const std::string& precision) { return precision == "fp16" || precision == "bf16"; }

template <class T>
class BitmapExecution final : public SpgemmExecution<T> {
 public:
  explicit BitmapExecution(BitmapSteps<T> steps) : steps_(std::move(steps)) {}

  SpgemmOutput run(detail::RuntimeState& rt, const SpgemmOperands<T>& o) const override {
    const Context& context = rt.context;
    context.make_current();
    const CUstream stream = o.stream;
    const BitmapSizes& sizes = steps_.sizes();
    const BitmapLayout& layout = steps_.layout();
    int m = o.a.rows();
    SpgemmOutput c;
    cuda::ScratchPool& results = cuda::result_pool(context);
    c.row_ptr = new_output_array(context, &results, (std::size_t(m) + 1) * 4, stream);
    if (sizes.products == 0) {  // no tile of A meets a tile of B: C is empty
      c.row_ptr.fill_bytes_async(0, stream);
      return c;
    }
    const auto a_tiles = bitmap_tiles_of(context, o.a, sizes.a_tiles, stream), b_tiles = bitmap_tiles_of(context, o.b, sizes.b_tiles, stream);
    const cuda::ScratchPool::Block scratch = rt.scratch_pool().allocate(layout.total, stream);
    const CUdeviceptr base = scratch.ptr();
    steps_.pack(o.a, *a_tiles, base + layout.a_packed, stream, o.early);
    const bool one_operand = &o.a == &o.b;  // A·A: B's packed values are A's
    if (!one_operand) steps_.pack(o.b, *b_tiles, base + layout.b_packed, stream, o.early);
    const CUdeviceptr b_packed = base + (one_operand ? layout.a_packed : layout.b_packed);
    steps_.symbolic(*a_tiles, *b_tiles, base, c.row_ptr.ptr(), stream, o.early);

    struct {
      int32_t runs = 0, nnz = 0;
    } back;
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &back.runs, base + layout.runs, 4, stream);
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &back.nnz, c.row_ptr.ptr() + 4 * std::size_t(m), 4, stream);
    SPARSEJIT_CU(cuStreamSynchronize, stream);
    if (back.runs < 0 || back.runs > sizes.products || back.nnz < 0)
      throw CudaError("bitmap_tc: the sort gave " + std::to_string(back.runs) + " tiles of C from " + std::to_string(sizes.products) +
                      " tile products and NNZ(C) = " + std::to_string(back.nnz) + " (a kernel fault)");
    c.nnz = back.nnz;
    c.col_idx = new_output_array(context, &results, std::size_t(c.nnz) * 4, stream);
    c.values = new_output_array(context, &results, std::size_t(c.nnz) * sizeof(T), stream);
    const cuda::ScratchPool::Block tile_pos = rt.scratch_pool().allocate(std::size_t(tile_pos_bytes(back.runs)), stream);
    steps_.positions(base, c.row_ptr.ptr(), tile_pos.ptr(), stream, o.early);
    steps_.multiply(*a_tiles, *b_tiles, base, b_packed, back.runs, tile_pos.ptr(), c.col_idx.ptr(), c.values.ptr(), stream, o.early);
    return c;  // the scratch blocks are freed on the stream after the kernels above
  }

  // No numeric phase of its own (the call's sorted products are not kept on C): the whole call
  // again. spgemm_numeric's own tiles kernel (ops/spgemm_reuse_tiles) keeps them.
  void recompute(detail::RuntimeState& rt, const SpgemmOperands<T>& o, const SpgemmTarget& c) const override {
    recompute_by_running(*this, rt, o, c);
  }

 private:
  BitmapSteps<T> steps_;
};

}  // namespace

class BitmapTc final : public SpgemmVariantOf<BitmapTc> {
 public:
  BitmapTc()
      : SpgemmVariantOf("bitmap_tc", 30,
                        "tSparse: A and B in 8x8 bitmap tiles, tile products sorted into C's tiles, each tile of C summed "
                        "on tensor cores (f64 DMMA; f32 3xTF32, or TF32 as opt-in reduced precision)") {}

  std::string rejected(const SpgemmPlanInputs& in) const override {
    std::string reason = SpgemmVariant::rejected(in);
    if (!reason.empty()) return reason;
    if (in.device.sm < 80) return "needs tensor cores with f64 and TF32 mma (sm_80 or later); the device is sm_" + std::to_string(in.device.sm);
    const int64_t limit = std::numeric_limits<int32_t>::max();
    if (in.features.tile_products > limit)
      return std::to_string(in.features.tile_products) + " tile products, more than its int32 indices address (2^31-1)";
    return "";
  }

  // precision: "full" (f64 in f64, f32 at f32 accuracy by the 3xTF32 split) or, for f32 only and
  // only when asked for, reduced: "tf32" (one TF32 product per pair), "fp16" or "bf16" (the
  // values rounded to them, f32 sums).
  nlohmann::json defaults(const SpgemmPlanInputs&, std::vector<DecisionStep>&) const override { return {{"precision", "full"}}; }

  void check(const plan::SpgemmProblem& problem, const plan::DeviceTarget&, const nlohmann::json& params) const override {
    const nlohmann::json& precision = params.at("precision");
    const bool known = precision.is_string() && (precision == "full" || precision == "tf32" || is_half(precision));
    if (!known)
      throw InvalidInputError("bitmap_tc: precision = " + precision.dump() + " must be \"full\" or, for f32, \"tf32\", \"fp16\" or \"bf16\"");
    if (precision != "full" && is_f64(problem.dtype))
      throw InvalidInputError("bitmap_tc: precision = " + precision.dump() + " applies to f32 values; f64 runs in f64 (\"full\")");
  }

  // launch: kernels, memsets and CUB's passes (about 16); sync: the one synchronization;
  // tile_build_entries: the device's tiling of A and B (once per handle, priced every call:
  // the planner cannot see a handle's cache); tile_products: expanded, sorted (64-bit keys),
  // ORed and multiplied on tensor cores, each.
  nlohmann::json cost_terms(const SpgemmPlanInputs& in, const nlohmann::json&) const override {
    return {{"launch", 16.0},
            {"sync", 1.0},
            {"tile_build_entries", double(in.features.a.nnz + in.features.b.nnz)},
            {"tile_products", double(in.features.tile_products)},
            {"rows", double(in.problem.m)}};
  }

  // The call's scratch (planned_bitmap_layout), the tile positions at one tile of C per product at most,
  // and the tiles of A and B with their build (the first call on a handle makes them; they
  // stay on the handle).
  int64_t workspace_bytes(const SpgemmPlanInputs& in, const nlohmann::json&) const override {
    const BitmapSizes s = bitmap_sizes(in.features, in.problem.m, in.problem.n);
    return int64_t(planned_bitmap_layout(s, size_of(in.problem.dtype)).total) + tile_pos_bytes(s.products) +
           formats::bitmap_tiles_bytes(in.features.a.nnz) + formats::bitmap_tiles_bytes(in.features.b.nnz);
  }

  std::vector<nlohmann::json> search_space(const SpgemmPlanInputs&) const override { return {{{"precision", "full"}}}; }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpgemmProblem& problem) const override {
    std::vector<jit::KernelSpec> specs;
    for (int pass = 0; pass < kBitmapPassCount; ++pass)
      specs.push_back(bitmap_pass_spec(BitmapPass(pass), problem.dtype, d.params.at("precision")));
    return specs;
  }

  template <class T>
  std::unique_ptr<SpgemmExecution<T>> make(const SpgemmPreparation<T>& p) const {
    Decision& d = p.decision;
    std::vector<cuda::Kernel> kernels;
    for (int pass = 0; pass < kBitmapPassCount; ++pass)
      kernels.push_back(load_kernel(p.rt, d, bitmap_pass_spec(BitmapPass(pass), p.problem.dtype, d.params.at("precision"))).kernel);
    const BitmapSizes s = bitmap_sizes(p.features, p.problem.m, p.problem.n);
    return std::make_unique<BitmapExecution<T>>(BitmapSteps<T>(std::move(kernels), s, executed_bitmap_layout(s, sizeof(T))));
  }
};

}  // namespace sparsejit::variants::spgemm

SPARSEJIT_REGISTER_VARIANT(spgemm, bitmap_tc, sparsejit::variants::spgemm::BitmapTc)
