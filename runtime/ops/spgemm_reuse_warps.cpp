#include "ops/spgemm_reuse_warps.hpp"

#include <cstdint>
#include <vector>

#include "formats/device_gather.hpp"
#include "formats/spgemm_warp_tasks.hpp"
#include "formats/spgemm_warp_tasks_gpu.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::ops {

static_assert(plan::kMaxWarpRegionEntries == formats::kMaxRegionEntries && plan::kWarpStepProducts == formats::kStepProducts,
              "the reuse plan sizes the warp kernel's work list as formats/spgemm_warp_tasks cuts it");

jit::KernelSpec warp_positions_spec(const char* pass, DType dtype, const plan::WarpTaskPlan& p) {
  const std::string value_t = dtype == DType::F64 ? "double" : "float";
  const bool build = std::string(pass) == "build";
  jit::KernelSpec spec{"spgemm_warp_positions.cu", std::string("sj_spgemm_warp_positions_") + pass,
                       {{"value_t", value_t}, {"acc_t", value_t}, {"build", build}, {"numeric", !build}, {"warps", p.warps}},
                       {}};
  // Only the numeric pass has sums: the build's source, and so its cached kernel, is the same
  // for every region and unroll.
  if (!build) {
    spec.params["region_entries"] = p.region_entries;
    spec.params["unroll"] = p.unroll;
  }
  return spec;
}

template <class T>
struct WarpPositions {
  plan::WarpTaskPlan plan;
  unsigned tasks = 0;
  DeviceBuffer task_list, segment_b, segment_e, segment_at, positions, steps, group_scratch, scratch, counters;
  std::optional<cuda::Kernel> numeric;
};

namespace {

unsigned blocks_for(unsigned tasks, int warps) { return (tasks + unsigned(warps) - 1) / unsigned(warps); }

}  // namespace

// The work list on the device, before the positions: its arrays and sizes, wherever built.
struct TaskLists {
  int64_t products = 0, segments = 0, tasks = 0, steps = 0, scratch_entries = 0, groups = 0;  // steps: at least every task's
  DeviceBuffer task_list, segment_b, segment_e, segment_at, group_scratch;
  std::string built;  // where, for the Decision's why
};

// Built on the device (formats/spgemm_warp_tasks_gpu.hpp); none, with the reason, where it
// leaves them to the host.
template <class T>
std::optional<TaskLists> lists_on_device(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c,
                                         const plan::WarpTaskPlan& plan, int64_t products, std::string& host_why) {
  formats::DeviceWarpTasks d =
      formats::build_warp_tasks_gpu(rt.context, formats::device_pattern(o.a), formats::device_pattern(o.b), formats::device_pattern(c),
                                    products, plan.task_products, plan.region_entries, int64_t(rt.context.free_bytes()), o.stream);
  if (!d.host_only.empty()) {
    host_why = d.host_only;
    return std::nullopt;
  }
  TaskLists l{d.products, d.segments, d.tasks, d.max_steps, d.scratch_entries, d.groups,
              std::move(d.task_list), std::move(d.segment_b), std::move(d.segment_e), std::move(d.segment_at),
              std::move(d.group_scratch), "built on the device"};
  return l;
}

// Built on the host (formats/spgemm_warp_tasks.hpp) from C's row offsets and the columns that
// begin its wide rows' slices (never its whole pattern), then uploaded.
template <class T>
TaskLists lists_on_host(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c,
                        const plan::WarpTaskPlan& plan, const std::string& host_why) {
  const PatternView a = o.a.host_pattern(), b = o.b.host_pattern();
  const auto columns_at = [&](const std::vector<int32_t>& places) {
    return formats::gather_int32(rt.context, c.col_idx().ptr(), places, o.stream);
  };
  const formats::WarpTasks t = formats::build_warp_tasks(a, b, {c.rows(), c.cols(), c.host_row_ptr()}, columns_at,
                                                         plan.task_products, plan.region_entries);
  return {t.products,
          t.segments(),
          int64_t(t.tasks.size()),
          t.steps,
          t.scratch_entries,
          t.groups(),
          DeviceBuffer::from_host(rt.context, t.tasks),
          DeviceBuffer::from_host(rt.context, t.segment_b),
          DeviceBuffer::from_host(rt.context, t.segment_e),
          DeviceBuffer::from_host(rt.context, t.segment_at),
          DeviceBuffer::from_host(rt.context, t.group_scratch),
          "built on the host (" + host_why + ")"};
}

