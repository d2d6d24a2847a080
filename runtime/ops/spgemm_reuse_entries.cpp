#include "ops/spgemm_reuse_entries.hpp"

#include <cstdint>
#include <optional>
#include <string>

#include "formats/spgemm_entry_products_gpu.hpp"
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
                                               const DeviceCsr<T>& c, const plan::EntrySumsPlan& plan, int64_t products,
                                               std::string& why) {
  formats::DeviceEntryProducts list = formats::build_entry_products_gpu(
      rt.context, formats::device_pattern(o.a), formats::device_pattern(o.b), formats::device_pattern(c), products, plan.range_products, o.stream);
  if (!list.unusable.empty()) {
    why = "recompute: " + list.unusable;
    return nullptr;
  }
  auto made = std::make_shared<EntrySums<T>>();
  made->plan = plan;
  made->numeric = rt.loader.load(entry_sums_spec(dtype_of<T>::value, plan)).kernel;
  made->ranges = unsigned(list.ranges);
  made->range_list = std::move(list.range_list);
  made->product_a = std::move(list.product_a);
  made->product_b = std::move(list.product_b);
  made->slot_parts = std::move(list.slot_parts);
  made->slot_sums = DeviceBuffer(rt.context, std::size_t(list.slots) * sizeof(T));  // zero between calls
  made->slot_counters = DeviceBuffer(rt.context, std::size_t(list.slots) * sizeof(int32_t));
  made->slot_sums.fill_bytes_async(0, o.stream);
  made->slot_counters.fill_bytes_async(0, o.stream);
  const int64_t bytes = plan::entry_sums_bytes(list.places, list.ranges, list.slots, dtype_of<T>::value);
  why = "positions: entries, 8 bytes a product, " + std::to_string(bytes) + " bytes kept on C, " + std::to_string(made->ranges) +
        " warp ranges" + (list.slots > 0 ? ", " + std::to_string(list.slots) + " entries cut into parts" : std::string());
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
                                                             const DeviceCsr<T>&, const plan::EntrySumsPlan&, int64_t,      \
                                                             std::string&);                                                 \
  template void compute_entry_sums<T>(const EntrySums<T>&, const variants::SpgemmOperands<T>&, CUdeviceptr);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
