// panel_gather: row_gather's chunks cut by row band x column panel (formats/sddmm_panel_chunks.hpp),
// one block per tile, so a panel's B rows are gathered from L1 by the whole band.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "formats/sddmm_panel_chunks.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "variants/sddmm/gather.hpp"
#include "variants/sddmm/sddmm_common.hpp"

namespace sparsejit::variants::sddmm {

namespace {

using nlohmann::json;

// B vectors a lane keeps in flight at most (its gathers mostly hit L1).
constexpr int64_t kPanelLoadsInFlight = 32;
// panel_gather is proposed only where its tiles give every SM this many blocks and a row has
// this many nonzeros in a panel on average: its blocks walk their chunks one group per chunk,
// so a few tiles or short chunks leave it latency-bound (measured 2-6x slower than row_gather
// on 512-row layers, 72 tiles, and on 1% rows, H200), while with both it beats row_gather's L2
// gathers (4096² at 10%: 1.09x at K = 64 with 256 tiles, 1.45x at K = 128 with 512).
constexpr double kPanelBlocksPerSm = 1.5;
constexpr double kMinPanelRun = 8.0;

// The column panel: the widest power of two whose B rows take at most the model's panel_bytes
// (256 KB: about the L1 of the SM that its one 512-thread block holds), 64 to 4096 columns,
// never wider than S.
int64_t panel_cols_for(const Features& f, const plan::SddmmProblem& p, const json& model) {
  const double row_bytes = double(p.k) * double(size_of(p.dtype));
  const double wanted = launch_value(model, "panel_gather", "panel_bytes").get<double>() / row_bytes;
  const int64_t cols = std::clamp<int64_t>(pow2_at_most(std::max<int64_t>(1, int64_t(wanted))), 64, 4096);
  return std::min(cols, pow2_at_least(std::max<int64_t>(f.basic.cols, 1)));
}

// Where S's nonzeros lie on the band_rows x panel_cols grid: the non-empty tiles (the exact
// count where the problem has one, as every call and explain do) and the (row, panel) pairs
// they hold, the nonzeros landing uniformly on the tiles' rows. Spread uniformly over all of S,
// a banded row's few dozen nonzeros would seem a fraction of one per panel, where they all lie
// in one or two panels (gen:band:65536:24:64: 0.7 a panel by that count, 21 in truth, and
// panel_gather 1.14-1.20x faster than row_gather there, H200).
struct PanelLayout {
  double tiles = 0;
  double row_panels = 0;
};

PanelLayout panel_layout(const SddmmPlanInputs& in, double band_rows, double panel_cols) {
  const Features& f = in.features;
  const double tiles = dense_tiles_estimate(f, in.problem, band_rows, panel_cols);
  const double cells = std::min(tiles * band_rows, double(f.basic.rows) * std::ceil(double(f.basic.cols) / panel_cols));
  return {tiles, occupied(double(f.basic.nnz), cells)};
}

std::string one_decimal(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

// formats/sddmm_panel_chunks.hpp in device memory, cached on the handle per tile shape and max_nnz.
struct DevicePanelChunks {
  DeviceBuffer tile_ptr, row, begin, end;
  int64_t tiles = 0;
};

jit::KernelSpec panel_gather_spec(const Decision& d, DType dtype, int32_t k) {
  return gather_spec(d, dtype, k, "sddmm_row_panels.cu", "sj_sddmm_row_panels");
}

template <class T>
class PanelGatherExecution final : public SddmmExecution<T> {
 public:
  PanelGatherExecution(Launch launch, std::shared_ptr<const DevicePanelChunks> panels)
      : launch_(std::move(launch)), panels_(std::move(panels)) {}
  void run(detail::RuntimeState&, const SddmmOperands<T>& o) override {
    const DevicePanelChunks& t = *panels_;
    int k = o.a.cols();
    CUdeviceptr tile_ptr = t.tile_ptr.ptr(), row = t.row.ptr(), begin = t.begin.ptr(), end = t.end.ptr();
    CUdeviceptr cols = o.s.col_idx().ptr(), sv = o.s.values().ptr(), ap = o.a.buffer().ptr(), bp = o.b.buffer().ptr();
    CUdeviceptr pp = o.p.ptr();
    long long lda = o.a.ld(), ldb = o.b.ld();
    void* args[] = {&k, &tile_ptr, &row, &begin, &end, &cols, &sv, &ap, &lda, &bp, &ldb, &pp};
    launch_(args, o.stream, o.early);
  }

 private:
  Launch launch_;
  std::shared_ptr<const DevicePanelChunks> panels_;
};

}  // namespace

class PanelGather final : public SddmmVariantOf<PanelGather> {
 public:
  PanelGather()
      : SddmmVariantOf("panel_gather", 30,
                       "row_gather's chunks cut by row band x column panel, one block per tile: a panel's B rows "
                       "gathered from L1 by the whole band") {}

