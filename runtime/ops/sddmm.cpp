// SDDMM executor: plan -> prepare -> compile -> launch for P = S ∘ (A·Bᵀ).
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "formats/coo_rows.hpp"
#include "ops/call_common.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "vendor/cusparse_sddmm.hpp"

namespace sparsejit {

namespace {

constexpr int kScaleBlock = 256;

template <class T>
constexpr bool kVendorType = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
struct PreparedSddmm {
  std::shared_ptr<const Decision> decision;
  std::optional<cuda::Kernel> kernel;  // coo_flat, or the vendor's scale step
  cuda::Dim3 grid, block;
  std::shared_ptr<const DeviceBuffer> coo_rows;  // coo_flat only

  using OperandKey = std::tuple<const void*, int64_t, const void*, int64_t, CUdeviceptr>;
  std::mutex vendor_mutex;
  std::map<OperandKey, std::unique_ptr<vendor::CusparseSampledDots<T>>> vendor_calls;
};

jit::KernelSpec coo_flat_spec(const Decision& d, DType dtype) {
  const bool f64 = dtype == DType::F64;
  const int width = d.params.at("vector_width").get<int>();
  return {"sddmm_coo_flat.cu", "sj_sddmm_coo_flat",
          {{"value_t", cuda_type_name(dtype)}, {"acc_t", f64 ? "double" : "float"},
           {"group_size", d.params.at("group_size")}, {"block_size", d.params.at("threads_per_block")},
           {"vec4", width > 1}, {"vec_t", f64 ? "double2" : "float4"}, {"vec_width", width},
           {"fp16", dtype == DType::F16}, {"bf16", dtype == DType::BF16}},
          {}};
}

jit::KernelSpec scale_spec(DType dtype) {
  return {"sddmm_scale.cu", "sj_sddmm_scale", {{"value_t", cuda_type_name(dtype)}, {"block_size", kScaleBlock}}, {}};
}

template <class T>
void check_sddmm_shapes(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, const DeviceBuffer& p) {
  const std::string s_shape = std::to_string(s.rows()) + "x" + std::to_string(s.cols());
  if (a.rows() != s.rows())
    throw InvalidInputError("sddmm: S is " + s_shape + " but A has " + std::to_string(a.rows()) + " rows");
  if (b.rows() != s.cols())
    throw InvalidInputError("sddmm: S is " + s_shape + " but B has " + std::to_string(b.rows()) + " rows (B is n x k)");
  if (a.cols() != b.cols())
    throw InvalidInputError("sddmm: A has " + std::to_string(a.cols()) + " columns but B has " + std::to_string(b.cols()));
  if (a.cols() < 1) throw InvalidInputError("sddmm: k = " + std::to_string(a.cols()) + " must be >= 1");
  const std::size_t need = std::size_t(s.nnz()) * sizeof(T);
  if (p.bytes() < need)
    throw InvalidInputError("sddmm: P has " + std::to_string(p.bytes()) + " bytes, nnz(S) values need " + std::to_string(need));
}

template <class T>
std::shared_ptr<PreparedSddmm<T>> prepare_sddmm(detail::RuntimeState& rt, const DeviceCsr<T>& s, const Features& f,
                                                const plan::SddmmProblem& problem, const Options& options) {
  auto prepared = std::make_shared<PreparedSddmm<T>>();
  Decision d = plan::plan_sddmm(f, problem, rt.target, options);
  prepared->block = {unsigned(kScaleBlock), 1, 1};
  prepared->grid = {ops::blocks_for(s.nnz(), kScaleBlock), 1, 1};
  if (d.variant == "coo_flat") {
    const ops::LoadedKernel loaded = rt.loader.load(coo_flat_spec(d, problem.dtype));
    ops::record_kernel(d, loaded);
    prepared->kernel = loaded.kernel;
    const int threads = d.params.at("threads_per_block").get<int>();
    prepared->block = {unsigned(threads), 1, 1};
    prepared->grid = {ops::blocks_for(s.nnz() * d.params.at("group_size").get<int64_t>(), threads), 1, 1};
    prepared->coo_rows = s.template get_or_create<DeviceBuffer>("coo_rows", [&] {
      return std::make_shared<DeviceBuffer>(DeviceBuffer::from_host(rt.context, formats::coo_row_indices(s.host_pattern())));
    });
  } else {
    const ops::LoadedKernel loaded = rt.loader.load(scale_spec(problem.dtype));
    ops::record_kernel(d, loaded);
    prepared->kernel = loaded.kernel;
  }
  prepared->decision = std::make_shared<const Decision>(std::move(d));
  return prepared;
}

template <class T>
void run_vendor(detail::RuntimeState& rt, PreparedSddmm<T>& p, const DeviceCsr<T>& s, const DeviceDense<T>& a,
                const DeviceDense<T>& b, DeviceBuffer& out, CUstream stream) {
  if constexpr (kVendorType<T>) {
    {
      std::lock_guard<std::mutex> lock(rt.cusparse_mutex);
      auto& call = p.vendor_calls[{a.data(), a.ld(), b.data(), b.ld(), out.ptr()}];
      if (!call) {
        if (p.vendor_calls.size() > 8) {
          auto mine = std::move(call);
          p.vendor_calls.clear();
          call = std::move(mine);
        }
        call = std::make_unique<vendor::CusparseSampledDots<T>>(rt.cusparse, s, a, b, out, stream);
      }
      call->run(stream);
    }
    long long nnz = s.nnz();
    CUdeviceptr sv = s.values().ptr(), pv = out.ptr();
    void* args[] = {&nnz, &sv, &pv};
    p.kernel->launch(p.grid, p.block, 0, stream, args);
  } else {
    throw UnsupportedError("cuSPARSE SDDMM is wrapped for f32 and f64 only");
  }
}

}  // namespace

template <class T>
CallInfo Runtime::sddmm(const DeviceCsr<T>& s, const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceBuffer& p,
                        const Options& options) {
  check_sddmm_shapes(s, a, b, p);
  detail::RuntimeState& rt = *state_;
  const plan::SddmmProblem problem{a.cols(), dtype_of<T>::value, a.ld(), b.ld()};
  const auto features = ops::cached_features(s);
  bool reused = true;
  const std::string key = ops::plan_key(Op::SDDMM, problem.dtype, problem.k, false, options, rt.id) + ":ld" +
                          std::to_string(a.ld()) + "," + std::to_string(b.ld());
  const auto prepared = s.template get_or_create<PreparedSddmm<T>>(key, [&] {
    reused = false;
    return prepare_sddmm<T>(rt, s, *features, problem, options);
  });
  const CUstream stream = static_cast<CUstream>(options.stream);
  if (s.nnz() == 0) return {prepared->decision, reused};
  if (prepared->coo_rows) {
    long long nnz = s.nnz();
    int k = a.cols();
    CUdeviceptr rows = prepared->coo_rows->ptr(), cols = s.col_idx().ptr(), sv = s.values().ptr();
    CUdeviceptr ap = a.buffer().ptr(), bp = b.buffer().ptr(), pp = p.ptr();
    long long lda = a.ld(), ldb = b.ld();
    void* args[] = {&nnz, &k, &rows, &cols, &sv, &ap, &lda, &bp, &ldb, &pp};
    prepared->kernel->launch(prepared->grid, prepared->block, 0, stream, args);
  } else {
    run_vendor(rt, *prepared, s, a, b, p, stream);
  }
  return {prepared->decision, reused};
}

Decision explain_sddmm(PatternView s, int32_t k, DType dtype, const Options& options, int device) {
  if (k < 1) throw InvalidInputError("sddmm: k = " + std::to_string(k) + " must be >= 1");
  const plan::DeviceTarget target = detail::explain_target(device);
  Decision d = plan::plan_sddmm(inspect(s), {k, dtype, k, k}, target, options);
  const jit::CompiledKernel compiled =
      ops::compile_only(d.variant == "coo_flat" ? coo_flat_spec(d, dtype) : scale_spec(dtype), target.sm);
  d.kernel_origin = ops::to_origin(compiled.source);
  d.compile_ms = compiled.compile_ms;
  d.load_ms = compiled.load_ms;
  return d;
}

#define SPARSEJIT_INSTANTIATE(T)                                                                              \
  template CallInfo Runtime::sddmm<T>(const DeviceCsr<T>&, const DeviceDense<T>&, const DeviceDense<T>&, \
                                      DeviceBuffer&, const Options&);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
