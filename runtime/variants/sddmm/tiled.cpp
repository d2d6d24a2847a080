#include "variants/sddmm/tiled.hpp"

#include <algorithm>
#include <cmath>

#include "formats/sddmm_tiles.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

namespace {

using nlohmann::json;

// Panel height so that a Ti x Tj tile holds about `target` nonzeros at the matrix's density:
// thin panels starve the staged B rows of reuse, tall ones only add rows (rows are free: each
// nonzero reads its A row once per row change either way). Never taller than the matrix.
int64_t default_tile_rows(const Features& f, int64_t tile_cols, const json& model, const std::string& variant) {
  const double target = launch_value(model, variant, "tile_nnz_target").get<double>();
  const int64_t lo = launch_value(model, variant, "min_tile_rows").get<int64_t>();
  const int64_t hi = launch_value(model, variant, "max_tile_rows").get<int64_t>();
  const double per_row = std::max(f.basic.density, 1e-12) * double(tile_cols);
  const double wanted = std::min(target / per_row, double(hi));
  int64_t rows = std::clamp(pow2_at_least(int64_t(std::ceil(wanted))), lo, hi);
  rows = std::min(rows, pow2_at_least(std::max<int64_t>(f.basic.rows, 1)));
  return std::clamp<int64_t>(rows, 1, int64_t(formats::kMaxTileEdge));
}

// Dynamic shared memory of one block with these parameters: tile_cols staged B rows of slice
// elements plus one vector of padding each.
int64_t tiled_shared_bytes(const json& params, DType dtype) {
  const int64_t width = params.at("vector_width").get<int64_t>();
  const int64_t unit_bytes = width * int64_t(size_of(dtype));
  return params.at("tile_cols").get<int64_t>() * (params.at("slice").get<int64_t>() / width + 1) * unit_bytes;
}

int64_t k_slices(const Decision& d, int32_t k) {
  const int64_t slice = d.params.at("slice").get<int64_t>();
  return (k + slice - 1) / slice;
}

// With one K slice and a reduced group, each result has one writer: a plain store.
bool tiled_stores(const Decision& d, int32_t k) { return d.params.at("combine") == "reduce" && k_slices(d, k) == 1; }

jit::KernelSpec tiled_spec(const Decision& d, DType dtype, int32_t k, bool reindexed) {
  const bool f64 = dtype == DType::F64;
  const int width = d.params.at("vector_width").get<int>();
  const int group = d.params.at("group_size").get<int>();
  const int slice = d.params.at("slice").get<int>();
  const bool lane_atomic = d.params.at("combine") == "atomic";
  return {"sddmm_tiled.cu", "sj_sddmm_tiled",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"}, {"vec_t", vec_type(dtype, width)},
           {"vec_width", width}, {"block_size", d.params.at("threads_per_block")},
           {"tile_cols", d.params.at("tile_cols")}, {"slice", slice}, {"group_size", group},
           {"lane_vectors", slice / (width * group)}, {"batch", d.params.value("batch", 1)},
           {"reindexed", reindexed},
           {"lane_atomic", lane_atomic}, {"group_reduce", !lane_atomic}, {"store_result", tiled_stores(d, k)},
           {"fp16", false}, {"bf16", false}},
          {}};
}

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

// A block per tile and K slice; P is zeroed first when results are accumulated atomically.
template <class T>
class TiledExecution final : public SddmmExecution<T> {
 public:
  TiledExecution(Launch launch, std::shared_ptr<const DeviceTiles> tiles, bool zero_output)
      : launch_(std::move(launch)), tiles_(std::move(tiles)), zero_output_(zero_output) {}
  void run(detail::RuntimeState& rt, const SddmmOperands<T>& o) override {
    if (zero_output_) {
      rt.context.make_current();
      SPARSEJIT_CU(cuMemsetD8Async, o.p.ptr(), 0, std::size_t(o.s.nnz()) * sizeof(T), o.stream);
    }
    const DeviceTiles& t = *tiles_;
    int k = o.a.cols();
    CUdeviceptr tile_row = t.tile_row.ptr(), tile_col = t.tile_col.ptr(), tile_width = t.tile_width.ptr();
    CUdeviceptr tile_ptr = t.tile_ptr.ptr(), local = t.local.ptr(), position = t.position.ptr(), staged = t.staged_cols.ptr();
    CUdeviceptr sv = o.s.values().ptr(), ap = o.a.buffer().ptr(), bp = o.b.buffer().ptr(), pp = o.p.ptr();
    long long lda = o.a.ld(), ldb = o.b.ld();
    void* args[] = {&k, &tile_row, &tile_col, &tile_width, &tile_ptr, &local, &position, &staged, &sv, &ap, &lda, &bp, &ldb, &pp};
    launch_(args, o.stream, o.early);
  }

