// SDDMM executor: plan -> prepare -> compile -> launch for P = S ∘ (A·Bᵀ).
// Measured selection (ops/measured_selection.hpp): on a reused pattern the call times the
// planner's shortlist once, replaces the handle's plan with the fastest and remembers the times
// per pattern fingerprint for other handles.
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "cuda/driver_api.hpp"
#include "formats/coo_rows.hpp"
#include "formats/sddmm_dense_tiles.hpp"
#include "formats/sddmm_panel_chunks.hpp"
#include "formats/sddmm_row_chunks.hpp"
#include "formats/sddmm_tiles.hpp"
#include "ops/call_common.hpp"
#include "ops/measured_selection.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "vendor/cusparse_sddmm.hpp"

namespace sparsejit {

namespace {

constexpr int kScaleBlock = 256;
// Handle cache entry present once the handle has served an SDDMM call.
constexpr const char* kPatternSeenKey = "sddmm:pattern_seen";

template <class T>
constexpr bool kVendorType = std::is_same_v<T, float> || std::is_same_v<T, double>;

// The tile format of formats/sddmm_tiles.hpp in device memory (one plain or reindexed build
// per tile shape), cached on the matrix handle: it depends on the pattern only.
struct DeviceTiles {
  DeviceBuffer tile_row, tile_col, tile_width, tile_ptr, local, position, staged_cols;
  int64_t tiles = 0;
};

std::shared_ptr<DeviceTiles> upload_tiles(const Context& context, const formats::SddmmTiles& host) {
  auto out = std::make_shared<DeviceTiles>();
  out->tile_row = DeviceBuffer::from_host(context, host.tile_row);
  out->tile_col = DeviceBuffer::from_host(context, host.tile_col);
  out->tile_width = DeviceBuffer::from_host(context, host.tile_width);
  out->tile_ptr = DeviceBuffer::from_host(context, host.tile_ptr);
  out->local = DeviceBuffer::from_host(context, host.local);
  out->position = DeviceBuffer::from_host(context, host.position);
  out->staged_cols = DeviceBuffer::from_host(context, host.staged_cols);
  out->tiles = host.tiles();
  return out;
}

// formats/sddmm_row_chunks.hpp in device memory, cached on the handle per max_nnz.
struct DeviceRowChunks {
  DeviceBuffer row, ptr;
  int64_t chunks = 0;
};

// formats/sddmm_panel_chunks.hpp in device memory, cached on the handle per tile shape and max_nnz.
struct DevicePanelChunks {
  DeviceBuffer tile_ptr, row, begin, end;
  int64_t tiles = 0;
};

// formats/sddmm_dense_tiles.hpp in device memory, cached on the handle per tile shape.
struct DeviceDenseTiles {
  DeviceBuffer tile_i, tile_j, bitmap, first;
  int64_t tiles = 0;
};

template <class T>
struct PreparedSddmm {
  std::shared_ptr<const Decision> decision;
  std::optional<cuda::Kernel> kernel;  // coo_flat, tiled, or the vendor's scale step
  cuda::Dim3 grid, block;
  unsigned shared_bytes = 0;
  bool zero_output = false;                       // P is accumulated atomically: zero it first
  std::shared_ptr<const DeviceBuffer> coo_rows;   // coo_flat only
  std::shared_ptr<const DeviceTiles> tiles;       // tiled_shared and reindexed_tiled only
  std::shared_ptr<const DeviceRowChunks> chunks;  // row_gather only
  std::shared_ptr<const DevicePanelChunks> panels;  // panel_gather only
  std::shared_ptr<const DeviceDenseTiles> dense;  // dense_tile, dense_mma and dense_wgmma only
  // Measured selection has run for this plan's pattern and problem, or will not.
  std::atomic<bool> settled{false};

