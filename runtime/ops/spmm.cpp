// SpMM executor: plan -> prepare -> compile -> launch for C = A·B and C = Aᵀ·B.
//
// Launch order on the caller's stream, per variant:
//   csr_rowwarp  A·B: one kernel, plain stores.
//   csr_vector   A·B: spmm_rs_light over A, plain stores of every row of C.
//                Aᵀ·B: memset C, spmm_rs_light_t over A (global atomics).
//   csr_rowsplit A·B: one kernel, a block per row and K slice, plain stores.
//   csr_merge    memset C, then spmm_csr_merge (A·B: stores, atomics for rows shared between
//                nonzero ranges) or spmm_csr_merge_t (Aᵀ·B: atomics), over the cached COO
//                row indices.
//   rs           A·B: spmm_rs_light over the split's light CSR (all rows: plain stores, so no
//                memset and no light atomics), then spmm_rs_heavy adding the heavy segments
//                atomically (skipped when the split has no heavy segment).
//                Aᵀ·B: memset C, spmm_rs_light_t, spmm_rs_heavy_t.
//   dense        cuBLAS GEMM over the dense copy of A (SGEMM / DGEMM, full precision).
//   cusparse     the vendor's prepared call.
// Preparation (once per handle, K, value type, transpose, vector alignment and forced
// choice): plan, load the kernels, opt the heavy kernel in to its shared memory, upload the
// COO row indices (csr_merge; once per pattern, shared with SDDMM's coo_flat), and build
// and upload the split (cached on the handle per (W, T, dtype, S); rebuilt when the values
// change), or the dense copy of A (dense; cached on the handle, rebuilt when the values change). A call after that does one plan-cache lookup and the launches.
// Measured selection (Options::reuse, Options::measure): on a reused pattern the call times
// the planner's shortlist once (each entry prepared as a forced choice, run on the runtime's
// measure stream), replaces the handle's plan with the fastest and remembers the times per
// pattern fingerprint, so other handles of the pattern take the fastest without timing.
#include <atomic>
#include <map>
#include <mutex>
#include <tuple>

#include "formats/coo_rows.hpp"
#include "formats/dense_copy.hpp"
#include "formats/device_row_segments.hpp"
#include "ops/call_common.hpp"
#include "ops/measured_selection.hpp"
#include "ops/runtime_state.hpp"
#include "ops/spmm_kernels.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "vendor/cusparse_spmm.hpp"

namespace sparsejit {

namespace {

// The value types cuSPARSE is wrapped for and the split is built for.
template <class T>
constexpr bool kFloatOrDouble = std::is_same_v<T, float> || std::is_same_v<T, double>;

struct Launch {
  cuda::Kernel kernel;
  cuda::Dim3 grid, block;
  unsigned shared_bytes = 0;
};

enum class Path { Rowwarp, Vector, RowSplit, Merge, Rs, Dense, Vendor };

// A plan ready to launch: our kernels with their launch shapes, or the vendor with its
// per-operand prepared calls (cuSPARSE binds B and C at preparation).
template <class T>
struct PreparedSpmm {
  std::shared_ptr<const Decision> decision;
  Path path = Path::Vendor;
  bool transpose = false;
  std::optional<Launch> main;   // rowwarp, rowsplit, merge, or the light kernel of csr_vector / rs
  std::optional<Launch> heavy;  // rs: grid.x is the split's work items, set per call
  std::shared_ptr<CachedRowSegments<T>> split;
  std::shared_ptr<const DeviceBuffer> coo_rows;  // csr_merge: the row of every nonzero
  std::shared_ptr<CachedDenseCopy<T>> dense;     // dense: A expanded
  // Measured selection has run for this plan's pattern and problem, or will not (forced, or
  // taken from earlier times): set once, by the call that decides.
  std::atomic<bool> settled{false};