  // Where row_gather cannot run, neither can it.
  std::string rejected(const SddmmPlanInputs& in) const override {
    const std::string why = SddmmVariant::rejected(in);
    return why.empty() ? lane_vectors_rejection(in.problem) : why;
  }

  // Not proposed for S with these parameters (see kMinPanelRun).
  std::string declined(const SddmmPlanInputs& in, const json& params) const override {
    const int multiprocessors = in.device.multiprocessors;
    const double band = params.at("band_rows").get<double>(), panel = params.at("panel_cols").get<double>();
    const PanelLayout layout = panel_layout(in, band, panel);
    if (layout.tiles < kPanelBlocksPerSm * multiprocessors)
      return "about " + std::to_string(int64_t(layout.tiles)) + " tiles of " + params.at("band_rows").dump() + " x " +
             params.at("panel_cols").dump() + ", too few for " + std::to_string(multiprocessors) + " SMs";
    const double run = double(in.features.basic.nnz) / std::max(1.0, layout.row_panels);
    if (run < kMinPanelRun)
      return "about " + one_decimal(run) + " nonzeros per row in a panel of " + params.at("panel_cols").dump() +
             " columns, fewer than " + std::to_string(int64_t(kMinPanelRun));
    return "";
  }

  // row_gather's lane group (from the model's panel_gather group size, widened until A's row
  // fits kMaxLaneVectors vectors per lane), unroll up to kPanelLoadsInFlight B vectors per
  // lane, the panel for L1 and the model's band.
  json defaults(const SddmmPlanInputs& in) const override {
    const plan::SddmmProblem& p = in.problem;
    const int64_t width = vector_width(p);
    const int64_t units = (p.k + width - 1) / width;
    int64_t group = std::clamp<int64_t>(launch_value(in.model, name, "group_size").get<int64_t>(), 4,
                                        std::clamp<int64_t>(pow2_at_least(units), 4, 32));
    while (group < 32 && row_lane_vectors(p.k, width, group) > kMaxLaneVectors) group *= 2;
    json params = gather_defaults(p, in.model, name, group, kPanelLoadsInFlight);
    params["band_rows"] = launch_value(in.model, name, "band_rows");
    params["panel_cols"] = panel_cols_for(in.features, p, in.model);
    return params;
  }

  void check(const plan::SddmmProblem& problem, const plan::DeviceTarget&, const json& params) const override {
    check_vector_width(params, problem, name);
    check_row_gather(params, problem, name);
    for (const char* edge : {"band_rows", "panel_cols"}) {  // stated range: [1, 2^20]
      const int64_t v = int_param(params, name, edge);
      require(v >= 1 && v <= (int64_t(1) << 20), name, std::string(edge) + " = " + std::to_string(v) + " outside [1, 1048576]");
    }
  }