  using OperandKey = std::tuple<const void*, int64_t, const void*, int64_t, CUdeviceptr>;
  std::mutex vendor_mutex;
  std::map<OperandKey, std::unique_ptr<vendor::CusparseSampledDots<T>>> vendor_calls;
};

jit::KernelSpec coo_flat_spec(const Decision& d, DType dtype) {
  const bool f64 = dtype == DType::F64;
  const int width = d.params.at("vector_width").get<int>();
  return {"sddmm_coo_flat.cu", "sj_sddmm_coo_flat",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"},
           {"group_size", d.params.at("group_size")}, {"nnz_per_group", d.params.at("nnz_per_group")},
           {"block_size", d.params.at("threads_per_block")},
           {"vec4", width > 1}, {"vec_t", f64 ? "double2" : "float4"}, {"vec_width", width},
           {"fp16", dtype == DType::F16}, {"bf16", dtype == DType::BF16}},
          {}};
}

bool is_tiled(const Decision& d) { return d.variant == "tiled_shared" || d.variant == "reindexed_tiled"; }

int64_t k_slices(const Decision& d, int32_t k) {
  const int64_t slice = d.params.at("slice").get<int64_t>();
  return (k + slice - 1) / slice;
}

// With one K slice and a reduced group, each result has one writer: a plain store.
bool tiled_stores(const Decision& d, int32_t k) { return d.params.at("combine") == "reduce" && k_slices(d, k) == 1; }

jit::KernelSpec tiled_spec(const Decision& d, DType dtype, int32_t k) {
  const bool f64 = dtype == DType::F64;
  const int width = d.params.at("vector_width").get<int>();
  const int group = d.params.at("group_size").get<int>();
  const int slice = d.params.at("slice").get<int>();
  const bool lane_atomic = d.params.at("combine") == "atomic";
  const std::string vec_t = width == 1 ? cuda_type_name(dtype) : (f64 ? "double2" : "float4");
  return {"sddmm_tiled.cu", "sj_sddmm_tiled",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"}, {"vec_t", vec_t},
           {"vec_width", width}, {"block_size", d.params.at("threads_per_block")},
           {"tile_cols", d.params.at("tile_cols")}, {"slice", slice}, {"group_size", group},
           {"lane_vectors", slice / (width * group)}, {"batch", d.params.value("batch", 1)},
           {"reindexed", d.variant == "reindexed_tiled"},
           {"lane_atomic", lane_atomic}, {"group_reduce", !lane_atomic}, {"store_result", tiled_stores(d, k)},
           {"fp16", false}, {"bf16", false}},
          {}};
}

std::string vec_type(DType dtype, int width) {
  return width == 1 ? cuda_type_name(dtype) : (dtype == DType::F64 ? "double2" : "float4");
}

// row_gather (sddmm_row.cu) or panel_gather (sddmm_row_panels.cu): the same parameters.
jit::KernelSpec row_gather_spec(const Decision& d, DType dtype, int32_t k) {
  const int width = d.params.at("vector_width").get<int>();
  const bool panels = d.variant == "panel_gather";
  return {panels ? "sddmm_row_panels.cu" : "sddmm_row.cu", panels ? "sj_sddmm_row_panels" : "sj_sddmm_row",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", dtype == DType::F64 ? "double" : "float"},
           {"vec_t", vec_type(dtype, width)}, {"vec_width", width}, {"group_size", d.params.at("group_size")},
           {"lane_vectors", plan::sddmm_row_lane_vectors(d.params, k)}, {"unroll", d.params.at("unroll")},
           {"block_size", d.params.at("threads_per_block")}, {"fp16", false}, {"bf16", false}},
          {}};
}

jit::KernelSpec dense_tile_spec(const Decision& d, DType dtype) {
  const int width = d.params.at("vector_width").get<int>();
  const int tile_cols = d.params.at("tile_cols").get<int>();
  return {"sddmm_dense_tile.cu", "sj_sddmm_dense_tile",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", dtype == DType::F64 ? "double" : "float"},
           {"run_t", vec_type(dtype, 16 / int(size_of(dtype)))}, {"vec_width", width},
           {"tile_rows", d.params.at("tile_rows")}, {"tile_cols", tile_cols}, {"words", (tile_cols + 63) / 64},
           {"slice", d.params.at("slice")}, {"stages", plan::sddmm_dense_tile_stages(d.params)},
           {"micro_rows", d.params.at("micro_rows")}, {"micro_cols", d.params.at("micro_cols")},
           {"block_size", plan::sddmm_dense_tile_threads(d.params)},
           {"min_blocks", plan::sddmm_dense_tile_min_blocks(d.params)}, {"fp16", false}, {"bf16", false}},
          {}};
}