 private:
  Launch launch_;
  std::shared_ptr<const DeviceTiles> tiles_;
  bool zero_output_;  // P is accumulated atomically: zero it first
};

}  // namespace

json TiledVariant::defaults(const SddmmPlanInputs& in) const {
  const plan::SddmmProblem& p = in.problem;
  const int width = vector_width(p);
  const int64_t tile_cols = launch_value(in.model, name, "tile_cols").get<int64_t>();
  const int64_t units = (p.k + width - 1) / width;  // vectors covering K
  const int64_t group = std::min(launch_value(in.model, name, "group_size").get<int64_t>(), pow2_at_least(units));
  const int64_t slice = round_up(std::min<int64_t>(launch_value(in.model, name, "slice").get<int64_t>(), p.k), width * group);
  return {{"tile_rows", default_tile_rows(in.features, tile_cols, in.model, name)},
          {"tile_cols", tile_cols},
          {"slice", slice},
          {"group_size", group},
          {"combine", launch_value(in.model, name, "combine")},
          {"batch", launch_value(in.model, name, "batch")},
          {"threads_per_block", launch_value(in.model, name, "threads_per_block")},
          {"vector_width", width}};
}

void TiledVariant::check(const plan::SddmmProblem& p, const plan::DeviceTarget& device, const json& params) const {
  check_vector_width(params, p, name);
  const int64_t group = check_group_size(params, name);
  check_threads(params, name, group);
  for (const char* edge : {"tile_rows", "tile_cols"}) {
    const int64_t v = int_param(params, name, edge);
    require(v >= 1 && v <= int64_t(formats::kMaxTileEdge), name,
            std::string(edge) + " = " + std::to_string(v) + " outside [1, " + std::to_string(int64_t(formats::kMaxTileEdge)) + "]");
  }
  const int64_t slice = int_param(params, name, "slice");
  const int64_t unit = int_param(params, name, "vector_width") * group;
  require(slice >= 1 && slice % unit == 0, name,
          "slice = " + std::to_string(slice) + " is not a positive multiple of vector_width * group_size = " + std::to_string(unit));
  require(params.at("combine") == "atomic" || params.at("combine") == "reduce", name,
          "combine = " + params.at("combine").dump() + " is neither \"atomic\" nor \"reduce\"");
  if (params.contains("batch")) {  // tuning records older than the parameter lack it: batch 1
    const int64_t batch = int_param(params, name, "batch");
    require(is_pow2(batch) && batch <= 16, name, "batch = " + std::to_string(batch) + " is not a power of two in [1, 16]");
  }
  const int64_t bytes = tiled_shared_bytes(params, p.dtype);
  if (bytes > device.shared_per_block_optin)
    throw UnsupportedError("sddmm " + name + ": tile_cols x slice needs " + std::to_string(bytes) +
                           " bytes of shared memory, the device allows " + std::to_string(device.shared_per_block_optin));
}

// The terms assume uniformly scattered nonzeros (clustered patterns occupy fewer tiles, so
// these are upper bounds).
json TiledVariant::cost_terms(const SddmmPlanInputs& in, const json& params) const {
  const Features& f = in.features;
  const double vb = double(size_of(in.problem.dtype));
  const double nnz = double(f.basic.nnz), rows = double(f.basic.rows), cols = double(f.basic.cols), k = double(in.problem.k);
  const double ti = params.at("tile_rows").get<double>(), tj = params.at("tile_cols").get<double>();
  const double slices = std::ceil(k / params.at("slice").get<double>());
  const double panels = std::ceil(rows / ti);
  const Staging staged = staging(nnz, cols, panels, tj);
  const double a_rows = occupied(nnz, rows * staged.tiles_per_panel);  // (row, tile) segments: A row loads
  const bool atomic = params.at("combine") == "atomic";
  const double group = params.at("group_size").get<double>();
  const double atomics = atomic ? nnz * slices * group : (slices > 1 ? nnz * slices : 0.0);
  return {{"launch", atomics > 0 ? 2.0 : 1.0},
          {"sparse_bytes", slices * nnz * (8.0 + vb) + nnz * vb * (atomics > 0 ? 2.0 : 1.0)},
          {"gather_bytes", (staged.staged_rows + a_rows) * k * vb},
          {"atomics", atomics}};
}

