#include "ops/spgemm_reuse_entries.hpp"

#include <cstdint>
#include <vector>

#include "formats/spgemm_entry_products.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"

namespace sparsejit::ops {

jit::KernelSpec entry_sums_spec(DType dtype, const plan::EntrySumsPlan& p) {
  const std::string value_t = dtype == DType::F64 ? "double" : "float";
  return jit::KernelSpec{"spgemm_entry_sums.cu", "sj_spgemm_entry_sums",
                         {{"value_t", value_t}, {"acc_t", value_t}, {"warps", p.warps}, {"per_lane", p.per_lane}},
                         {}};
}

template <class T>
struct EntrySums {
  plan::EntrySumsPlan plan;
  unsigned ranges = 0;
  DeviceBuffer range_list, product_a, product_b, slot_parts, slot_sums, slot_counters;
  std::optional<cuda::Kernel> numeric;
};

template <class T>
std::shared_ptr<EntrySums<T>> build_entry_sums(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o,
                                               const DeviceCsr<T>& c, const plan::EntrySumsPlan& plan,
                                               std::optional<int64_t> memory_limit, std::string& why) {
  const formats::EntryProducts list =
      formats::build_entry_products(o.a.host_pattern(), o.b.host_pattern(), c.host_pattern(), plan.range_products);
  if (!list.unusable.empty()) {
    why = "recompute: " + list.unusable;
    return nullptr;
  }
  const int64_t bytes = plan::entry_sums_bytes(list.places(), int64_t(list.ranges.size()), list.slots(), dtype_of<T>::value);
  why = plan::positions_do_not_fit(bytes, int64_t(rt.context.free_bytes()), memory_limit);
  if (!why.empty()) return nullptr;
  auto made = std::make_shared<EntrySums<T>>();
  made->plan = plan;
  made->numeric = rt.loader.load(entry_sums_spec(dtype_of<T>::value, plan)).kernel;
  made->ranges = unsigned(list.ranges.size());
  made->range_list = DeviceBuffer::from_host(rt.context, list.ranges);
  made->product_a = DeviceBuffer::from_host(rt.context, list.product_a);
  made->product_b = DeviceBuffer::from_host(rt.context, list.product_b);
  made->slot_parts = DeviceBuffer::from_host(rt.context, list.slot_parts);
  made->slot_sums = DeviceBuffer::from_host(rt.context, std::vector<T>(std::size_t(list.slots()), T(0)));  // zero between calls
  made->slot_counters = DeviceBuffer::from_host(rt.context, std::vector<int32_t>(std::size_t(list.slots()), 0));
  why = "positions: entries, 8 bytes a product, " + std::to_string(bytes) + " bytes kept on C, " + std::to_string(made->ranges) +
        " warp ranges" + (list.slots() > 0 ? ", " + std::to_string(list.slots()) + " entries cut into parts" : std::string());
  return made;
}

template <class T>
void compute_entry_sums(const EntrySums<T>& s, const variants::SpgemmOperands<T>& o, CUdeviceptr values) {
  if (s.ranges == 0) return;
  CUdeviceptr ranges = s.range_list.ptr(), product_a = s.product_a.ptr(), product_b = s.product_b.ptr();
  CUdeviceptr a_val = o.a.values().ptr(), b_val = o.b.values().ptr(), slot_parts = s.slot_parts.ptr();
  CUdeviceptr slot_sums = s.slot_sums.ptr(), slot_counters = s.slot_counters.ptr();
  int range_count = int(s.ranges);
  void* args[] = {&ranges, &range_count, &product_a, &product_b, &a_val, &b_val, &slot_parts, &slot_sums, &slot_counters, &values};
  const unsigned warps = unsigned(s.plan.warps);
  s.numeric->launch({(s.ranges + warps - 1) / warps, 1, 1}, {32 * warps, 1, 1}, 0, o.stream, args, o.early);
}

#define SPARSEJIT_INSTANTIATE(T)                                                                                            \
  template std::shared_ptr<EntrySums<T>> build_entry_sums<T>(detail::RuntimeState&, const variants::SpgemmOperands<T>&,     \
                                                             const DeviceCsr<T>&, const plan::EntrySumsPlan&,               \
                                                             std::optional<int64_t>, std::string&);                         \
  template void compute_entry_sums<T>(const EntrySums<T>&, const variants::SpgemmOperands<T>&, CUdeviceptr);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