jit::KernelSpec dense_mma_spec(const Decision& d) {
  const int tile_cols = d.params.at("tile_cols").get<int>();
  return {"sddmm_dense_mma.cu", "sj_sddmm_dense_mma",
          {{"vec_width", d.params.at("vector_width")}, {"tile_rows", d.params.at("tile_rows")}, {"tile_cols", tile_cols},
           {"words", (tile_cols + 63) / 64}, {"slice", d.params.at("slice")},
           {"stages", plan::sddmm_dense_tile_stages(d.params)}, {"warp_rows", d.params.at("warp_rows")},
           {"warp_cols", d.params.at("warp_cols")}, {"block_size", plan::sddmm_dense_mma_threads(d.params)},
           {"min_blocks", plan::sddmm_dense_mma_min_blocks(d.params)}, {"fp16", false}, {"bf16", false}},
          {}};
}

jit::KernelSpec dense_wgmma_spec(const Decision& d, const plan::DeviceTarget& target) {
  const int tile_cols = d.params.at("tile_cols").get<int>();
  jit::KernelSpec spec{"sddmm_dense_wgmma.cu", "sj_sddmm_dense_wgmma",
                       {{"vec_width", d.params.at("vector_width")}, {"tile_rows", d.params.at("tile_rows")},
                        {"tile_cols", tile_cols}, {"words", (tile_cols + 63) / 64}, {"stages", d.params.at("stages")},
                        {"block_size", plan::sddmm_dense_wgmma_threads(d.params)},
                        {"min_blocks", plan::sddmm_dense_wgmma_min_blocks(d.params, target)}, {"fp16", false}, {"bf16", false}},
                       {}};
  spec.arch_specific = true;  // wgmma: sm_90a
  return spec;
}

bool is_dense(const Decision& d) { return d.variant == "dense_tile" || d.variant == "dense_mma" || d.variant == "dense_wgmma"; }

// The kernel of a dense-tile variant (the executor's and explain's).
jit::KernelSpec dense_spec(const Decision& d, DType dtype, const plan::DeviceTarget& target) {
  if (d.variant == "dense_wgmma") return dense_wgmma_spec(d, target);
  if (d.variant == "dense_mma") return dense_mma_spec(d);
  return dense_tile_spec(d, dtype);
}

jit::KernelSpec scale_spec(DType dtype) {
  return {"sddmm_scale.cu", "sj_sddmm_scale", {{"value_t", cuda_type_name(dtype)}, {"block_size", kScaleBlock}}, {}};
}

template <class T>
void check_sddmm_shapes(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, const DeviceBuffer& p) {
  const std::string s_shape = std::to_string(s.rows()) + "x" + std::to_string(s.cols());
  if (a.rows() != s.rows())
    throw InvalidInputError("sddmm: S is " + s_shape + " but A has " + std::to_string(a.rows()) + " rows");
  if (b.rows() != s.cols())
    throw InvalidInputError("sddmm: S is " + s_shape + " but B has " + std::to_string(b.rows()) + " rows (B is n x k)");
  if (a.cols() != b.cols())
    throw InvalidInputError("sddmm: A has " + std::to_string(a.cols()) + " columns but B has " + std::to_string(b.cols()));
  if (a.cols() < 1) throw InvalidInputError("sddmm: k = " + std::to_string(a.cols()) + " must be >= 1");
  const std::size_t need = std::size_t(s.nnz()) * sizeof(T);
  if (p.bytes() < need)
    throw InvalidInputError("sddmm: P has " + std::to_string(p.bytes()) + " bytes, nnz(S) values need " + std::to_string(need));
}

