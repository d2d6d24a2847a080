// SpAMM executor: C ≈ A·B for dense A and B (sparsejit/spamm.hpp). Per call, on the caller's
// stream:
//   checks      shapes and options, before anything is allocated or written
//   tile        the planner's (plan::spamm_tile)
//   norms       templates/spamm_norms.cu over A and over B (each map in its matrix's tile
//               order); for fp16 and bf16 the same pass writes the operands' converted copies,
//               padded to whole tiles
//   selection   templates/spamm_select.cu at τ: kept products, the bound, the product range,
//               read back (one synchronization); a τ search repeats it per step
//   plan        plan::plan_spamm over the registry (runtime/variants/spamm/), from the kept share
//   run         the chosen variant's execution (prepared once per plan key on the runtime)
// The norm maps, the results and the copies live in the runtime's stream-ordered scratch pool.
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "ops/call_common.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "plan/spamm.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit {

namespace {

// The block sizes spamm_norms.cu and spamm_select.cu are written for.
constexpr int kNormThreads = 256;
constexpr int kSelectThreads = 256;
constexpr std::size_t kAlign = 256;

std::string dims(int64_t rows, int64_t cols) { return std::to_string(rows) + "x" + std::to_string(cols); }

void check_shapes(int32_t a_rows, int32_t a_cols, int32_t b_rows, int32_t b_cols) {
  if (a_cols != b_rows)
    throw InvalidInputError("spamm: A is " + dims(a_rows, a_cols) + " but B has " + std::to_string(b_rows) + " rows (A·B needs " +
                            std::to_string(a_cols) + "; B is " + dims(b_rows, b_cols) + ")");
}

SpammOptions with_environment_force(const SpammOptions& options) {
  Options plain;
  plain.variant = options.variant;
  plain.params = options.params;
  const Options folded = ops::with_environment_force(Op::SpAMM, plain);
  SpammOptions out = options;
  out.variant = folded.variant;
  out.params = folded.params;
  return out;
}

int64_t padded(int32_t size, int32_t tile) { return (int64_t(size) + tile - 1) / tile * tile; }

// The kernels every call runs before its variant.
jit::KernelSpec norms_spec(DType dtype, SpammPrecision precision, int32_t tile) {
  const bool fp16 = precision == SpammPrecision::FP16, bf16 = precision == SpammPrecision::BF16;
  const std::string value_t = dtype == DType::F64 ? "double" : "float";
  const std::string copy_t = fp16 ? "__half" : bf16 ? "__nv_bfloat16" : value_t;
  const std::string convert = fp16 ? "__float2half_rn" : bf16 ? "__float2bfloat16_rn" : "";
  return {"spamm_norms.cu", "sj_spamm_norms_" + value_t + "_t" + std::to_string(tile) + (fp16 ? "_fp16" : bf16 ? "_bf16" : ""),
          {{"value_t", value_t}, {"copy_t", copy_t}, {"convert", convert}, {"tile", tile}, {"write_copy", fp16 || bf16},
           {"fp16", fp16}, {"bf16", bf16}},
          {}};
}

jit::KernelSpec select_spec() { return {"spamm_select.cu", "sj_spamm_select", nlohmann::json::object(), {}}; }

struct FrontKernels {
  cuda::Kernel norms, select;
};

// Where each piece of a call's scratch lies (byte offsets into one block).
struct ScratchLayout {
  std::size_t a_norms = 0, b_norms = 0, results = 0, a_copy = 0, b_copy = 0, total = 0;
};

ScratchLayout layout_for(const plan::SpammProblem& p) {
  ScratchLayout l;
  std::size_t at = 0;
  const auto take = [&](std::size_t bytes) {
    const std::size_t start = at;
    at += (bytes + kAlign - 1) / kAlign * kAlign;
    return start;
  };
  l.a_norms = take(std::size_t(p.tile_rows()) * std::size_t(p.tile_inner()) * 8);
  l.b_norms = take(std::size_t(p.tile_cols()) * std::size_t(p.tile_inner()) * 8);
  l.results = take(4 * 8);
  if (variants::reads_converted_copies(p.precision)) {
    l.a_copy = take(std::size_t(padded(p.m, p.tile)) * std::size_t(padded(p.k, p.tile)) * 2);
    l.b_copy = take(std::size_t(padded(p.k, p.tile)) * std::size_t(padded(p.n, p.tile)) * 2);
  }
  l.total = at;
  return l;
}

// The four results of spamm_select.cu, as the device leaves them.
struct SelectResults {
  unsigned long long valid;
  double bound_squared;
  unsigned long long max_bits, min_bits;
};

double from_bits(unsigned long long bits) {
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

class DeviceSelection {
 public:
  DeviceSelection(const cuda::Kernel& select, const plan::SpammProblem& p, CUdeviceptr a_norms, CUdeviceptr b_norms,
                  CUdeviceptr results, CUstream stream, bool early)
      : select_(select), p_(p), a_norms_(a_norms), b_norms_(b_norms), results_(results), stream_(stream), early_(early) {}

  SpammSelection operator()(double tau) const {
    SPARSEJIT_CU(cuMemsetD32Async, results_, 0u, std::size_t(6), stream_);
    SPARSEJIT_CU(cuMemsetD32Async, results_ + 24, 0xFFFFFFFFu, std::size_t(2), stream_);
    int tile_rows = p_.tile_rows(), tile_inner = p_.tile_inner(), tile_cols = p_.tile_cols();
    const int64_t tiles = int64_t(tile_rows) * tile_cols;
    CUdeviceptr a = a_norms_, b = b_norms_, valid = results_, bound = results_ + 8, max_bits = results_ + 16, min_bits = results_ + 24;
    void* args[] = {&a, &b, &tile_rows, &tile_inner, &tile_cols, &tau, &valid, &bound, &max_bits, &min_bits};
    if (tiles > 0)
      select_.launch({ops::blocks_for(tiles, kSelectThreads), 1, 1}, {unsigned(kSelectThreads), 1, 1}, 0, stream_, args, early_);
    SelectResults back{};
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &back, results_, sizeof back, stream_);
    SPARSEJIT_CU(cuStreamSynchronize, stream_);
    SpammSelection s;
    s.valid = int64_t(back.valid);
    s.triples = tiles * tile_inner;
    s.ratio = s.triples == 0 ? 0.0 : double(s.valid) / double(s.triples);
    s.error_bound = std::sqrt(back.bound_squared);
    s.max_product = from_bits(back.max_bits);
    // No positive product leaves the minimum at +inf (or untouched without tiles): 0, as on the CPU.
    const double smallest = back.min_bits == ~0ull ? 0.0 : from_bits(back.min_bits);
    s.min_positive_product = std::isfinite(smallest) ? smallest : 0.0;
    return s;
  }

 private:
  const cuda::Kernel& select_;
  const plan::SpammProblem& p_;
  CUdeviceptr a_norms_, b_norms_, results_;
  CUstream stream_;
  bool early_;
};

// τ as the options ask: given, searched for a kept share, or for an error bound.
plan::TauSearch resolve_tau(const SpammOptions& o, const plan::SelectionAt& at) {
  if (o.valid_ratio) return plan::search_tau_for_ratio(*o.valid_ratio, o.ratio_tolerance, o.max_search_iterations, at);
  if (o.max_error) return plan::search_tau_for_error(*o.max_error, o.max_search_iterations, at);
  plan::TauSearch given;
  given.tau = o.tau.value_or(0.0);
  given.selection = at(given.tau);
  return given;
}

void launch_norms(const cuda::Kernel& kernel, CUdeviceptr x, int rows, int cols, long long ld, CUdeviceptr norms,
                  long long stride_i, long long stride_j, CUdeviceptr copy, long long copy_ld, int32_t tile, CUstream stream,
                  bool early) {
  const unsigned tile_rows = unsigned((int64_t(rows) + tile - 1) / tile), tile_cols = unsigned((int64_t(cols) + tile - 1) / tile);
  if (tile_rows == 0 || tile_cols == 0) return;
  if (tile_rows > 65535) throw UnsupportedError("spamm: " + std::to_string(tile_rows) + " tile rows exceed the grid's 65535");
  void* args[] = {&x, &rows, &cols, &ld, &norms, &stride_i, &stride_j, &copy, &copy_ld};
  kernel.launch({tile_cols, tile_rows, 1}, {unsigned(kNormThreads), 1, 1}, 0, stream, args, early);
}

template <class T>
void zero_output(DeviceDense<T>& c, CUstream stream) {
  const std::size_t words_per_row = std::size_t(c.cols()) * sizeof(T) / 4;
  if (c.ld() == c.cols()) {
    SPARSEJIT_CU(cuMemsetD32Async, c.buffer().ptr(), 0u, words_per_row * std::size_t(c.rows()), stream);
    return;
  }
  for (int32_t r = 0; r < c.rows(); ++r)
    SPARSEJIT_CU(cuMemsetD32Async, c.buffer().ptr() + std::size_t(r) * std::size_t(c.ld()) * sizeof(T), 0u, words_per_row, stream);
}

template <class T>
struct PreparedSpamm {
  std::unique_ptr<variants::SpammExecution<T>> execution;
  KernelOrigin origin = KernelOrigin::None;
  double compile_ms = 0, load_ms = 0;
};

std::string prepared_key(const Decision& d, const plan::SpammProblem& p) {
  return std::string("spamm:") + to_string(p.dtype) + ":" + to_string(p.precision) + ":" + std::to_string(p.tile) + ":" +
         std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n) + ":" + std::to_string(p.lda) + "," +
         std::to_string(p.ldb) + "," + std::to_string(p.ldc) + ":" + d.variant + ":" + d.params.dump();
}

FrontKernels front_kernels(detail::RuntimeState& rt, const plan::SpammProblem& p) {
  const std::string key = std::string("spamm-front:") + to_string(p.dtype) + ":" + to_string(p.precision) + ":" + std::to_string(p.tile);
  return *std::static_pointer_cast<FrontKernels>(rt.prepared(key, [&] {
    return std::make_shared<FrontKernels>(
        FrontKernels{rt.loader.load(norms_spec(p.dtype, p.precision, p.tile)).kernel, rt.loader.load(select_spec()).kernel});
  }));
}

}  // namespace

