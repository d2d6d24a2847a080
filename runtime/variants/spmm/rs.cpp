// rs: the RS-SpMM split (Hong et al., HPDC'18). A's columns are cut into panels of
// panel_width; row segments with at least `threshold` nonzeros in a panel are heavy. The light
// kernel (csr_vector's) runs over the light part with plain stores, then the heavy (vertical)
// kernel stages each panel's rows of B in shared memory and adds the heavy segments
// atomically. Aᵀ·B: memset C, the transposed light kernel, the transposed heavy kernel.
//
// Parameter defaults:
//   panel_width    RS-SpMM 3.1: W * slice bytes * blocks_per_sm = shared memory per SM (less
//                  the 1 KiB the hardware reserves per block), rounded down to a multiple of
//                  32, at most cols, at most the per-block opt-in limit
//   threshold      the model's "threshold_tree" leaf when models/spmm.json has one, else the
//                  cheapest of kThresholdGrid by the cost formulas
//   segments_per_block  heavy segments per work item: enough items for two waves of blocks,
//                  at least 2 and at most 16 segments per lane group
// The split is built on the GPU and cached on the handle per (W, T, dtype, S), rebuilt when
// the values change (formats/device_row_segments.hpp).
#include <algorithm>
#include <limits>
#include <optional>

#include "formats/device_row_segments.hpp"
#include "models/cost_model.hpp"
#include "models/decision_tree.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "plan/spmm_params.hpp"
#include "sparsejit/error.hpp"
#include "variants/spmm/spmm_common.hpp"