template <class T>
std::shared_ptr<WarpPositions<T>> build_warp_positions(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o,
                                                       const DeviceCsr<T>& c, const plan::WarpTaskPlan& plan, int64_t products,
                                                       std::optional<int64_t> memory_limit, std::string& why) {
  std::string host_why;
  std::optional<TaskLists> on_device = lists_on_device(rt, o, c, plan, products, host_why);
  TaskLists t = on_device ? std::move(*on_device) : lists_on_host(rt, o, c, plan, host_why);
  const DType dtype = dtype_of<T>::value;
  const int64_t bytes =
      plan::warp_positions_bytes({t.products, t.segments, t.tasks, t.steps, t.scratch_entries, t.groups}, dtype);
  why = plan::positions_do_not_fit(bytes, int64_t(rt.context.free_bytes()), memory_limit);
  if (!why.empty()) return nullptr;
  auto made = std::make_shared<WarpPositions<T>>();
  made->plan = plan;
  const cuda::Kernel build_kernel = rt.loader.load(warp_positions_spec("build", dtype, plan)).kernel;
  made->numeric = rt.loader.load(warp_positions_spec("numeric", dtype, plan)).kernel;
  made->tasks = unsigned(t.tasks);
  made->task_list = std::move(t.task_list);
  made->segment_b = std::move(t.segment_b);
  made->segment_e = std::move(t.segment_e);
  made->segment_at = std::move(t.segment_at);
  made->group_scratch = std::move(t.group_scratch);
  made->positions = DeviceBuffer(rt.context, std::size_t(t.products) * sizeof(uint16_t));
  made->steps = DeviceBuffer(rt.context, std::size_t(t.steps) * 2 * sizeof(uint32_t));
  made->scratch = DeviceBuffer(rt.context, std::size_t(t.scratch_entries) * sizeof(T));
  made->counters = DeviceBuffer(rt.context, std::size_t(t.groups) * sizeof(int32_t));
  made->scratch.fill_bytes_async(0, o.stream);  // zero between calls
  made->counters.fill_bytes_async(0, o.stream);
  DeviceBuffer missing(rt.context, sizeof(int32_t));
  missing.fill_bytes_async(0, o.stream);
  CUdeviceptr tasks = made->task_list.ptr(), seg_b = made->segment_b.ptr(), seg_e = made->segment_e.ptr();
  CUdeviceptr seg_at = made->segment_at.ptr(), a_row_ptr = o.a.row_ptr().ptr(), b_col = o.b.col_idx().ptr();
  CUdeviceptr c_row_ptr = c.row_ptr().ptr(), c_col = c.col_idx().ptr(), positions = made->positions.ptr();
  CUdeviceptr steps = made->steps.ptr(), missing_at = missing.ptr();
  int task_count = int(made->tasks), a_rows = o.a.rows();
  void* args[] = {&tasks, &task_count, &seg_b, &seg_e,     &seg_at, &a_row_ptr, &a_rows,
                  &b_col, &c_row_ptr,  &c_col, &positions, &steps,  &missing_at};
  if (made->tasks > 0)
    build_kernel.launch({blocks_for(made->tasks, plan.warps), 1, 1}, {unsigned(32 * plan.warps), 1, 1}, 0, o.stream, args, false);
  int32_t missed = 0;
  missing.download_async(&missed, sizeof(missed), o.stream);
  SPARSEJIT_CU(cuStreamSynchronize, o.stream);
  if (missed != 0) {
    why = "recompute: a product's column is not in C's row (C's rows must be sorted for positions)";
    return nullptr;
  }
  why = "positions: 2 bytes a product, a warp a task, " + std::to_string(bytes) + " bytes kept on C, " + std::to_string(made->tasks) +
        " tasks over " + std::to_string(t.segments) + " segments" +
        (t.groups > 0 ? ", " + std::to_string(t.groups) + " cut into parts" : std::string()) + ", " + t.built;
  return made;
}

template <class T>
void compute_warp_positions(const WarpPositions<T>& p, const variants::SpgemmOperands<T>& o, CUdeviceptr values) {
  if (p.tasks == 0) return;
  CUdeviceptr tasks = p.task_list.ptr(), seg_b = p.segment_b.ptr(), seg_e = p.segment_e.ptr(), seg_at = p.segment_at.ptr();
  CUdeviceptr a_val = o.a.values().ptr(), b_val = o.b.values().ptr(), positions = p.positions.ptr(), steps = p.steps.ptr();
  CUdeviceptr group_scratch = p.group_scratch.ptr(), scratch = p.scratch.ptr(), counters = p.counters.ptr();
  int task_count = int(p.tasks);
  void* args[] = {&tasks,     &task_count, &seg_b,         &seg_e,   &seg_at,   &a_val, &b_val,
                  &positions, &steps,      &group_scratch, &scratch, &counters, &values};
  const unsigned sums_bytes = unsigned(int64_t(p.plan.warps) * p.plan.region_entries * int64_t(sizeof(T)));
  p.numeric->launch({blocks_for(p.tasks, p.plan.warps), 1, 1}, {unsigned(32 * p.plan.warps), 1, 1}, sums_bytes, o.stream, args, o.early);
}

#define SPARSEJIT_INSTANTIATE(T)                                                                                             \
  template std::shared_ptr<WarpPositions<T>> build_warp_positions<T>(detail::RuntimeState&, const variants::SpgemmOperands<T>&, \
                                                                     const DeviceCsr<T>&, const plan::WarpTaskPlan&, int64_t,    \
                                                                     std::optional<int64_t>, std::string&);                      \
  template void compute_warp_positions<T>(const WarpPositions<T>&, const variants::SpgemmOperands<T>&, CUdeviceptr);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
