#include "ops/spgemm_reuse.hpp"

#include <algorithm>
#include <optional>
#include <functional>
#include <string>

#include "formats/spgemm_entry_products_gpu.hpp"
#include "formats/spgemm_positions_gpu.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "ops/spgemm_reuse_entries.hpp"
#include "ops/spgemm_reuse_rows.hpp"
#include "ops/spgemm_reuse_tiles.hpp"
#include "ops/spgemm_reuse_warps.hpp"
#include "plan/spgemm_reuse.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::ops {

jit::KernelSpec positions_spec(const char* pass, DType dtype, bool long_positions, bool wide_rows, const plan::SpgemmReusePlan& p) {
  const std::string value_t = dtype == DType::F64 ? "double" : "float";
  const std::string name = std::string("sj_spgemm_positions_") + pass + (wide_rows ? "_wide" : "") + (long_positions ? "_u32" : "_u16");
  const bool build = std::string(pass) == "build";
  jit::KernelSpec spec{"spgemm_positions.cu", name,
                       {{"value_t", value_t}, {"acc_t", value_t}, {"pos_t", long_positions ? "unsigned int" : "unsigned short"},
                        {"build", build}, {"numeric", std::string(pass) == "numeric"}, {"zero", std::string(pass) == "zero"},
                        {"block_threads", wide_rows ? p.wide_block_threads : p.block_threads},
                        {"shared_entries", wide_rows ? p.wide_entries : p.shared_entries}},
                       {}};
  // Only the build pass has lane groups: the other passes' sources, and so their cached
  // kernels, are the same for every pair of one value type.
  if (build) spec.params["group_lanes"] = p.group_lanes;
  return spec;
}