namespace sparsejit::variants::spmm {

namespace {

// Heavy blocks: 512 threads at two per SM, 256 past that, so the register budget per thread
// (65536 / resident threads) never drops below 64.
int heavy_threads_for(int blocks_per_sm) { return blocks_per_sm <= 2 ? 512 : 256; }
constexpr int kDefaultBlocksPerSm = 2;  // RS-SpMM 3.1: two resident heavy blocks per SM
constexpr int kReservedSharedPerBlock = 1024;
const int kThresholdGrid[] = {2, 4, 8, 16};
const int kSearchThresholds[] = {2, 4, 8, 16, 32};

// Tile rows read ahead by the heavy kernel: 4 vectors in flight per lane whatever cf_v is, so
// the registers fit the 64 per thread that two 512-thread blocks per SM leave.
int heavy_unroll_for(int cf_v) { return std::max(1, kUnroll / std::max(1, cf_v)); }

// RS-SpMM's panel width for a tile row of row_bytes and blocks_per_sm resident blocks.
int32_t panel_width_for(const plan::DeviceTarget& device, int32_t cols, int64_t row_bytes, int blocks_per_sm) {
  const int64_t per_block = std::min<int64_t>(device.shared_per_sm / blocks_per_sm - kReservedSharedPerBlock,
                                              device.shared_per_block_optin);
  int64_t w = per_block / row_bytes / 32 * 32;
  w = std::max<int64_t>(w, 32);
  return int32_t(std::max<int64_t>(1, std::min<int64_t>(w, cols)));
}

int heavy_slice(const nlohmann::json& params) {
  return slice_columns(params.at("heavy_lanes").get<int>(), params.at("vec_width").get<int>(), params.at("cf_v").get<int>());
}

// Dynamic shared memory of the heavy kernel: panel_width rows of one K slice.
int64_t heavy_shared_bytes(const nlohmann::json& params, DType dtype) {
  return int64_t(params.at("panel_width").get<int>()) * heavy_slice(params) * int64_t(size_of(dtype));
}

// Every parameter but threshold and segments_per_block (which need split statistics).
nlohmann::json rs_base_params(const Features& f, const plan::SpmmProblem& p, const plan::DeviceTarget& device, int blocks_per_sm) {
  nlohmann::json params = light_params(p);
  const int vec = params.at("vec_width").get<int>();
  const int lanes = lanes_for(vector_units(p, vec));
  params["heavy_lanes"] = lanes;
  params["cf_v"] = cf_for(p, vec, lanes);
  params["heavy_unroll"] = heavy_unroll_for(params.at("cf_v").get<int>());
  params["heavy_threads"] = heavy_threads_for(blocks_per_sm);
  params["blocks_per_sm"] = blocks_per_sm;
  params["panel_width"] = panel_width_for(device, f.basic.cols, int64_t(heavy_slice(params)) * value_bytes(p), blocks_per_sm);
  params["threshold"] = 4;
  params["segments_per_block"] = 8 * (heavy_threads_for(blocks_per_sm) / lanes);
  return params;
}

// Heavy segments per work item: about two waves of blocks over the device, between 2 and 16
// segments per lane group of a block.
int segments_per_block(const SplitStats& s, const nlohmann::json& params, const plan::DeviceTarget& device) {
  const int groups = params.at("heavy_threads").get<int>() / params.at("heavy_lanes").get<int>();
  const int64_t target_items = 2LL * device.multiprocessors * params.at("blocks_per_sm").get<int>();
  const int64_t wanted = (s.heavy_segments + target_items - 1) / std::max<int64_t>(target_items, 1);
  return int(std::clamp<int64_t>(wanted, 2 * groups, 16 * groups));
}

// Work items of the heavy kernel: one per segments_per_block segments of each panel; the
// panels holding heavy segments are not counted by the statistics, so every panel is
// assumed to hold some (an upper bound when heavy segments are few).
double heavy_items(const SplitStats& s, int spb) {
  if (s.heavy_segments == 0) return 0;
  return std::min<double>(double(s.panels), double(s.heavy_segments)) + double(s.heavy_segments) / spb;
}

// Round trips of the slowest heavy group, which runs after the light kernel: a group walks
// segments_per_block / groups segments one after another, the longest one (at most the
// longest row, at most a panel wide) and the others of mean length, loading indices every
// heavy_lanes nonzeros and tile rows every heavy_unroll nonzeros. (The first benchmark: a
// DLMC layer of 128 rows x ~576 nonzeros took rs 77 µs at K = 32, where the light term alone
// said a few µs.)
double heavy_critical_loads(const Features& f, const nlohmann::json& params, const SplitStats& s) {
  if (s.heavy_segments == 0) return 0.0;
  const double groups = params.at("heavy_threads").get<int>() / params.at("heavy_lanes").get<int>();
  const double per_group = ceil_div(std::min<double>(params.at("segments_per_block").get<int>(), double(s.heavy_segments)), groups);
  const double longest = std::min<double>(double(f.basic.row_max), params.at("panel_width").get<int>());
  const double walk = longest + (per_group - 1.0) * double(s.heavy_nnz) / double(s.heavy_segments);
  return ceil_div(walk, params.at("heavy_lanes").get<int>()) + ceil_div(walk, params.at("heavy_unroll").get<int>());
}

nlohmann::json rs_terms(const SpmmPlanInputs& in, const nlohmann::json& params, const SplitStats& s) {
  const Features& f = in.features;
  const plan::SpmmProblem& p = in.problem;
  nlohmann::json t = base_terms(in);
  const double vb = value_bytes(p);
  const double k = p.k;
  const double items = heavy_items(s, params.at("segments_per_block").get<int>());
  const double panel_rows = std::min<double>(params.at("panel_width").get<int>(), f.basic.cols);
  const double k_slices = double(slices(p.k, heavy_slice(params)));
  t["sparse_bytes"] = double(f.basic.nnz) * (4.0 + vb) + (f.basic.rows + 1.0) * 4.0 +
                      (double(s.heavy_segments) * 8.0 + items * 12.0) * k_slices;
  t["critical_nnz"] = std::min<double>(double(f.basic.row_max), double(s.panels) * (s.threshold - 1));
  t["critical_loads"] = light_critical_loads(t["critical_nnz"].get<double>(), params, p.transpose_a) +
                        heavy_critical_loads(f, params, s);
  t["launch"] = s.heavy_segments > 0 ? 2.0 : 1.0;
  if (!p.transpose_a) {
    t["gather_bytes"] = double(s.light_nnz) * k * vb;
    t["panel_bytes"] = items * panel_rows * k * vb;
    t["shared_bytes"] = double(s.heavy_nnz) * k * vb;
    t["atomic_bytes"] = double(s.heavy_segments) * k * vb;
  } else {
    t["launch"] = t["launch"].get<double>() + 1.0;  // the memset
    t["gather_bytes"] = double(s.light_rows + s.heavy_segments) * k * vb;
    t["shared_atomic_bytes"] = double(s.heavy_nnz) * k * vb;
    t["atomic_bytes"] = (double(s.light_nnz) + items * panel_rows) * k * vb;
  }
  return t;
}

SplitStats split_of(const SpmmPlanInputs& in, const nlohmann::json& params) {
  return in.split_stats(params.at(plan::spmm_param::kPanelWidth).get<int>(), params.at(plan::spmm_param::kThreshold).get<int>());
}

// The threshold tree's leaf (models/spmm.json "threshold_tree"), its steps added to `path`.
std::optional<int> threshold_from_tree(const SpmmPlanInputs& in, std::vector<DecisionStep>& path) {
  if (!in.model.contains("threshold_tree")) return std::nullopt;
  models::TreeResult r = models::evaluate_tree(in.model.at("threshold_tree"), in.feature_values);
  path.insert(path.end(), r.path.begin(), r.path.end());
  return r.leaf.get<int>();
}

jit::KernelSpec heavy_spec(const nlohmann::json& params, DType dtype, bool transpose) {
  nlohmann::json p = vector_types(params, dtype);
  p["lanes_per_segment"] = params.at("heavy_lanes").get<int>();
  p["cf"] = params.at("cf_v").get<int>();
  p["block_threads"] = params.at("heavy_threads").get<int>();
  p["min_blocks"] = params.at("blocks_per_sm").get<int>();
  if (transpose) return {"spmm_rs_heavy_t.cu", "sj_spmm_rs_heavy_t", p, {}};
  p["unroll"] = params.at("heavy_unroll").get<int>();
  return {"spmm_rs_heavy.cu", "sj_spmm_rs_heavy", p, {}};
}

template <class T>
class RsExecution final : public SpmmExecution<T> {
 public:
  RsExecution(Launch light, Launch heavy, std::shared_ptr<CachedRowSegments<T>> split, bool transpose)
      : light_(std::move(light)), heavy_(std::move(heavy)), split_(std::move(split)), transpose_(transpose) {}