template <class T>
SpammInfo Runtime::spamm(const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, const SpammOptions& options) {
  if constexpr (!ops::kFloatOrDouble<T>) {
    throw UnsupportedError(std::string("spamm: value type ") + to_string(dtype_of<T>::value) + " not supported (f32 and f64)");
  } else {
    plan::check_spamm_options(options, dtype_of<T>::value);
    check_shapes(a.rows(), a.cols(), b.rows(), b.cols());
    if (c.rows() != a.rows() || c.cols() != b.cols())
      throw InvalidInputError("spamm: C is " + dims(c.rows(), c.cols()) + " but A·B is " + dims(a.rows(), b.cols()));
    const SpammOptions forced = with_environment_force(options);
    detail::RuntimeState& rt = *state_;
    plan::SpammProblem problem;
    problem.dtype = dtype_of<T>::value;
    problem.precision = options.precision;
    problem.m = a.rows();
    problem.k = a.cols();
    problem.n = b.cols();
    problem.lda = a.ld();
    problem.ldb = b.ld();
    problem.ldc = c.ld();
    problem.tile = plan::spamm_tile(problem.m, problem.k, problem.n, options);
    const CUstream stream = static_cast<CUstream>(options.stream);
    Options launch_options;
    launch_options.early_launch = options.early_launch;
    const bool early = ops::launches_early(launch_options, rt.target.sm);
    rt.context.make_current();

    const ScratchLayout layout = layout_for(problem);
    const cuda::ScratchPool::Block scratch = rt.scratch_pool().allocate(layout.total, stream);
    const CUdeviceptr base = scratch.ptr();
    const FrontKernels front = front_kernels(rt, problem);
    const bool copies = variants::reads_converted_copies(problem.precision);
    const int64_t k_padded = padded(problem.k, problem.tile), n_padded = padded(problem.n, problem.tile);
    launch_norms(front.norms, a.buffer().ptr(), problem.m, problem.k, a.ld(), base + layout.a_norms, problem.tile_inner(), 1,
                 copies ? base + layout.a_copy : 0, k_padded, problem.tile, stream, early);
    launch_norms(front.norms, b.buffer().ptr(), problem.k, problem.n, b.ld(), base + layout.b_norms, problem.tile_cols(), 1,
                 copies ? base + layout.b_copy : 0, n_padded, problem.tile, stream, early);

    const DeviceSelection at(front.select, problem, base + layout.a_norms, base + layout.b_norms, base + layout.results, stream, early);
    const auto search_start = std::chrono::steady_clock::now();
    const plan::TauSearch tau = resolve_tau(options, [&](double t) { return at(t); });
    const double search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - search_start).count();

    plan::SpammFeatures features{tau.tau, tau.selection};
    Decision d = plan::plan_spamm(features, problem, rt.target, forced, ops::plan_sources(Op::SpAMM, rt.target));
    bool made = false;
    const auto prepared = std::static_pointer_cast<PreparedSpamm<T>>(rt.prepared(prepared_key(d, problem), [&] {
      made = true;
      auto p = std::make_shared<PreparedSpamm<T>>();
      Decision record = d;
      p->execution = variants::SpammRegistry::find(d.variant)->prepare(variants::SpammPreparation<T>{rt, problem, record});
      p->origin = record.kernel_origin;
      p->compile_ms = record.compile_ms;
      p->load_ms = record.load_ms;
      return p;
    }));
    d.kernel_origin = made ? prepared->origin : (prepared->origin == KernelOrigin::None ? KernelOrigin::None : KernelOrigin::Memory);
    d.compile_ms = made ? prepared->compile_ms : 0;
    d.load_ms = made ? prepared->load_ms : 0;

    if (problem.k == 0) {
      zero_output(c, stream);  // no products: C = 0 (no kernel has a tile to walk)
    } else if (problem.m > 0 && problem.n > 0) {
      variants::SpammOperands<T> operands{{}, {}, c, base + layout.a_norms, base + layout.b_norms, tau.tau, stream, early};
      if (copies) {
        operands.a = {base + layout.a_copy, k_padded, int32_t(padded(problem.m, problem.tile)), int32_t(k_padded)};
        operands.b = {base + layout.b_copy, n_padded, int32_t(k_padded), int32_t(n_padded)};
      } else {
        operands.a = {a.buffer().ptr(), a.ld(), problem.m, problem.k};
        operands.b = {b.buffer().ptr(), b.ld(), problem.k, problem.n};
      }
      prepared->execution->run(rt, operands);
    }

    SpammInfo info;
    info.decision = std::make_shared<const Decision>(std::move(d));
    info.tile = problem.tile;
    info.tau = tau.tau;
    info.valid_products = tau.selection.valid;
    info.tile_products = tau.selection.triples;
    info.valid_ratio = tau.selection.ratio;
    info.error_bound = tau.selection.error_bound;
    info.search_iterations = options.valid_ratio || options.max_error ? tau.iterations : 0;
    info.search_ms = info.search_iterations > 0 ? search_ms : 0;
    return info;  // the scratch block is freed on the stream after the launches above
  }
}