  // One chunk per occupied (row, panel), plus the cuts of long runs; per tile the panel's B
  // rows come from L2 once (at most one per nonzero), every product's B row from L1; and a
  // block per tile (on sparse rows many blocks with few products each).
  json cost_terms(const SddmmPlanInputs& in, const json& params) const override {
    const Features& f = in.features;
    const double vb = double(size_of(in.problem.dtype));
    const double nnz = double(f.basic.nnz), k = double(in.problem.k);
    const PanelLayout layout = panel_layout(in, params.at("band_rows").get<double>(), params.at("panel_cols").get<double>());
    const double chunks = std::min(nnz, layout.row_panels + nnz / params.at("max_nnz").get<double>());
    const double tiles = layout.tiles;
    const double panel = params.at("panel_cols").get<double>();
    const double l2_rows = tiles * std::min(panel, nnz / std::max(tiles, 1.0)) + chunks;
    return {{"launch", 1.0},
            {"sparse_bytes", nnz * (4.0 + 2.0 * vb) + chunks * 12.0 + tiles * 4.0},
            {"gather_bytes", l2_rows * k * vb},
            {"l1_bytes", nnz * k * vb},
            {"tiles", tiles}};
  }

  // Half and twice the band, the panel and the group.
  std::vector<json> neighbour_changes(const plan::SddmmProblem&, const plan::DeviceTarget&, const json& params) const override {
    const int64_t band = params.at("band_rows").get<int64_t>(), panel = params.at("panel_cols").get<int64_t>();
    std::vector<json> changes = {{{"band_rows", band / 2}}, {{"band_rows", band * 2}},
                                 {{"panel_cols", panel / 2}}, {{"panel_cols", panel * 2}}};
    for (json& change : group_changes(params)) changes.push_back(std::move(change));
    return changes;
  }

  // Its panel for L1 and half of it, in bands of 64 and 128 rows (32 measured 1.2-1.5x slower
  // on 4096² at 10%), where the planner proposes it.
  std::vector<json> search_space(const SddmmPlanInputs& in) const override {
    std::vector<json> space;
    const json defaults_here = defaults(in);
    if (!rejected(in).empty() || !declined(in, defaults_here).empty()) return space;
    const int64_t panel_cols = defaults_here.at("panel_cols").get<int64_t>();
    for (int64_t group : {8, 16})
      for (int64_t band_rows : {64, 128})
        for (int64_t cols : {panel_cols, panel_cols / 2}) {
          json params = defaults_here;
          params["group_size"] = group;
          params["unroll"] = std::min(params.at("unroll").get<int64_t>(), group);
          params["band_rows"] = band_rows;
          params["panel_cols"] = cols;
          space.push_back(params);
        }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SddmmProblem& problem,
                                            const plan::DeviceTarget&) const override {
    return {panel_gather_spec(d, problem.dtype, problem.k)};
  }

  template <class T>
  std::unique_ptr<SddmmExecution<T>> make(const SddmmPreparation<T>& p) const {
    Decision& d = p.decision;
    const cuda::Kernel kernel = load_kernel(p.rt, d, panel_gather_spec(d, p.problem.dtype, p.problem.k));
    const int32_t band_rows = d.params.at("band_rows").template get<int32_t>();
    const int32_t panel_cols = d.params.at("panel_cols").template get<int32_t>();
    const int32_t max_nnz = d.params.at("max_nnz").template get<int32_t>();
    const std::string key = "sddmm_panel_chunks:" + std::to_string(band_rows) + "x" + std::to_string(panel_cols) + ":" +
                            std::to_string(max_nnz);
    auto panels = p.s.template get_or_create<DevicePanelChunks>(key, [&] {
      const formats::PanelChunks host = formats::build_panel_chunks(p.s.host_pattern(), band_rows, panel_cols, max_nnz);
      auto out = std::make_shared<DevicePanelChunks>();
      out->tile_ptr = DeviceBuffer::from_host(p.rt.context, host.tile_ptr);
      out->row = DeviceBuffer::from_host(p.rt.context, host.row);
      out->begin = DeviceBuffer::from_host(p.rt.context, host.begin);
      out->end = DeviceBuffer::from_host(p.rt.context, host.end);
      out->tiles = host.tiles();
      return out;
    });
    Launch launch{kernel, {ops::blocks_for(panels->tiles, 1), 1, 1}, {d.params.at("threads_per_block").template get<unsigned>(), 1, 1}};
    return std::make_unique<PanelGatherExecution<T>>(std::move(launch), std::move(panels));
  }
};

}  // namespace sparsejit::variants::sddmm

SPARSEJIT_REGISTER_VARIANT(sddmm, panel_gather, sparsejit::variants::sddmm::PanelGather)