  // A·B: the light kernel covers every row with plain stores (so no memset and no light
  // atomics), then the heavy kernel adds the heavy segments (skipped when there are none).
  void run(detail::RuntimeState&, const SpmmOperands<T>& o) override {
    if (transpose_) o.c.clear_async(o.stream);
    const std::shared_ptr<const DeviceRowSegments<T>> s = split_->current(o.a);
    int k = o.b.cols();
    long long ldb = o.b.ld(), ldc = o.c.ld();
    CUdeviceptr b = o.b.buffer().ptr(), c = o.c.buffer().ptr();
    launch_csr(light_, o.a.rows(), k, s->light_ptr.ptr(), s->light_col.ptr(), s->light_val.ptr(), b, ldb, c, ldc, o.stream, o.early);
    if (s->items == 0) return;
    int cols = s->cols, width = s->panel_width;
    CUdeviceptr panel = s->block_panel.ptr(), seg_begin = s->block_seg_begin.ptr(), seg_end = s->block_seg_end.ptr();
    CUdeviceptr seg_row = s->seg_row.ptr(), seg_ptr = s->seg_ptr.ptr(), col = s->heavy_col.ptr(), val = s->heavy_val.ptr();
    void* args[] = {&k, &cols, &width, &panel, &seg_begin, &seg_end, &seg_row, &seg_ptr, &col, &val, &b, &ldb, &c, &ldc};
    heavy_.kernel.launch({unsigned(s->items), heavy_.grid.y, 1}, heavy_.block, heavy_.shared_bytes, o.stream, args, o.early);
  }

