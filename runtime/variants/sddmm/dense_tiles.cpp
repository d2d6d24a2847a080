#include "variants/sddmm/dense_tiles.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "formats/sddmm_dense_tiles.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

using nlohmann::json;

namespace {

// formats/sddmm_dense_tiles.hpp in device memory, cached on the handle per tile shape.
struct DeviceDenseTiles {
  DeviceBuffer tile_i, tile_j, bitmap, first;
  int64_t tiles = 0;
};

template <class T>
class DenseExecution final : public SddmmExecution<T> {
 public:
  DenseExecution(Launch launch, std::shared_ptr<const DeviceDenseTiles> tiles)
      : launch_(std::move(launch)), tiles_(std::move(tiles)) {}
  void run(detail::RuntimeState&, const SddmmOperands<T>& o) override {
    int m = o.s.rows(), n = o.s.cols(), k = o.a.cols();
    const DeviceDenseTiles& t = *tiles_;
    CUdeviceptr tile_i = t.tile_i.ptr(), tile_j = t.tile_j.ptr(), bitmap = t.bitmap.ptr(), first = t.first.ptr();
    CUdeviceptr sv = o.s.values().ptr(), ap = o.a.buffer().ptr(), bp = o.b.buffer().ptr(), pp = o.p.ptr();
    long long lda = o.a.ld(), ldb = o.b.ld();
    void* args[] = {&m, &n, &k, &tile_i, &tile_j, &bitmap, &first, &sv, &ap, &lda, &bp, &ldb, &pp};
    launch_(args, o.stream, o.early);
  }

 private:
  Launch launch_;
  std::shared_ptr<const DeviceDenseTiles> tiles_;
};

}  // namespace

bool dense_tiles_worth_it(const SddmmPlanInputs& in) {
  return plan::sddmm_tile_fill(in.features, in.problem, 64, 64) >= kDenseTileSearchFill;
}

double dense_tile_format_bytes(double tiles, double ti, double tj) {
  return tiles * (ti * std::ceil(tj / 64) * 8 + ti * 4 + 8);
}

std::string dense_format_rejection(const SddmmPlanInputs& in, const std::string& variant) {
  const double ti = launch_value(in.model, variant, "tile_rows").get<double>();
  const double tj = launch_value(in.model, variant, "tile_cols").get<double>();
  const double bytes = dense_tile_format_bytes(dense_tiles_estimate(in.features, in.problem, ti, tj), ti, tj);
  if (bytes <= kMaxDenseTileFormatBytes) return "";
  return "its tile format would take about " + std::to_string(int64_t(bytes / (1 << 20))) +
         " MiB (sparse tiles): not worth building";
}

json dense_terms(const SddmmPlanInputs& in, const json& params) {
  const double vb = double(size_of(in.problem.dtype));
  const double nnz = double(in.features.basic.nnz), k = double(in.problem.k);
  const double ti = params.at("tile_rows").get<double>(), tj = params.at("tile_cols").get<double>();
  const double tiles = dense_tiles_estimate(in.features, in.problem, ti, tj);
  return {{"launch", 1.0},
          {"sparse_bytes", nnz * 2.0 * vb + dense_tile_format_bytes(tiles, ti, tj)},
          {"tile_bytes", tiles * (ti + tj) * k * vb},
          {"flops", 2.0 * tiles * ti * tj * k * vb / 4.0}};
}

int64_t run_elements(DType dtype) { return 16 / int64_t(size_of(dtype)); }

int64_t dense_slice_unit(int64_t width, DType dtype) { return std::lcm(width, run_elements(dtype)); }

json dense_defaults(const plan::SddmmProblem& p, const json& model, const std::string& variant, int64_t unit,
                    const std::array<const char*, 2>& part) {
  const int64_t slice = round_up(std::min<int64_t>(launch_value(model, variant, "slice").get<int64_t>(), p.k), unit);
  const int64_t slices = (p.k + slice - 1) / slice;
  return {{"vector_width", vector_width(p)},
          {"tile_rows", launch_value(model, variant, "tile_rows")},
          {"tile_cols", launch_value(model, variant, "tile_cols")},
          {part[0], launch_value(model, variant, part[0])},
          {part[1], launch_value(model, variant, part[1])},
          {"slice", slice},
          {"stages", std::min(slices, launch_value(model, variant, "stages").get<int64_t>())}};
}

int64_t dense_tile_stages(const json& params) { return params.value("stages", int64_t(1)); }

int64_t dense_tile_shared_bytes(const json& params, DType dtype) {
  const int64_t rows = params.at("tile_rows").get<int64_t>() + params.at("tile_cols").get<int64_t>();
  const int64_t row_elements = params.at("slice").get<int64_t>() + run_elements(dtype);
  return dense_tile_stages(params) * rows * row_elements * int64_t(size_of(dtype));
}

