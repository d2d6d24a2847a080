#include "ops/spgemm_reuse_rows.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cuda/driver_api.hpp"
#include "ops/runtime_state.hpp"

namespace sparsejit::ops {

jit::KernelSpec row_sums_spec(DType dtype, const plan::RowSumsBin& bin) {
  const std::string value_t = dtype == DType::F64 ? "double" : "float";
  return jit::KernelSpec{"spgemm_row_sums.cu", "sj_spgemm_row_sums_" + std::to_string(bin.limit),
                         {{"value_t", value_t}, {"acc_t", value_t}, {"warp_groups", bin.group_threads <= 32}, {"numeric", true},
                          {"group_threads", bin.group_threads}, {"block_threads", bin.block_threads}, {"table_slots", 2 * bin.limit},
                          {"batch", plan::kRowBatch}},
                         {}};
}

template <class T>
struct RowSums {
  struct Bin {
    plan::RowSumsBin shape;
    std::size_t first = 0;  // its first row in the list
    unsigned rows = 0;
    unsigned shared_bytes = 0;
    std::optional<cuda::Kernel> kernel;
  };
  std::vector<Bin> bins;  // the non-empty ones
  DeviceBuffer row_list, missing;
  CUdeviceptr c_row_ptr = 0, c_col = 0;  // C's pattern (C owns these sums)
};

namespace {

// C's rows with entries, by bin (the first whose limit the row's key does not pass, the last
// for every row within its limit), ascending; and the rows too wide for the last.
struct BinnedRows {
  std::vector<std::vector<int32_t>> rows;
  int64_t wide = 0, widest = 0;
};

BinnedRows bin_rows(const PatternView& a, const int32_t* b_row_ptr, const int32_t* c_row_ptr, const plan::RowSumsPlan& plan) {
  BinnedRows binned;
  binned.rows.resize(plan.bins.size());
  for (int32_t r = 0; r < a.rows; ++r) {
    const int64_t nnz = int64_t(c_row_ptr[r + 1]) - c_row_ptr[r];
    if (nnz == 0) continue;
    int64_t products = 0;
    for (int32_t e = a.row_ptr[r]; e < a.row_ptr[r + 1]; ++e) products += b_row_ptr[a.col_idx[e] + 1] - b_row_ptr[a.col_idx[e]];
    const int64_t key = std::max(nnz, (products + plan::kRowSlotProducts - 1) / plan::kRowSlotProducts);
    std::size_t bin = 0;
    while (bin + 1 < plan.bins.size() && key > plan.bins[bin].limit) ++bin;
    if (nnz > plan.bins[bin].limit) {
      ++binned.wide;
      binned.widest = std::max(binned.widest, nnz);
      continue;
    }
    binned.rows[bin].push_back(r);
  }
  return binned;
}

}  // namespace

template <class T>
std::shared_ptr<RowSums<T>> build_row_sums(detail::RuntimeState& rt, const variants::SpgemmOperands<T>& o, const DeviceCsr<T>& c,
                                           const plan::RowSumsPlan& plan, std::string& why) {
  const BinnedRows binned = bin_rows(o.a.host_pattern(), o.b.host_row_ptr(), c.host_row_ptr(), plan);
  if (binned.wide > 0) {
    why = "recompute: " + std::to_string(binned.wide) + " rows of C have more than " + std::to_string(plan.bins.back().limit) +
          " entries (the widest " + std::to_string(binned.widest) + "), more than a row's table in shared memory holds";
    return nullptr;
  }
  auto made = std::make_shared<RowSums<T>>();
  std::vector<int32_t> list;
  std::string shapes;
  for (std::size_t b = 0; b < plan.bins.size(); ++b) {
    const std::vector<int32_t>& rows = binned.rows[b];
    if (rows.empty()) continue;
    typename RowSums<T>::Bin bin;
    bin.shape = plan.bins[b];
    bin.first = list.size();
    bin.rows = unsigned(rows.size());
    bin.shared_bytes = unsigned(plan::row_sums_shared_bytes(bin.shape, dtype_of<T>::value));
    bin.kernel = rt.loader.load(row_sums_spec(dtype_of<T>::value, bin.shape)).kernel;
    bin.kernel->set_max_dynamic_shared(int(bin.shared_bytes));
    list.insert(list.end(), rows.begin(), rows.end());
    shapes += (shapes.empty() ? "" : ", ") + std::to_string(rows.size()) + " of up to " + std::to_string(bin.shape.limit);
    made->bins.push_back(std::move(bin));
  }
  made->row_list = DeviceBuffer(rt.context, std::max<std::size_t>(list.size(), 1) * 4);
  if (!list.empty()) made->row_list.upload(list.data(), list.size() * 4);
  made->missing = DeviceBuffer(rt.context, 4);
  made->missing.fill_bytes_async(0, o.stream);
  made->c_row_ptr = c.row_ptr().ptr();
  made->c_col = c.col_idx().ptr();
  compute_row_sums(*made, o, c.values().ptr());
  int32_t missing = 0;
  made->missing.download_async(&missing, sizeof(missing), o.stream);
  SPARSEJIT_CU(cuStreamSynchronize, o.stream);
  if (missing != 0) {
    why = "recompute: a product's column is not in C's row (C's rows must be sorted for rows)";
    return nullptr;
  }
  const std::size_t kept = made->row_list.bytes() + made->missing.bytes();
  why = "rows: " + std::to_string(list.size()) + " rows of C in tables (" + (shapes.empty() ? "none" : shapes) + " entries), " +
        std::to_string(kept) + " bytes kept on C";
  return made;
}

template <class T>
void compute_row_sums(const RowSums<T>& s, const variants::SpgemmOperands<T>& o, CUdeviceptr values) {
  for (const typename RowSums<T>::Bin& bin : s.bins) {
    CUdeviceptr rows = s.row_list.ptr() + 4 * bin.first, a_row_ptr = o.a.row_ptr().ptr(), a_col = o.a.col_idx().ptr();
    CUdeviceptr a_val = o.a.values().ptr(), b_row_ptr = o.b.row_ptr().ptr(), b_col = o.b.col_idx().ptr();
    CUdeviceptr b_val = o.b.values().ptr(), c_row_ptr = s.c_row_ptr, c_col = s.c_col, missing = s.missing.ptr();
    int row_count = int(bin.rows);
    void* args[] = {&rows, &row_count, &a_row_ptr, &a_col, &a_val, &b_row_ptr, &b_col, &b_val, &c_row_ptr, &c_col, &values, &missing};
    const unsigned groups = unsigned(bin.shape.block_threads / bin.shape.group_threads);
    bin.kernel->launch({(bin.rows + groups - 1) / groups, 1, 1}, {unsigned(bin.shape.block_threads), 1, 1}, bin.shared_bytes, o.stream,
                       args, o.early);
  }
}

#define SPARSEJIT_INSTANTIATE(T)                                                                                              \
  template std::shared_ptr<RowSums<T>> build_row_sums<T>(detail::RuntimeState&, const variants::SpgemmOperands<T>&,           \
                                                         const DeviceCsr<T>&, const plan::RowSumsPlan&, std::string&);        \
  template void compute_row_sums<T>(const RowSums<T>&, const variants::SpgemmOperands<T>&, CUdeviceptr);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit::ops