template <class T>
Decision explain_spamm(const Dense<T>& a, const Dense<T>& b, const SpammOptions& options, SpammInfo* info, int device) {
  if constexpr (!ops::kFloatOrDouble<T>) {
    throw UnsupportedError(std::string("spamm: value type ") + to_string(dtype_of<T>::value) + " not supported (f32 and f64)");
  } else {
    plan::check_spamm_options(options, dtype_of<T>::value);
    check_shapes(a.rows, a.cols, b.rows, b.cols);
    plan::SpammProblem problem;
    problem.dtype = dtype_of<T>::value;
    problem.precision = options.precision;
    problem.m = a.rows;
    problem.k = a.cols;
    problem.n = b.cols;
    problem.lda = a.cols;
    problem.ldb = b.cols;
    problem.ldc = b.cols;
    problem.tile = plan::spamm_tile(problem.m, problem.k, problem.n, options);
    const NormMap a_norms = tile_norms(a, problem.tile), b_norms = tile_norms(b, problem.tile);
    const auto search_start = std::chrono::steady_clock::now();
    const plan::TauSearch tau = resolve_tau(options, [&](double t) { return spamm_selection(a_norms, b_norms, t); });
    const double search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - search_start).count();
    const plan::DeviceTarget target = detail::explain_target(device);
    Decision d = plan::plan_spamm({tau.tau, tau.selection}, problem, target, with_environment_force(options),
                                  ops::plan_sources(Op::SpAMM, target));
    for (const jit::KernelSpec& spec : {norms_spec(problem.dtype, problem.precision, problem.tile), select_spec()}) {
      const jit::CompiledKernel compiled = ops::compile_only(spec, target.sm);
      d.compile_ms += compiled.compile_ms;
    }
    for (const jit::KernelSpec& spec : variants::SpammRegistry::find(d.variant)->kernel_specs(d, problem)) {
      const jit::CompiledKernel compiled = ops::compile_only(spec, target.sm);
      const KernelOrigin origin = ops::to_origin(compiled.source);
      if (int(origin) > int(d.kernel_origin)) d.kernel_origin = origin;
      d.compile_ms += compiled.compile_ms;
      d.load_ms += compiled.load_ms;
    }
    if (info != nullptr) {
      info->decision = std::make_shared<const Decision>(d);
      info->tile = problem.tile;
      info->tau = tau.tau;
      info->valid_products = tau.selection.valid;
      info->tile_products = tau.selection.triples;
      info->valid_ratio = tau.selection.ratio;
      info->error_bound = tau.selection.error_bound;
      info->search_iterations = options.valid_ratio || options.max_error ? tau.iterations : 0;
      info->search_ms = info->search_iterations > 0 ? search_ms : 0;
    }
    return d;
  }
}

#define SPARSEJIT_INSTANTIATE(T)                                                                            \
  template SpammInfo Runtime::spamm<T>(const DeviceDense<T>&, const DeviceDense<T>&, DeviceDense<T>&, const SpammOptions&); \
  template Decision explain_spamm<T>(const Dense<T>&, const Dense<T>&, const SpammOptions&, SpammInfo*, int);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