void check_tile_edge(const json& params, const std::string& variant, const char* edge, const char* part) {
  const int64_t size = int_param(params, variant, edge), unit = int_param(params, variant, part);
  require(size >= unit && size <= formats::kMaxDenseTileEdge && size % unit == 0, variant,
          std::string(edge) + " = " + std::to_string(size) + " is not a multiple of " + part + " = " + std::to_string(unit) +
              " in [" + part + ", " + std::to_string(formats::kMaxDenseTileEdge) + "]");
}

void check_dense_staging(const json& params, const plan::DeviceTarget& device, const std::string& variant, int64_t unit,
                         const std::string& unit_why, int64_t shared_bytes) {
  const int64_t slice = int_param(params, variant, "slice");
  require(slice >= 1 && slice % unit == 0, variant,
          "slice = " + std::to_string(slice) + " is not a positive multiple of " + std::to_string(unit) + " (" + unit_why + ")");
  const int64_t stages = dense_tile_stages(params);
  require(stages >= 1 && stages <= 4, variant, "stages = " + std::to_string(stages) + " outside [1, 4]");
  if (shared_bytes > device.shared_per_block_optin)
    throw UnsupportedError("sddmm " + variant + ": stages x (tile_rows + tile_cols) x slice needs " + std::to_string(shared_bytes) +
                           " bytes of shared memory, the device allows " + std::to_string(device.shared_per_block_optin));
}

std::vector<json> dense_staging_changes(const plan::SddmmProblem& problem, const json& params) {
  const auto get = [&](const char* key) { return params.at(key).get<int64_t>(); };
  // Fewer stages or a shorter slice stage less shared memory (more tiles per SM); more or
  // longer ones keep more of K in flight and sync less.
  const int64_t stages = dense_tile_stages(params);
  std::vector<json> changes = {{{"tile_rows", get("tile_rows") / 2}}, {{"tile_rows", get("tile_rows") * 2}},
                               {{"tile_cols", get("tile_cols") / 2}}, {{"tile_cols", get("tile_cols") * 2}},
                               {{"slice", get("slice") / 2}}};
  if (get("slice") < problem.k) changes.push_back({{"slice", get("slice") * 2}});
  if (stages > 1) changes.push_back({{"stages", stages - 1}});
  if (stages * get("slice") < problem.k) changes.push_back({{"stages", stages + 1}});
  return changes;
}

std::set<int64_t> searched_stages(int32_t k, int64_t slice) {
  const int64_t count = (k + slice - 1) / slice;
  return {std::min<int64_t>(count, 2), std::min<int64_t>(count, 4)};
}

template <class T>
std::unique_ptr<SddmmExecution<T>> dense_execution(const SddmmPreparation<T>& p, const jit::KernelSpec& spec, int64_t threads,
                                                   int64_t shared_bytes) {
  Decision& d = p.decision;
  const cuda::Kernel kernel = load_kernel(p.rt, d, spec);
  const int32_t tile_rows = d.params.at("tile_rows").template get<int32_t>();
  const int32_t tile_cols = d.params.at("tile_cols").template get<int32_t>();
  const std::string key = "sddmm_dense_tiles:" + std::to_string(tile_rows) + "x" + std::to_string(tile_cols);
  auto tiles = p.s.template get_or_create<DeviceDenseTiles>(key, [&] {
    const formats::DenseTiles host = formats::build_dense_tiles(p.s.host_pattern(), tile_rows, tile_cols);
    auto out = std::make_shared<DeviceDenseTiles>();
    out->tile_i = DeviceBuffer::from_host(p.rt.context, host.tile_i);
    out->tile_j = DeviceBuffer::from_host(p.rt.context, host.tile_j);
    out->bitmap = DeviceBuffer::from_host(p.rt.context, host.bitmap);
    out->first = DeviceBuffer::from_host(p.rt.context, host.first);
    out->tiles = host.tiles();
    return out;
  });
  Launch launch{kernel, {ops::blocks_for(tiles->tiles, 1), 1, 1}, {unsigned(threads), 1, 1}, dynamic_shared(kernel, shared_bytes)};
  return std::make_unique<DenseExecution<T>>(std::move(launch), std::move(tiles));
}

template std::unique_ptr<SddmmExecution<float>> dense_execution(const SddmmPreparation<float>&, const jit::KernelSpec&, int64_t,
                                                                int64_t);
template std::unique_ptr<SddmmExecution<double>> dense_execution(const SddmmPreparation<double>&, const jit::KernelSpec&, int64_t,
                                                                 int64_t);

}  // namespace sparsejit::variants::sddmm