namespace {

// What a C keeps: the plan's verdict, and with positions their arrays and kernels (of the
// blocks' kernel here, or the warps' in `warp`, the entries' in `entries`, the tiles' in
// `tiles`, the rows' in `rows`), and the graph its calls replay (Options::replay_launches).
template <class T>
struct Positions {
  plan::SpgemmReusePlan plan;
  std::string why;
  bool usable = false;
  std::shared_ptr<WarpPositions<T>> warp;
  std::shared_ptr<EntrySums<T>> entries;
  std::shared_ptr<TileSums<T>> tiles;
  std::shared_ptr<RowSums<T>> rows;
  mutable cuda::LaunchGraph graph;
  unsigned narrow_tasks = 0, wide_tasks = 0, zero_ranges = 0;
  // The wide blocks' shared sums: the widest of their rows rounded up to 1024 entries (at most
  // the plan's wide_entries), so that two blocks share a multiprocessor where rows allow.
  int64_t wide_entries = 0;
  DeviceBuffer task_list, product_at, zero_list, positions;
  std::optional<cuda::Kernel> numeric, numeric_wide, zero;
};

// The tasks (formats/spgemm_positions_gpu.hpp), then the positions: two synchronizations, for
// the tasks' counts and to read the missing flag.
template <class T>
void build(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c, int64_t products, Positions<T>& made) {
  const plan::SpgemmReusePlan& plan = made.plan;
  formats::DeviceReuseTasks t =
      formats::build_reuse_tasks_gpu(rt.context, formats::device_pattern(o.a), formats::device_pattern(o.b), formats::device_pattern(c),
                                     products, plan.task_products, plan.shared_entries, plan.wide_entries, o.stream);
  const bool long_positions = t.widest > 65536;
  const DType dtype = dtype_of<T>::value;
  const cuda::Kernel build_kernel = rt.loader.load(positions_spec("build", dtype, long_positions, false, plan)).kernel;
  made.numeric = rt.loader.load(positions_spec("numeric", dtype, long_positions, false, plan)).kernel;
  made.narrow_tasks = unsigned(t.narrow);
  made.wide_tasks = unsigned(t.tasks - t.narrow);
  if (made.wide_tasks > 0) {
    made.wide_entries = std::min(plan.wide_entries, (t.widest_wide + 1023) / 1024 * 1024);
    made.numeric_wide = rt.loader.load(positions_spec("numeric", dtype, long_positions, true, plan)).kernel;
    made.numeric_wide->set_max_dynamic_shared(int(made.wide_entries * int64_t(sizeof(T))));
  }
  made.zero_ranges = unsigned(t.zero_ranges);
  if (made.zero_ranges > 0) {
    made.zero = rt.loader.load(positions_spec("zero", dtype, long_positions, false, plan)).kernel;
    made.zero_list = std::move(t.zero_list);
  }
  made.task_list = std::move(t.task_list);
  made.product_at = std::move(t.product_at);
  const std::size_t position_bytes = long_positions ? 4 : 2;
  made.positions = DeviceBuffer(rt.context, std::size_t(t.products) * position_bytes);
  DeviceBuffer missing(rt.context, sizeof(int32_t));
  missing.fill_bytes_async(0, o.stream);
  CUdeviceptr tasks = made.task_list.ptr(), a_row_ptr = o.a.row_ptr().ptr(), a_col = o.a.col_idx().ptr();
  CUdeviceptr b_row_ptr = o.b.row_ptr().ptr(), b_col = o.b.col_idx().ptr(), c_row_ptr = c.row_ptr().ptr();
  CUdeviceptr c_col = c.col_idx().ptr(), product_at = made.product_at.ptr(), positions = made.positions.ptr();
  CUdeviceptr missing_at = missing.ptr();
  void* args[] = {&tasks, &a_row_ptr, &a_col, &b_row_ptr, &b_col, &c_row_ptr, &c_col, &product_at, &positions, &missing_at};
  if (t.tasks > 0)
    build_kernel.launch({unsigned(t.tasks), 1, 1}, {unsigned(plan.block_threads), 1, 1}, 0, o.stream, args, false);
  int32_t missed = 0;
  missing.download_async(&missed, sizeof(missed), o.stream);
  SPARSEJIT_CU(cuStreamSynchronize, o.stream);
  made.usable = missed == 0;
  const std::size_t kept = made.positions.bytes() + made.product_at.bytes() + made.task_list.bytes() + made.zero_list.bytes();
  made.why = made.usable ? "positions: " + std::to_string(position_bytes) + " bytes a product, " + std::to_string(kept) +
                               " bytes kept on C, " + std::to_string(made.narrow_tasks) + " tasks + " +
                               std::to_string(made.wide_tasks) + " of wide rows"
                         : "recompute: a product's column is not in C's row (C's rows must be sorted for positions)";
}

// One numeric kernel over `count` tasks from `first`.
template <class T>
void launch_numeric(const cuda::Kernel& kernel, const Positions<T>& p, const variants::SpgemmOperands<T>& o, CUdeviceptr values,
                    unsigned first, unsigned count, int block_threads, int64_t shared_entries) {
  CUdeviceptr tasks = p.task_list.ptr() + 32 * std::size_t(first), a_col = o.a.col_idx().ptr(), a_val = o.a.values().ptr();
  CUdeviceptr b_row_ptr = o.b.row_ptr().ptr(), b_val = o.b.values().ptr(), product_at = p.product_at.ptr();
  CUdeviceptr positions = p.positions.ptr();
  void* args[] = {&tasks, &a_col, &a_val, &b_row_ptr, &b_val, &product_at, &positions, &values};
  kernel.launch({count, 1, 1}, {unsigned(block_threads), 1, 1}, unsigned(shared_entries * int64_t(sizeof(T))), o.stream, args, o.early);
}

template <class T>
void compute(const Positions<T>& p, const variants::SpgemmOperands<T>& o, CUdeviceptr values) {
  if (p.zero_ranges > 0) {
    CUdeviceptr ranges = p.zero_list.ptr();
    void* args[] = {&ranges, &values};
    p.zero->launch({p.zero_ranges, 1, 1}, {unsigned(p.plan.block_threads), 1, 1}, 0, o.stream, args, o.early);
  }
  if (p.narrow_tasks > 0) launch_numeric(*p.numeric, p, o, values, 0, p.narrow_tasks, p.plan.block_threads, p.plan.shared_entries);
  if (p.wide_tasks > 0)
    launch_numeric(*p.numeric_wide, p, o, values, p.narrow_tasks, p.wide_tasks, p.plan.wide_block_threads, p.wide_entries);
}

// The blocks' kernel and its arrays dropped.
template <class T>
void drop_blocks(Positions<T>& made) {
  made.narrow_tasks = made.wide_tasks = made.zero_ranges = 0;
  made.numeric.reset();
  made.numeric_wide.reset();
  made.zero.reset();
  made.task_list = DeviceBuffer();
  made.product_at = DeviceBuffer();
  made.zero_list = DeviceBuffer();
  made.positions = DeviceBuffer();
}

// C's values by whichever kernel the C keeps.
template <class T>
void compute_kept(const Positions<T>& p, const variants::SpgemmOperands<T>& o, CUdeviceptr values) {
  if (p.rows) {
    compute_row_sums(*p.rows, o, values);
  } else if (p.tiles) {
    compute_tile_sums(*p.tiles, o, values);
  } else if (p.warp) {
    compute_warp_positions(*p.warp, o, values);
  } else if (p.entries) {
    compute_entry_sums(*p.entries, o, values);
  } else {
    compute(p, o, values);
  }
}

// Calls each kernel is timed over, after one untimed probe.
constexpr int kTimedCalls = 3;

double timed_us(detail::RuntimeState& rt, CUstream stream, const std::function<void()>& call) {
  return 1000.0 * time_device_calls(rt.context, stream, call, [](double) { return kTimedCalls; });
}

// A warp a task built (made.warp) where the plan times it against the blocks' kernel: the
// blocks' built beside it, both timed (ops::time_device_calls), the slower dropped.
template <class T>
void keep_the_faster(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c, int64_t products,
                     Positions<T>& made) {
  const std::string warps_why = made.why;
  build(rt, o, c, products, made);
  if (!made.usable) {  // the blocks' positions could not be made: the warps' stand
    made.usable = true;
    made.why = warps_why;
    return;
  }
  const CUdeviceptr values = c.values().ptr();
  const double warps_us = timed_us(rt, o.stream, [&] { compute_warp_positions(*made.warp, o, values); });
  const double blocks_us = timed_us(rt, o.stream, [&] { compute(made, o, values); });
  const std::string timed = "; timed on the first call: a warp a task " + std::to_string(int64_t(warps_us + 0.5)) + " µs, blocks " +
                            std::to_string(int64_t(blocks_us + 0.5)) + " µs";
  if (blocks_us < warps_us) {
    made.warp.reset();
    made.why += timed;
    return;
  }
  drop_blocks(made);
  made.why = warps_why + timed;
}

// A candidate kernel built beside the one the C keeps (usable): both timed; where the
// candidate is faster, the kept kernels are dropped and `keep` installs it.
template <class T>
void keep_if_faster(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c, Positions<T>& made,
                    const std::string& name, const std::string& candidate_why, const std::function<void(CUdeviceptr)>& candidate,
                    const std::function<void()>& keep) {
  const CUdeviceptr values = c.values().ptr();
  const double kept_us = timed_us(rt, o.stream, [&] { compute_kept(made, o, values); });
  const double candidate_us = timed_us(rt, o.stream, [&] { candidate(values); });
  const std::string timed = "; timed on the first call: " + name + " " + std::to_string(int64_t(candidate_us + 0.5)) +
                            " µs, the other " + std::to_string(int64_t(kept_us + 0.5)) + " µs";
  if (kept_us <= candidate_us) {
    made.why += timed;
    return;
  }
  made.warp.reset();
  made.entries.reset();
  drop_blocks(made);
  keep();
  made.why = candidate_why + timed;
}

// Tiles built beside the kernel the C keeps and kept if faster; where they cannot be built, the
// kept kernel stands and the reason is added to its description.
template <class T>
void keep_tiles_if_faster(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c,
                          const SpgemmFeatures& features, Positions<T>& made) {
  std::string why;
  std::shared_ptr<TileSums<T>> tiles = build_tile_sums(rt, o, c, features, why);
  if (!tiles) {
    made.why += "; tiles not kept (" + why + ")";
    return;
  }
  keep_if_faster(rt, o, c, made, "tiles", why, [&](CUdeviceptr values) { compute_tile_sums(*tiles, o, values); },
                 [&] { made.tiles = std::move(tiles); });
}

// The same for a warp a task beside entries.
template <class T>
void keep_warps_if_faster(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c, int64_t products,
                          std::optional<int64_t> memory_limit, Positions<T>& made) {
  std::string why;
  std::shared_ptr<WarpPositions<T>> warp = build_warp_positions(rt, o, c, made.plan.warp, products, memory_limit, why);
  if (!warp) {
    made.why += "; a warp a task not kept (" + why + ")";
    return;
  }
  keep_if_faster(rt, o, c, made, "a warp a task", why, [&](CUdeviceptr values) { compute_warp_positions(*warp, o, values); },
                 [&] { made.warp = std::move(warp); });
}

}  // namespace