// Loads (compiling or from the cache) the kernel of `spec` into the plan and records its origin
// in the decision.
template <class T>
void load_kernel(detail::RuntimeState& rt, Decision& d, const jit::KernelSpec& spec, PreparedSddmm<T>& prepared) {
  const ops::LoadedKernel loaded = rt.loader.load(spec);
  ops::record_kernel(d, loaded);
  prepared.kernel = loaded.kernel;
}

// The prepared kernel's dynamic shared memory per block; past the default 48 KB the kernel
// must opt in (the planner has checked the device's limit).
template <class T>
void use_dynamic_shared(PreparedSddmm<T>& prepared, int64_t bytes) {
  prepared.shared_bytes = unsigned(bytes);
  if (bytes > 48 * 1024) prepared.kernel->set_max_dynamic_shared(int(bytes));
}

template <class T>
void prepare_tiled(detail::RuntimeState& rt, const DeviceCsr<T>& s, Decision& d, const plan::SddmmProblem& problem,
                   PreparedSddmm<T>& prepared) {
  load_kernel(rt, d, tiled_spec(d, problem.dtype, problem.k), prepared);
  const int32_t tile_rows = d.params.at("tile_rows").get<int32_t>(), tile_cols = d.params.at("tile_cols").get<int32_t>();
  const bool reindexed = d.variant == "reindexed_tiled";
  const std::string key = std::string("sddmm_tiles:") + (reindexed ? "reindexed:" : "plain:") + std::to_string(tile_rows) +
                          "x" + std::to_string(tile_cols);
  prepared.tiles = s.template get_or_create<DeviceTiles>(key, [&] {
    return upload_tiles(rt.context, formats::build_sddmm_tiles(s.host_pattern(), tile_rows, tile_cols, reindexed));
  });
  const int64_t slices = k_slices(d, problem.k);
  if (slices > 65535)
    throw UnsupportedError("sddmm " + d.variant + ": k = " + std::to_string(problem.k) + " needs " + std::to_string(slices) +
                           " K slices, more than the grid's 65535");
  prepared.block = {d.params.at("threads_per_block").get<unsigned>(), 1, 1};
  prepared.grid = {ops::blocks_for(prepared.tiles->tiles, 1), unsigned(slices), 1};
  use_dynamic_shared(prepared, plan::sddmm_tiled_shared_bytes(d.params, problem.dtype));
  prepared.zero_output = !tiled_stores(d, problem.k);
}

template <class T>
void prepare_row_gather(detail::RuntimeState& rt, const DeviceCsr<T>& s, Decision& d, const plan::SddmmProblem& problem,
                        PreparedSddmm<T>& prepared) {
  load_kernel(rt, d, row_gather_spec(d, problem.dtype, problem.k), prepared);
  const int32_t max_nnz = d.params.at("max_nnz").get<int32_t>();
  prepared.chunks = s.template get_or_create<DeviceRowChunks>("sddmm_row_chunks:" + std::to_string(max_nnz), [&] {
    const formats::RowChunks host = formats::build_row_chunks(s.host_pattern(), max_nnz);
    auto out = std::make_shared<DeviceRowChunks>();
    out->row = DeviceBuffer::from_host(rt.context, host.row);
    out->ptr = DeviceBuffer::from_host(rt.context, host.ptr);
    out->chunks = host.chunks();
    return out;
  });
  const int64_t threads = d.params.at("threads_per_block").get<int64_t>();
  prepared.block = {unsigned(threads), 1, 1};
  prepared.grid = {ops::blocks_for(prepared.chunks->chunks * d.params.at("group_size").get<int64_t>(), threads), 1, 1};
}