 private:
  Launch light_, heavy_;  // heavy_.grid.x is the split's work items, set per call
  std::shared_ptr<CachedRowSegments<T>> split_;
  bool transpose_;
};

}  // namespace

class Rs final : public SpmmVariantOf<Rs> {
 public:
  Rs() : SpmmVariantOf("rs", 40, "RS-SpMM: light rows by csr_vector's kernel, heavy panel segments staged in shared memory") {}

  std::string rejected(const SpmmPlanInputs& in) const override {
    std::string reason = SpmmVariant::rejected(in);
    if (reason.empty() && !in.split_stats) reason = "needs the matrix pattern to measure the split";
    return reason;
  }

  // The threshold the cost formulas like best over the threshold candidates (the tree's leaf
  // alone when the model has one), and segments_per_block for its split.
  nlohmann::json defaults(const SpmmPlanInputs& in, std::vector<DecisionStep>& path) const override {
    const nlohmann::json base = rs_base_params(in.features, in.problem, in.device, kDefaultBlocksPerSm);
    if (!in.split_stats) return base;
    std::vector<int> thresholds(std::begin(kThresholdGrid), std::end(kThresholdGrid));
    if (const auto t = threshold_from_tree(in, path)) thresholds = {*t};
    const nlohmann::json& costs = in.model.at("cost");
    nlohmann::json best;
    double best_ms = std::numeric_limits<double>::infinity();
    for (int t : thresholds) {
      nlohmann::json params = base;
      params["threshold"] = t;
      const SplitStats s = split_of(in, params);
      params["segments_per_block"] = segments_per_block(s, params, in.device);
      const double ms = costs.contains(name) ? models::linear_cost(costs.at(name), rs_terms(in, params, s)) : 0.0;
      if (best.is_null() || ms < best_ms) {
        best_ms = ms;
        best = params;
      }
    }
    return best;
  }

  // A forced choice without a panel width (or read-ahead) gets the formula's width (and
  // read-ahead) for its own slice.
  void require_range(const nlohmann::json& params, const char* key, int64_t largest) const {
    const int64_t value = params.at(key).get<int64_t>();
    if (value < 1 || value > largest)
      throw InvalidInputError(std::string("rs: ") + key + " = " + params.at(key).dump() + " must be in [1, " +
                              std::to_string(largest) + "]");
  }

  // What the panel width is derived from (the heavy slice's bytes and the blocks sharing an
  // SM), checked before anything divides by it; blocks_per_sm is also the kernel's launch
  // bound, so at most the blocks an SM can hold.
  void check_panel_width_inputs(const nlohmann::json& params, const plan::SpmmProblem& problem,
                                const plan::DeviceTarget& device) const {
    check_light_params(name, params, problem);
    require_one_of(name, params, "heavy_lanes", {8, 16, 32});
    require_one_of(name, params, "cf_v", {1, 2, 4});
    require_range(params, "blocks_per_sm", device.max_blocks_per_sm);
  }

  nlohmann::json complete_forced(const SpmmPlanInputs& in, const nlohmann::json& forced, const nlohmann::json& merged) const override {
    nlohmann::json completed = forced;
    if (!forced.contains("heavy_unroll")) completed["heavy_unroll"] = heavy_unroll_for(merged.at("cf_v").get<int>());
    if (!forced.contains("panel_width")) {
      // The width is derived by dividing by these: a forced 0 crashed the planner (SIGFPE).
      check_panel_width_inputs(merged, in.problem, in.device);
      const int64_t row_bytes = int64_t(heavy_slice(merged)) * value_bytes(in.problem);
      completed["panel_width"] = panel_width_for(in.device, in.features.basic.cols, row_bytes, merged.at("blocks_per_sm").get<int>());
    }
    return completed;
  }