  using OperandKey = std::tuple<const void*, int64_t, const void*, int64_t, int32_t>;
  std::mutex vendor_mutex;
  std::map<OperandKey, std::unique_ptr<vendor::CusparseSpmm<T>>> vendor_calls;
};

void check_spmm_shapes(int32_t a_rows, int32_t a_cols, bool transpose, int32_t b_rows, int32_t b_cols,
                       int32_t c_rows, int32_t c_cols) {
  const int32_t inner = transpose ? a_rows : a_cols;
  const int32_t outer = transpose ? a_cols : a_rows;
  const std::string op = transpose ? "Aᵀ·B" : "A·B";
  const std::string a_shape = std::to_string(a_rows) + "x" + std::to_string(a_cols);
  if (b_rows != inner)
    throw InvalidInputError("spmm: A is " + a_shape + " but B has " + std::to_string(b_rows) + " rows (" + op + " needs " + std::to_string(inner) + ")");
  if (c_rows != outer || c_cols != b_cols)
    throw InvalidInputError("spmm: C is " + std::to_string(c_rows) + "x" + std::to_string(c_cols) + " but " + op + " is " +
                            std::to_string(outer) + "x" + std::to_string(b_cols));
}

// The largest of 4, 2, 1 dividing both leading dimensions: all the planner's vector choice
// depends on besides K, so plans are shared between operands that agree on it.
int64_t ld_alignment(int64_t ldb, int64_t ldc) {
  for (int64_t w : {4, 2})
    if (ldb % w == 0 && ldc % w == 0) return w;
  return 1;
}

// Split statistics for the planner, measured once per (W, T) and cached on the handle.
template <class T>
plan::SplitStatsSource cached_split_stats(const DeviceCsr<T>& a) {
  return [&a](int32_t w, int32_t t) {
    return *a.template get_or_create<SplitStats>("rs_stats:" + std::to_string(w) + ":" + std::to_string(t), [&] {
      return std::make_shared<SplitStats>(row_segment_split(a.host_pattern(), w, t));
    });
  };
}

// gridDim.y: the K slices, at most 65535 of them.
unsigned k_slices(int32_t k, int slice) {
  const int64_t n = (int64_t(k) + slice - 1) / slice;
  if (n > 65535)
    throw UnsupportedError("spmm: K = " + std::to_string(k) + " needs " + std::to_string(n) + " slices of " +
                           std::to_string(slice) + " columns, more than the grid's 65535");
  return unsigned(n);
}

Launch light_launch(detail::RuntimeState& rt, Decision& d, DType dtype, bool transpose, int32_t rows, int32_t k) {
  const ops::LoadedKernel loaded = rt.loader.load(ops::light_spec(d.params, dtype, transpose));
  ops::record_kernel(d, loaded);
  const int threads = d.params.at("block_threads").get<int>();
  const int rows_per_block = threads / d.params.at("lanes_per_row").get<int>();
  return {loaded.kernel, {ops::blocks_for(rows, rows_per_block), k_slices(k, ops::light_slice(d.params)), 1},
          {unsigned(threads), 1, 1}, 0};
}

// One block of `parts` groups of `lanes` lanes per row and K slice.
Launch rowsplit_launch(detail::RuntimeState& rt, Decision& d, DType dtype, int32_t rows, int32_t k) {
  const ops::LoadedKernel loaded = rt.loader.load(ops::rowsplit_spec(d.params, dtype));
  ops::record_kernel(d, loaded);
  const int threads = d.params.at("lanes").get<int>() * d.params.at("parts").get<int>();
  return {loaded.kernel, {ops::blocks_for(rows, 1), k_slices(k, ops::rowsplit_slice(d.params)), 1}, {unsigned(threads), 1, 1}, 0};
}

// One group of `lanes` lanes per nnz_per_group nonzeros and K slice.
Launch merge_launch(detail::RuntimeState& rt, Decision& d, DType dtype, bool transpose, int64_t nnz, int32_t k) {
  const ops::LoadedKernel loaded = rt.loader.load(ops::merge_spec(d.params, dtype, transpose));
  ops::record_kernel(d, loaded);
  const int threads = d.params.at("block_threads").get<int>();
  const int64_t range = d.params.at("nnz_per_group").get<int>();
  const int64_t groups = (nnz + range - 1) / range;
  const int64_t groups_per_block = threads / d.params.at("lanes").get<int>();
  return {loaded.kernel, {unsigned((groups + groups_per_block - 1) / groups_per_block), k_slices(k, ops::merge_slice(d.params)), 1},
          {unsigned(threads), 1, 1}, 0};
}

Launch heavy_launch(detail::RuntimeState& rt, Decision& d, DType dtype, bool transpose, int32_t k) {
  const ops::LoadedKernel loaded = rt.loader.load(ops::heavy_spec(d.params, dtype, transpose));
  d.compile_ms += loaded.compile_ms;
  d.load_ms += loaded.load_ms;
  const unsigned shared = ops::heavy_shared_bytes(d.params, dtype);
  // The limit goes to the device's maximum, not this plan's need: the kernel object is shared
  // by every plan with the same template parameters, and the panel width is not one of them.
  loaded.kernel.set_max_dynamic_shared(int(rt.target.shared_per_block_optin));
  return {loaded.kernel, {1, k_slices(k, ops::heavy_slice(d.params)), 1},
          {unsigned(d.params.at("heavy_threads").get<int>()), 1, 1}, shared};
}

// The plan for `options`; with `measured` (times of this pattern's shortlist) the fastest of
// them instead of the model's choice, unless the choice was forced.
template <class T>
std::shared_ptr<PreparedSpmm<T>> prepare_spmm(detail::RuntimeState& rt, const DeviceCsr<T>& a, const Features& f,
                                              const plan::SpmmProblem& problem, const Options& options,
                                              const std::optional<std::vector<plan::TimedChoice>>& measured = std::nullopt) {
  auto prepared = std::make_shared<PreparedSpmm<T>>();
  prepared->transpose = problem.transpose_a;
  Decision d = plan::plan_spmm(f, problem, rt.target, options, cached_split_stats(a));
  const bool took_times = measured && plan::take_fastest(d, *measured, ops::kVendor, plan::kSpmmVendorMargin);
  if (d.source == DecisionSource::Forced || took_times) prepared->settled = true;
  if (d.variant == "csr_rowwarp") {
    const ops::LoadedKernel loaded = rt.loader.load(ops::rowwarp_spec(d.params, problem.dtype));
    ops::record_kernel(d, loaded);
    const int warps = d.params.at("warps_per_block").get<int>();
    prepared->path = Path::Rowwarp;
    prepared->main = Launch{loaded.kernel, {ops::blocks_for(f.basic.rows, warps), 1, 1}, {unsigned(32 * warps), 1, 1}, 0};
  } else if (d.variant == "csr_vector") {
    prepared->path = Path::Vector;
    prepared->main = light_launch(rt, d, problem.dtype, problem.transpose_a, a.rows(), problem.k);
  } else if (d.variant == "csr_rowsplit") {
    prepared->path = Path::RowSplit;
    prepared->main = rowsplit_launch(rt, d, problem.dtype, a.rows(), problem.k);
  } else if (d.variant == "csr_merge") {
    prepared->path = Path::Merge;
    prepared->main = merge_launch(rt, d, problem.dtype, problem.transpose_a, a.nnz(), problem.k);
    prepared->coo_rows = a.template get_or_create<DeviceBuffer>("coo_rows", [&] {
      return std::make_shared<DeviceBuffer>(DeviceBuffer::from_host(rt.context, formats::coo_row_indices(a.host_pattern())));
    });
  } else if (d.variant == "rs") {
    if constexpr (kFloatOrDouble<T>) {  // the planner offers rs for f32 and f64 only
      prepared->path = Path::Rs;
      prepared->main = light_launch(rt, d, problem.dtype, problem.transpose_a, a.rows(), problem.k);
      prepared->heavy = heavy_launch(rt, d, problem.dtype, problem.transpose_a, problem.k);
      prepared->split = cached_row_segments(a, d.params.at("panel_width").get<int32_t>(),
                                            d.params.at("threshold").get<int32_t>(),
                                            d.params.at("segments_per_block").get<int32_t>());
      prepared->split->current(a);  // build and upload now, not in the first timed call
    }
  } else if (d.variant == "dense") {
    if constexpr (kFloatOrDouble<T>) {  // the planner offers dense for f32 and f64 only
      prepared->path = Path::Dense;
      prepared->dense = cached_dense_copy(a);
      prepared->dense->current(a);  // expand now, not in the first timed call
      std::lock_guard<std::mutex> lock(rt.cublas_mutex);
      rt.cublas_handle();  // create the handle now too
    }
  }
  prepared->decision = std::make_shared<const Decision>(std::move(d));
  return prepared;
}

// One launch of a merge kernel (either direction): (nnz, k, row_idx, col_idx, values, b, ldb, c, ldc).
void launch_merge(const Launch& l, long long nnz, int k, CUdeviceptr row_idx, CUdeviceptr col_idx, CUdeviceptr values,
                  CUdeviceptr b, long long ldb, CUdeviceptr c, long long ldc, CUstream stream, bool early) {
  void* args[] = {&nnz, &k, &row_idx, &col_idx, &values, &b, &ldb, &c, &ldc};
  l.kernel.launch(l.grid, l.block, l.shared_bytes, stream, args, early);
}

// One launch of a CSR kernel (rowwarp, rowsplit or light, either direction): all take
// (m, k, row_ptr, col_idx, values, b, ldb, c, ldc).
void launch_csr(const Launch& l, int m, int k, CUdeviceptr row_ptr, CUdeviceptr col_idx, CUdeviceptr values,
                CUdeviceptr b, long long ldb, CUdeviceptr c, long long ldc, CUstream stream, bool early) {
  void* args[] = {&m, &k, &row_ptr, &col_idx, &values, &b, &ldb, &c, &ldc};
  l.kernel.launch(l.grid, l.block, l.shared_bytes, stream, args, early);
}

template <class T>
void launch_heavy(const Launch& l, const DeviceRowSegments<T>& s, int k, CUdeviceptr b, long long ldb, CUdeviceptr c,
                  long long ldc, CUstream stream, bool early) {
  int cols = s.cols, width = s.panel_width;
  CUdeviceptr panel = s.block_panel.ptr(), seg_begin = s.block_seg_begin.ptr(), seg_end = s.block_seg_end.ptr();
  CUdeviceptr seg_row = s.seg_row.ptr(), seg_ptr = s.seg_ptr.ptr(), col = s.heavy_col.ptr(), val = s.heavy_val.ptr();
  void* args[] = {&k, &cols, &width, &panel, &seg_begin, &seg_end, &seg_row, &seg_ptr, &col, &val, &b, &ldb, &c, &ldc};
  l.kernel.launch({unsigned(s.items), l.grid.y, 1}, l.block, l.shared_bytes, stream, args, early);
}

template <class T>
void run_ours(PreparedSpmm<T>& p, const DeviceCsr<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, CUstream stream,
              bool early) {
  const int k = b.cols();
  const CUdeviceptr bp = b.buffer().ptr(), cp = c.buffer().ptr();
  const long long ldb = b.ld(), ldc = c.ld();
  // The transposed kernels and the merge kernel add into C; rows no range covers stay 0.
  if (p.transpose || p.path == Path::Merge) c.buffer().fill_bytes_async(0, stream);
  if (p.path == Path::Merge) {
    launch_merge(*p.main, a.nnz(), k, p.coo_rows->ptr(), a.col_idx().ptr(), a.values().ptr(), bp, ldb, cp, ldc, stream,
                 early);
    return;
  }
  if (p.path != Path::Rs) {
    launch_csr(*p.main, a.rows(), k, a.row_ptr().ptr(), a.col_idx().ptr(), a.values().ptr(), bp, ldb, cp, ldc, stream,
               early);
    return;
  }
  if constexpr (kFloatOrDouble<T>) {
    const std::shared_ptr<const DeviceRowSegments<T>> s = p.split->current(a);
    launch_csr(*p.main, a.rows(), k, s->light_ptr.ptr(), s->light_col.ptr(), s->light_val.ptr(), bp, ldb, cp, ldc, stream,
               early);
    if (s->items > 0) launch_heavy(*p.heavy, *s, k, bp, ldb, cp, ldc, stream, early);
  }
}

template <class T>
void run_dense(detail::RuntimeState& rt, PreparedSpmm<T>& p, const DeviceCsr<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c,
               CUstream stream) {
  if constexpr (kFloatOrDouble<T>) {
    const std::shared_ptr<const DenseCopy> copy = p.dense->current(a);
    std::lock_guard<std::mutex> lock(rt.cublas_mutex);
    vendor::dense_gemm(rt.cublas_handle(), copy->values, a.rows(), a.cols(), p.transpose, b, c, stream);
  }
}

template <class T>
void run_vendor(detail::RuntimeState& rt, PreparedSpmm<T>& p, const DeviceCsr<T>& a, const DeviceDense<T>& b,
                DeviceDense<T>& c, bool transpose, CUstream stream) {
  if constexpr (kFloatOrDouble<T>) {
    const auto alg = vendor::SpmmAlgorithm(p.decision->params.at("alg").template get<int>() - 1);
    std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
    auto& call = p.vendor_calls[{b.data(), b.ld(), c.data(), c.ld(), b.cols()}];
    if (!call) {
      if (p.vendor_calls.size() > 8) {  // operands change every call: keep only this one
        auto mine = std::move(call);
        p.vendor_calls.clear();
        call = std::move(mine);
      }
      call = std::make_unique<vendor::CusparseSpmm<T>>(rt.cusparse, a, transpose, b, c, alg, stream);
    }
    call->run(stream);
  } else {
    throw UnsupportedError("cuSPARSE SpMM is wrapped for f32 and f64 only");
  }
}

template <class T>
void run_prepared(detail::RuntimeState& rt, PreparedSpmm<T>& p, const DeviceCsr<T>& a, const DeviceDense<T>& b,
                  DeviceDense<T>& c, CUstream stream, bool early) {
  if (a.nnz() == 0 && c.rows() > 0) {  // nothing to multiply: C = 0
    c.buffer().fill_bytes_async(0, stream);
  } else if (p.path == Path::Dense) {
    run_dense(rt, p, a, b, c, stream);
  } else if (p.path == Path::Vendor) {
    run_vendor(rt, p, a, b, c, p.transpose, stream);
  } else {
    run_ours(p, a, b, c, stream, early);
  }
}

}  // namespace

template <class T>
CallInfo Runtime::spmm(const DeviceCsr<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, const Options& options) {
  check_spmm_shapes(a.rows(), a.cols(), options.transpose_a, b.rows(), b.cols(), c.rows(), c.cols());
  detail::RuntimeState& rt = *state_;
  const plan::SpmmProblem problem{b.cols(), dtype_of<T>::value, options.transpose_a, b.ld(), c.ld()};
  const auto features = ops::cached_features(a);
  const std::string key = ops::plan_key(Op::SpMM, problem.dtype, problem.k, problem.transpose_a, options, rt.id) +
                          ":ld" + std::to_string(ld_alignment(b.ld(), c.ld()));
  bool reused = true;
  std::shared_ptr<PreparedSpmm<T>> prepared = a.template get_or_create<PreparedSpmm<T>>(key, [&] {
    reused = false;
    return prepare_spmm<T>(rt, a, *features, problem, options, ops::earlier_times(rt, *features, key, options));
  });
  const bool early = ops::launches_early(options, rt.target.sm);
  ops::settle_by_measurement(rt, a, key, *features, options, prepared, reused, [&] {
    return ops::SelectionHooks<PreparedSpmm<T>>{
        "spmm",
        plan::kSpmmVendorMargin,
        [&](const Options& forced) { return prepare_spmm<T>(rt, a, *features, problem, forced); },
        [&](const std::vector<plan::TimedChoice>& times) { return prepare_spmm<T>(rt, a, *features, problem, options, times); },
        [&](PreparedSpmm<T>& p, CUstream stream) { run_prepared(rt, p, a, b, c, stream, early); },
        [&](const plan::TimedChoice& t) { return plan::spmm_neighbors(t.variant, t.params, problem, rt.target); }};
  });
  run_prepared(rt, *prepared, a, b, c, static_cast<CUstream>(options.stream), early);
  return {prepared->decision, reused};
}

Decision explain_spmm(PatternView a, int32_t k, DType dtype, const Options& options, int device) {
  if (k < 1) throw InvalidInputError("spmm: k = " + std::to_string(k) + " must be >= 1");
  const plan::DeviceTarget target = detail::explain_target(device);
  Decision d = plan::plan_spmm(inspect(a), {k, dtype, options.transpose_a, k, k}, target, options,
                               [&a](int32_t w, int32_t t) { return row_segment_split(a, w, t); });
  for (const jit::KernelSpec& spec : ops::spmm_kernel_specs(d, dtype, options.transpose_a)) {
    const jit::CompiledKernel compiled = ops::compile_only(spec, target.sm);
    d.kernel_origin = ops::to_origin(compiled.source);
    d.compile_ms += compiled.compile_ms;
    d.load_ms += compiled.load_ms;
  }
  return d;
}

#define SPARSEJIT_INSTANTIATE(T) \
  template CallInfo Runtime::spmm<T>(const DeviceCsr<T>&, const DeviceDense<T>&, DeviceDense<T>&, const Options&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