template <class T>
void prepare_panel_gather(detail::RuntimeState& rt, const DeviceCsr<T>& s, Decision& d, const plan::SddmmProblem& problem,
                          PreparedSddmm<T>& prepared) {
  load_kernel(rt, d, row_gather_spec(d, problem.dtype, problem.k), prepared);
  const int32_t band_rows = d.params.at("band_rows").get<int32_t>(), panel_cols = d.params.at("panel_cols").get<int32_t>();
  const int32_t max_nnz = d.params.at("max_nnz").get<int32_t>();
  const std::string key = "sddmm_panel_chunks:" + std::to_string(band_rows) + "x" + std::to_string(panel_cols) + ":" +
                          std::to_string(max_nnz);
  prepared.panels = s.template get_or_create<DevicePanelChunks>(key, [&] {
    const formats::PanelChunks host = formats::build_panel_chunks(s.host_pattern(), band_rows, panel_cols, max_nnz);
    auto out = std::make_shared<DevicePanelChunks>();
    out->tile_ptr = DeviceBuffer::from_host(rt.context, host.tile_ptr);
    out->row = DeviceBuffer::from_host(rt.context, host.row);
    out->begin = DeviceBuffer::from_host(rt.context, host.begin);
    out->end = DeviceBuffer::from_host(rt.context, host.end);
    out->tiles = host.tiles();
    return out;
  });
  prepared.block = {d.params.at("threads_per_block").get<unsigned>(), 1, 1};
  prepared.grid = {ops::blocks_for(prepared.panels->tiles, 1), 1, 1};
}

// dense_tile, dense_mma or dense_wgmma: one block per non-empty tile of the (shared) dense-tile format.
template <class T>
void prepare_dense(detail::RuntimeState& rt, const DeviceCsr<T>& s, Decision& d, const plan::SddmmProblem& problem,
                   PreparedSddmm<T>& prepared) {
  const bool mma = d.variant == "dense_mma", wgmma = d.variant == "dense_wgmma";
  load_kernel(rt, d, dense_spec(d, problem.dtype, rt.target), prepared);
  const int32_t tile_rows = d.params.at("tile_rows").get<int32_t>(), tile_cols = d.params.at("tile_cols").get<int32_t>();
  const std::string key = "sddmm_dense_tiles:" + std::to_string(tile_rows) + "x" + std::to_string(tile_cols);
  prepared.dense = s.template get_or_create<DeviceDenseTiles>(key, [&] {
    const formats::DenseTiles host = formats::build_dense_tiles(s.host_pattern(), tile_rows, tile_cols);
    auto out = std::make_shared<DeviceDenseTiles>();
    out->tile_i = DeviceBuffer::from_host(rt.context, host.tile_i);
    out->tile_j = DeviceBuffer::from_host(rt.context, host.tile_j);
    out->bitmap = DeviceBuffer::from_host(rt.context, host.bitmap);
    out->first = DeviceBuffer::from_host(rt.context, host.first);
    out->tiles = host.tiles();
    return out;
  });
  const int64_t threads = wgmma ? plan::sddmm_dense_wgmma_threads(d.params)
                          : mma ? plan::sddmm_dense_mma_threads(d.params)
                                : plan::sddmm_dense_tile_threads(d.params);
  prepared.block = {unsigned(threads), 1, 1};
  prepared.grid = {ops::blocks_for(prepared.dense->tiles, 1), 1, 1};
  use_dynamic_shared(prepared, wgmma ? plan::sddmm_dense_wgmma_shared_bytes(d.params)
                                     : plan::sddmm_dense_tile_shared_bytes(d.params, problem.dtype));
}