  void check(const plan::SpmmProblem& problem, const plan::DeviceTarget& device, const nlohmann::json& params) const override {
    check_panel_width_inputs(params, problem, device);
    require_one_of(name, params, "heavy_unroll", {1, 2, 4, 8});
    require_one_of(name, params, "heavy_threads", {64, 128, 256, 512, 1024});
    // Stated ranges: threshold and panel_width any positive int (panel_width is bounded by
    // shared memory below); segments_per_block up to 2^20 per work item.
    require_range(params, "threshold", std::numeric_limits<int32_t>::max());
    require_range(params, "panel_width", std::numeric_limits<int32_t>::max());
    require_range(params, "segments_per_block", int64_t(1) << 20);
    const int64_t shared = heavy_shared_bytes(params, problem.dtype);
    if (shared > device.shared_per_block_optin)
      throw InvalidInputError("rs: panel_width = " + params.at("panel_width").dump() + " needs " + std::to_string(shared) +
                              " bytes of shared memory per block, more than the device's " +
                              std::to_string(device.shared_per_block_optin));
  }

  nlohmann::json cost_terms(const SpmmPlanInputs& in, const nlohmann::json& params) const override {
    return rs_terms(in, params, split_of(in, params));
  }

  std::vector<nlohmann::json> search_space(const SpmmPlanInputs& in) const override {
    std::vector<nlohmann::json> space;
    const int units = vector_units(in.problem, vector_width(in.problem));
    // A coarsening factor past what covers K only idles lanes, except 1 which is always valid.
    auto useful_cf = [&](int lanes, int cf) { return cf == 1 || (cf - 1) * lanes < units; };
    for (int blocks_per_sm : {2, 3, 4}) {
      for (int threshold : kSearchThresholds) {
        for (int cf_v : {1, 2, 4}) {
          for (int cf_h : {1, 2}) {
            nlohmann::json params = rs_base_params(in.features, in.problem, in.device, blocks_per_sm);
            const int lanes = params.at("heavy_lanes").get<int>();
            if (!useful_cf(lanes, cf_v) || !useful_cf(params.at("lanes_per_row").get<int>(), cf_h)) continue;
            params["cf_v"] = cf_v;
            params["heavy_unroll"] = heavy_unroll_for(cf_v);
            params["cf_h"] = cf_h;
            params["threshold"] = threshold;
            params["panel_width"] = panel_width_for(in.device, in.features.basic.cols,
                                                    int64_t(heavy_slice(params)) * value_bytes(in.problem), blocks_per_sm);
            space.push_back(params);
          }
        }
      }
    }
    return space;
  }

  std::vector<jit::KernelSpec> kernel_specs(const Decision& d, const plan::SpmmProblem& problem) const override {
    return {light_spec(d.params, problem.dtype, problem.transpose_a), heavy_spec(d.params, problem.dtype, problem.transpose_a)};
  }

  template <class T>
  std::unique_ptr<SpmmExecution<T>> make(const SpmmPreparation<T>& p) const {
    Decision& d = p.decision;
    const plan::SpmmProblem& problem = p.problem;
    Launch light = light_launch(p.rt, d, problem.dtype, problem.transpose_a, p.a.rows(), problem.k);
    const ops::LoadedKernel loaded = p.rt.loader.load(heavy_spec(d.params, problem.dtype, problem.transpose_a));
    d.compile_ms += loaded.compile_ms;
    d.load_ms += loaded.load_ms;
    // The limit goes to the device's maximum, not this plan's need: the kernel object is shared
    // by every plan with the same template parameters, and the panel width is not one of them.
    loaded.kernel.set_max_dynamic_shared(int(p.rt.target.shared_per_block_optin));
    Launch heavy{loaded.kernel, {1, k_slices(problem.k, heavy_slice(d.params)), 1},
                 {unsigned(d.params.at("heavy_threads").template get<int>()), 1, 1},
                 unsigned(heavy_shared_bytes(d.params, problem.dtype))};
    auto split = cached_row_segments(p.a, d.params.at("panel_width").template get<int32_t>(),
                                     d.params.at("threshold").template get<int32_t>(),
                                     d.params.at("segments_per_block").template get<int32_t>());
    split->current(p.a);  // build and upload now, not in the first timed call
    return std::make_unique<RsExecution<T>>(std::move(light), std::move(heavy), std::move(split), problem.transpose_a);
  }
};

}  // namespace sparsejit::variants::spmm

SPARSEJIT_REGISTER_VARIANT(spmm, rs, sparsejit::variants::spmm::Rs)
