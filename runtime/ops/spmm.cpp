// SpMM executor: plan -> prepare -> compile -> launch for C = A·B and C = Aᵀ·B.
#include <map>
#include <mutex>
#include <tuple>

#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "vendor/cusparse_spmm.hpp"

namespace sparsejit {

namespace {

template <class T>
constexpr bool kVendorType = std::is_same_v<T, float> || std::is_same_v<T, double>;

// A plan ready to launch: our kernel with its launch shape, or the vendor with its
// per-operand prepared calls (cuSPARSE binds B and C at preparation).
template <class T>
struct PreparedSpmm {
  std::shared_ptr<const Decision> decision;
  std::optional<cuda::Kernel> kernel;
  cuda::Dim3 grid, block;

  using OperandKey = std::tuple<const void*, int64_t, const void*, int64_t, int32_t>;
  std::mutex vendor_mutex;
  std::map<OperandKey, std::unique_ptr<vendor::CusparseSpmm<T>>> vendor_calls;
};

jit::KernelSpec rowwarp_spec(const Decision& d, DType dtype) {
  const bool f64 = dtype == DType::F64;
  return {"spmm_csr_rowwarp.cu", "sj_spmm_csr_rowwarp",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"},
           {"warps_per_block", d.params.at("warps_per_block")}, {"cols_per_lane", d.params.at("cols_per_lane")},
           {"fp16", dtype == DType::F16}, {"bf16", dtype == DType::BF16}},
          {}};
}

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

template <class T>
std::shared_ptr<PreparedSpmm<T>> prepare_spmm(detail::RuntimeState& rt, const Features& f, const plan::SpmmProblem& problem,
                                              const Options& options) {
  auto prepared = std::make_shared<PreparedSpmm<T>>();
  Decision d = plan::plan_spmm(f, problem, rt.target, options);
  if (d.variant == "csr_rowwarp") {
    const ops::LoadedKernel loaded = rt.loader.load(rowwarp_spec(d, problem.dtype));
    ops::record_kernel(d, loaded);
    const int warps = d.params.at("warps_per_block").get<int>();
    prepared->kernel = loaded.kernel;
    prepared->block = {unsigned(32 * warps), 1, 1};
    prepared->grid = {ops::blocks_for(f.basic.rows, warps), 1, 1};
  }
  prepared->decision = std::make_shared<const Decision>(std::move(d));
  return prepared;
}

template <class T>
void run_vendor(detail::RuntimeState& rt, PreparedSpmm<T>& p, const DeviceCsr<T>& a, const DeviceDense<T>& b,
                DeviceDense<T>& c, bool transpose, CUstream stream) {
  if constexpr (kVendorType<T>) {
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

}  // namespace

template <class T>
CallInfo Runtime::spmm(const DeviceCsr<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, const Options& options) {
  check_spmm_shapes(a.rows(), a.cols(), options.transpose_a, b.rows(), b.cols(), c.rows(), c.cols());
  detail::RuntimeState& rt = *state_;
  const plan::SpmmProblem problem{b.cols(), dtype_of<T>::value, options.transpose_a};
  const auto features = ops::cached_features(a);
  bool reused = true;
  const auto prepared = a.template get_or_create<PreparedSpmm<T>>(
      ops::plan_key(Op::SpMM, problem.dtype, problem.k, problem.transpose_a, options, rt.id), [&] {
        reused = false;
        return prepare_spmm<T>(rt, *features, problem, options);
      });
  const CUstream stream = static_cast<CUstream>(options.stream);
  if (a.nnz() == 0 && c.rows() > 0) {  // nothing to multiply: C = 0
    c.buffer().fill_bytes_async(0, stream);
  } else if (prepared->kernel) {
    int m = a.rows(), k = b.cols();
    CUdeviceptr row_ptr = a.row_ptr().ptr(), col_idx = a.col_idx().ptr(), values = a.values().ptr();
    CUdeviceptr bp = b.buffer().ptr(), cp = c.buffer().ptr();
    long long ldb = b.ld(), ldc = c.ld();
    void* args[] = {&m, &k, &row_ptr, &col_idx, &values, &bp, &ldb, &cp, &ldc};
    prepared->kernel->launch(prepared->grid, prepared->block, 0, stream, args);
  } else {
    run_vendor(rt, *prepared, a, b, c, options.transpose_a, stream);
  }
  return {prepared->decision, reused};
}

Decision explain_spmm(PatternView a, int32_t k, DType dtype, const Options& options, int device) {
  if (k < 1) throw InvalidInputError("spmm: k = " + std::to_string(k) + " must be >= 1");
  const plan::DeviceTarget target = detail::explain_target(device);
  Decision d = plan::plan_spmm(inspect(a), {k, dtype, options.transpose_a}, target, options);
  if (d.variant == "csr_rowwarp") {
    const jit::CompiledKernel compiled = ops::compile_only(rowwarp_spec(d, dtype), target.sm);
    d.kernel_origin = ops::to_origin(compiled.source);
    d.compile_ms = compiled.compile_ms;
    d.load_ms = compiled.load_ms;
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