// The plan for `options`; with `measured` (times of this pattern's shortlist) the fastest of
// them instead of the model's choice, unless the choice was forced.
template <class T>
std::shared_ptr<PreparedSddmm<T>> prepare_sddmm(detail::RuntimeState& rt, const DeviceCsr<T>& s, const Features& f,
                                                const plan::SddmmProblem& problem, const Options& options,
                                                const std::optional<std::vector<plan::TimedChoice>>& measured = std::nullopt) {
  auto prepared = std::make_shared<PreparedSddmm<T>>();
  Decision d = plan::plan_sddmm(f, problem, rt.target, ops::with_environment_force(Op::SDDMM, options),
                                ops::plan_sources(Op::SDDMM, rt.target));
  const bool took_times = measured && plan::take_fastest(d, *measured, variants::vendor_variant(Op::SDDMM), plan::kSddmmVendorMargin);
  if (d.source == DecisionSource::Forced || took_times) prepared->settled = true;
  prepared->block = {unsigned(kScaleBlock), 1, 1};
  prepared->grid = {ops::blocks_for(s.nnz(), kScaleBlock), 1, 1};
  if (d.variant == "coo_flat") {
    load_kernel(rt, d, coo_flat_spec(d, problem.dtype), *prepared);
    const int threads = d.params.at("threads_per_block").get<int>();
    const int64_t per_group = d.params.at("nnz_per_group").get<int64_t>();
    const int64_t groups = (s.nnz() + per_group - 1) / per_group;
    prepared->block = {unsigned(threads), 1, 1};
    prepared->grid = {ops::blocks_for(groups * d.params.at("group_size").get<int64_t>(), threads), 1, 1};
    prepared->coo_rows = s.template get_or_create<DeviceBuffer>("coo_rows", [&] {
      return std::make_shared<DeviceBuffer>(DeviceBuffer::from_host(rt.context, formats::coo_row_indices(s.host_pattern())));
    });
  } else if (d.variant == "row_gather") {
    prepare_row_gather(rt, s, d, problem, *prepared);
  } else if (d.variant == "panel_gather") {
    prepare_panel_gather(rt, s, d, problem, *prepared);
  } else if (is_dense(d)) {
    prepare_dense(rt, s, d, problem, *prepared);
  } else if (is_tiled(d)) {
    prepare_tiled(rt, s, d, problem, *prepared);
  } else {
    load_kernel(rt, d, scale_spec(problem.dtype), *prepared);
  }
  prepared->decision = std::make_shared<const Decision>(std::move(d));
  return prepared;
}

template <class T>
void run_vendor(detail::RuntimeState& rt, PreparedSddmm<T>& p, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                const DeviceDense<T>& b, DeviceBuffer& out, CUstream stream, bool early) {
  if constexpr (kVendorType<T>) {
    {
      std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
      auto& call = p.vendor_calls[{a.data(), a.ld(), b.data(), b.ld(), out.ptr()}];
      if (!call) {
        if (p.vendor_calls.size() > 8) {
          auto mine = std::move(call);
          p.vendor_calls.clear();
          call = std::move(mine);
        }
        call = std::make_unique<vendor::CusparseSampledDots<T>>(rt.cusparse, s, a, b, out, stream);
      }
      call->run(stream);
    }
    long long nnz = s.nnz();
    CUdeviceptr sv = s.values().ptr(), pv = out.ptr();
    void* args[] = {&nnz, &sv, &pv};
    p.kernel->launch(p.grid, p.block, 0, stream, args, early);
  } else {
    throw UnsupportedError("cuSPARSE SDDMM is wrapped for f32 and f64 only");
  }
}

template <class T>
void launch_tiled(detail::RuntimeState& rt, const PreparedSddmm<T>& prepared, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                  const DeviceDense<T>& b, DeviceBuffer& p, CUstream stream, bool early) {
  if (prepared.zero_output) {
    rt.context.make_current();
    SPARSEJIT_CU(cuMemsetD8Async, p.ptr(), 0, std::size_t(s.nnz()) * sizeof(T), stream);
  }
  const DeviceTiles& t = *prepared.tiles;
  int k = a.cols();
  CUdeviceptr tile_row = t.tile_row.ptr(), tile_col = t.tile_col.ptr(), tile_width = t.tile_width.ptr();
  CUdeviceptr tile_ptr = t.tile_ptr.ptr(), local = t.local.ptr(), position = t.position.ptr(), staged = t.staged_cols.ptr();
  CUdeviceptr sv = s.values().ptr(), ap = a.buffer().ptr(), bp = b.buffer().ptr(), pp = p.ptr();
  long long lda = a.ld(), ldb = b.ld();
  void* args[] = {&k, &tile_row, &tile_col, &tile_width, &tile_ptr, &local, &position, &staged, &sv, &ap, &lda, &bp, &ldb, &pp};
  prepared.kernel->launch(prepared.grid, prepared.block, prepared.shared_bytes, stream, args, early);
}