// The other combine, a quarter and four times the tile rows, twice the batch (half of it
// above 1).
std::vector<json> TiledVariant::neighbour_changes(const plan::SddmmProblem&, const plan::DeviceTarget&,
                                                  const json& params) const {
  const int64_t tile_rows = params.at("tile_rows").get<int64_t>();
  const int64_t batch = params.value("batch", 1);
  std::vector<json> changes = {{{"combine", params.at("combine") == "atomic" ? "reduce" : "atomic"}},
                               {{"tile_rows", tile_rows / 4}},
                               {{"tile_rows", tile_rows * 4}},
                               {{"batch", batch * 2}}};
  if (batch > 1) changes.push_back({{"batch", batch / 2}});
  return changes;
}

// Tile widths of 32 to 128 columns, a quarter, one and four times the default panel height,
// lane groups of 1, 4 and 8 (not wider than K's vectors), slices of 32 to 128 (only as long
// as K needs) and both combines.
std::vector<json> TiledVariant::search_space(const SddmmPlanInputs& in) const {
  std::vector<json> space;
  const plan::SddmmProblem& problem = in.problem;
  const int width = vector_width(problem);
  const int64_t units = (problem.k + width - 1) / width;
  for (int64_t tile_cols : {32, 64, 128}) {
    const int64_t rows = default_tile_rows(in.features, tile_cols, in.model, name);
    for (int64_t tile_rows : {rows / 4, rows, rows * 4}) {
      if (tile_rows < 1 || tile_rows > int64_t(formats::kMaxTileEdge)) continue;
      for (int64_t group : {1, 4, 8}) {
        if (group > pow2_at_least(units)) continue;
        for (int64_t slice_max : {32, 64, 128}) {
          const int64_t slice = round_up(std::min<int64_t>(slice_max, problem.k), width * group);
          if (slice_max > 32 && slice < slice_max) continue;  // K already fits a smaller slice
          for (const char* combine : {"atomic", "reduce"})
            space.push_back({{"tile_rows", tile_rows}, {"tile_cols", tile_cols}, {"slice", slice}, {"group_size", group},
                             {"combine", combine}, {"batch", 4}, {"threads_per_block", 256}, {"vector_width", width}});
        }
      }
    }
  }
  return space;
}

std::vector<jit::KernelSpec> TiledVariant::kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                                        const plan::DeviceTarget&) const {
  return {tiled_spec(d, problem.dtype, problem.k, reindexed_)};
}

template <class T>
std::unique_ptr<SddmmExecution<T>> TiledVariant::make(const SddmmPreparation<T>& p) const {
  Decision& d = p.decision;
  const cuda::Kernel kernel = load_kernel(p.rt, d, tiled_spec(d, p.problem.dtype, p.problem.k, reindexed_));
  const int32_t tile_rows = d.params.at("tile_rows").template get<int32_t>();
  const int32_t tile_cols = d.params.at("tile_cols").template get<int32_t>();
  const std::string key = std::string("sddmm_tiles:") + (reindexed_ ? "reindexed:" : "plain:") + std::to_string(tile_rows) +
                          "x" + std::to_string(tile_cols);
  auto tiles = p.s.template get_or_create<DeviceTiles>(key, [&] {
    return upload_tiles(p.rt.context, formats::build_sddmm_tiles(p.s.host_pattern(), tile_rows, tile_cols, reindexed_));
  });
  const int64_t slices = k_slices(d, p.problem.k);
  if (slices > 65535)
    throw UnsupportedError("sddmm " + d.variant + ": k = " + std::to_string(p.problem.k) + " needs " + std::to_string(slices) +
                           " K slices, more than the grid's 65535");
  Launch launch{kernel, {ops::blocks_for(tiles->tiles, 1), unsigned(slices), 1},
                {d.params.at("threads_per_block").template get<unsigned>(), 1, 1},
                dynamic_shared(kernel, tiled_shared_bytes(d.params, p.problem.dtype))};
  return std::make_unique<TiledExecution<T>>(std::move(launch), std::move(tiles), !tiled_stores(d, p.problem.k));
}

template std::unique_ptr<SddmmExecution<float>> TiledVariant::make(const SddmmPreparation<float>&) const;
template std::unique_ptr<SddmmExecution<double>> TiledVariant::make(const SddmmPreparation<double>&) const;

}  // namespace sparsejit::variants::sddmm