template <class T>
bool recompute_by_positions(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c,
                            const SpgemmFeatures& features, const Options& options, std::string& why, bool& launched_as_graph) {
  if (!options.keep_positions) {
    why = "recompute: Options::keep_positions is off";
    return false;
  }
  const std::optional<int64_t> memory_limit = options.memory_limit_bytes;
  const std::string key = std::string("spgemm_positions:") + to_string(options.positions_kernel) +
                          (memory_limit ? ":memory<=" + std::to_string(*memory_limit) : std::string());
  const auto kept = c.template get_or_create<Positions<T>>(key, [&] {
    auto made = std::make_shared<Positions<T>>();
    made->plan = plan::plan_spgemm_reuse(features, dtype_of<T>::value, rt.target, int64_t(rt.context.free_bytes()), memory_limit,
                                         options.positions_kernel);
    made->why = made->plan.why;
    if (!made->plan.by_positions) return made;
    switch (made->plan.kernel) {
      case PositionsKernel::Warps:
        made->warp = build_warp_positions(rt, o, c, made->plan.warp, features.products, memory_limit, made->why);
        made->usable = made->warp != nullptr;
        if (made->usable && made->plan.time_against_blocks) keep_the_faster(rt, o, c, features.products, *made);
        break;
      case PositionsKernel::Entries:
        made->entries = build_entry_sums(rt, o, c, made->plan.entries, features.products, made->why);
        made->usable = made->entries != nullptr;
        if (made->usable && made->plan.time_against_warps) keep_warps_if_faster(rt, o, c, features.products, memory_limit, *made);
        break;
      case PositionsKernel::Tiles:
        made->tiles = build_tile_sums(rt, o, c, features, made->why);
        made->usable = made->tiles != nullptr;
        break;
      case PositionsKernel::Rows:
        made->rows = build_row_sums(rt, o, c, made->plan.rows, made->why);
        made->usable = made->rows != nullptr;
        made->why += made->plan.note;
        break;
      default:
        build(rt, o, c, features.products, *made);
    }
    if (made->usable && made->plan.time_against_tiles) keep_tiles_if_faster(rt, o, c, features, *made);
    return made;
  });
  why = kept->why;
  if (!kept->usable) return false;
  rt.context.make_current();
  const CUdeviceptr values = c.values().ptr();
  launched_as_graph =
      launch_plan(rt.context, kept->graph, options.replay_launches, true, o.stream, [&] { compute_kept(*kept, o, values); });
  return true;
}

#define SPARSEJIT_INSTANTIATE(T)                                                                                        \
  template bool recompute_by_positions<T>(detail::RuntimeState&, const variants::SpgemmOperands<T>&, const DeviceCsr<T>&, \
                                          const SpgemmFeatures&, const Options&, std::string&, bool&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