template <class T>
void launch_row_gather(const PreparedSddmm<T>& prepared, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                       const DeviceDense<T>& b, DeviceBuffer& p, CUstream stream, bool early) {
  long long chunks = prepared.chunks->chunks;
  int k = a.cols();
  CUdeviceptr chunk_row = prepared.chunks->row.ptr(), chunk_ptr = prepared.chunks->ptr.ptr();
  CUdeviceptr cols = s.col_idx().ptr(), sv = s.values().ptr(), ap = a.buffer().ptr(), bp = b.buffer().ptr(), pp = p.ptr();
  long long lda = a.ld(), ldb = b.ld();
  void* args[] = {&chunks, &k, &chunk_row, &chunk_ptr, &cols, &sv, &ap, &lda, &bp, &ldb, &pp};
  prepared.kernel->launch(prepared.grid, prepared.block, 0, stream, args, early);
}

template <class T>
void launch_panel_gather(const PreparedSddmm<T>& prepared, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                         const DeviceDense<T>& b, DeviceBuffer& p, CUstream stream, bool early) {
  const DevicePanelChunks& t = *prepared.panels;
  int k = a.cols();
  CUdeviceptr tile_ptr = t.tile_ptr.ptr(), row = t.row.ptr(), begin = t.begin.ptr(), end = t.end.ptr();
  CUdeviceptr cols = s.col_idx().ptr(), sv = s.values().ptr(), ap = a.buffer().ptr(), bp = b.buffer().ptr(), pp = p.ptr();
  long long lda = a.ld(), ldb = b.ld();
  void* args[] = {&k, &tile_ptr, &row, &begin, &end, &cols, &sv, &ap, &lda, &bp, &ldb, &pp};
  prepared.kernel->launch(prepared.grid, prepared.block, 0, stream, args, early);
}

template <class T>
void launch_dense(const PreparedSddmm<T>& prepared, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                  const DeviceDense<T>& b, DeviceBuffer& p, CUstream stream, bool early) {
  int m = s.rows(), n = s.cols(), k = a.cols();
  const DeviceDenseTiles& t = *prepared.dense;
  CUdeviceptr tile_i = t.tile_i.ptr(), tile_j = t.tile_j.ptr(), bitmap = t.bitmap.ptr(), first = t.first.ptr();
  CUdeviceptr sv = s.values().ptr(), ap = a.buffer().ptr(), bp = b.buffer().ptr(), pp = p.ptr();
  long long lda = a.ld(), ldb = b.ld();
  void* args[] = {&m, &n, &k, &tile_i, &tile_j, &bitmap, &first, &sv, &ap, &lda, &bp, &ldb, &pp};
  prepared.kernel->launch(prepared.grid, prepared.block, prepared.shared_bytes, stream, args, early);
}


template <class T>
void run_prepared(detail::RuntimeState& rt, PreparedSddmm<T>& prepared, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                  const DeviceDense<T>& b, DeviceBuffer& p, CUstream stream, bool early) {
  if (prepared.chunks) {
    launch_row_gather(prepared, s, a, b, p, stream, early);
  } else if (prepared.panels) {
    launch_panel_gather(prepared, s, a, b, p, stream, early);
  } else if (prepared.dense) {
    launch_dense(prepared, s, a, b, p, stream, early);
  } else if (prepared.tiles) {
    launch_tiled(rt, prepared, s, a, b, p, stream, early);
  } else if (prepared.coo_rows) {
    long long nnz = s.nnz();
    int k = a.cols();
    CUdeviceptr rows = prepared.coo_rows->ptr(), cols = s.col_idx().ptr(), sv = s.values().ptr();
    CUdeviceptr ap = a.buffer().ptr(), bp = b.buffer().ptr(), pp = p.ptr();
    long long lda = a.ld(), ldb = b.ld();
    void* args[] = {&nnz, &k, &rows, &cols, &sv, &ap, &lda, &bp, &ldb, &pp};
    prepared.kernel->launch(prepared.grid, prepared.block, 0, stream, args, early);
  } else {
    run_vendor(rt, prepared, s, a, b, p, stream, early);
  }
}

}  // namespace

template <class T>
CallInfo Runtime::sddmm(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceBuffer& p,
                        const Options& options) {
  check_sddmm_shapes(s, a, b, p);
  detail::RuntimeState& rt = *state_;
  // A handle that has served an SDDMM call before has a reused pattern (see SddmmProblem).
  const bool seen = s.find(kPatternSeenKey) != nullptr;
  plan::SddmmProblem problem{a.cols(), dtype_of<T>::value, a.ld(), b.ld(), seen};
  problem.dense_tile_count = [&s](int32_t tile_rows, int32_t tile_cols) {
    const std::string key = "sddmm_dense_tile_count:" + std::to_string(tile_rows) + "x" + std::to_string(tile_cols);
    return *s.template get_or_create<int64_t>(key, [&] {
      return std::make_shared<int64_t>(formats::count_dense_tiles(s.host_pattern(), tile_rows, tile_cols));
    });
  };
  const auto features = ops::cached_features(s);
  bool reused = true;
  const std::string key = ops::plan_key(Op::SDDMM, problem.dtype, problem.k, false, options, rt.id) + ":ld" +
                          std::to_string(a.ld()) + "," + std::to_string(b.ld()) + ":reuse=" + to_string(options.reuse);
  std::shared_ptr<PreparedSddmm<T>> prepared = s.template get_or_create<PreparedSddmm<T>>(key, [&] {
    reused = false;
    return prepare_sddmm<T>(rt, s, *features, problem, options, ops::earlier_times(rt, *features, key, options));
  });
  if (!seen) s.attach(kPatternSeenKey, std::make_shared<bool>(true));
  if (s.nnz() == 0) return {prepared->decision, reused};
  const bool early = ops::launches_early(options, rt.target.sm);
  ops::settle_by_measurement(rt, s, key, *features, options, prepared, reused, [&] {
    return ops::SelectionHooks<PreparedSddmm<T>>{
        "sddmm",
        plan::kSddmmVendorMargin,
        [&](const Options& forced) { return prepare_sddmm<T>(rt, s, *features, problem, forced); },
        [&](const std::vector<plan::TimedChoice>& times) { return prepare_sddmm<T>(rt, s, *features, problem, options, times); },
        [&](PreparedSddmm<T>& plan, CUstream stream) { run_prepared(rt, plan, s, a, b, p, stream, early); },
        [&](const plan::TimedChoice& t) { return plan::sddmm_neighbors(t.variant, t.params, problem, rt.target); }};
  });
  run_prepared(rt, *prepared, s, a, b, p, static_cast<CUstream>(options.stream), early);
  return {prepared->decision, reused};
}

Decision explain_sddmm(PatternView s, int32_t k, DType dtype, const Options& options, int device) {
  if (k < 1) throw InvalidInputError("sddmm: k = " + std::to_string(k) + " must be >= 1");
  const plan::DeviceTarget target = detail::explain_target(device);
  plan::SddmmProblem problem{k, dtype, k, k};
  problem.dense_tile_count = [s](int32_t tile_rows, int32_t tile_cols) { return formats::count_dense_tiles(s, tile_rows, tile_cols); };
  Decision d = plan::plan_sddmm(inspect(s), problem, target, ops::with_environment_force(Op::SDDMM, options),
                                ops::plan_sources(Op::SDDMM, target));
  const jit::KernelSpec spec = d.variant == "coo_flat"     ? coo_flat_spec(d, dtype)
                               : d.variant == "row_gather" || d.variant == "panel_gather" ? row_gather_spec(d, dtype, k)
                               : is_dense(d)               ? dense_spec(d, dtype, target)
                               : is_tiled(d)               ? tiled_spec(d, dtype, k)
                                                           : scale_spec(dtype);
  const jit::CompiledKernel compiled = ops::compile_only(spec, target.sm);
  d.kernel_origin = ops::to_origin(compiled.source);
  d.compile_ms = compiled.compile_ms;
  d.load_ms = compiled.load_ms;
  return d;
}

#define SPARSEJIT_INSTANTIATE(T)                                                                              \
  template CallInfo Runtime::sddmm<T>(const DeviceCsr<T>&, const DeviceDense<T>&, const DeviceDense<T>&, \
                                      DeviceBuffer&, const Options&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
