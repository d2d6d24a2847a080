// SpAMM executor: C ≈ A·B for dense A and B (sparsejit/spamm.hpp). Per call, on the caller's
// stream:
//   checks      shapes and options, before anything is allocated or written
//   tile        the planner's (plan::spamm_tile)
//   norms       templates/spamm_norms.cu over A and over B (each map in its matrix's tile
//               order; one pass when B is A itself); for fp16 and bf16 of f32 operands (or of
//               16-bit ones not in whole 16-byte rows) the same pass writes the operands'
//               converted copies, padded to whole tiles; f16/bf16 operands in whole 16-byte
//               rows are read as they are
//   selection   templates/spamm_search.cu: τ given, or searched for on the device (a launch
//               per evaluation); kept products, the bound and the product range read back
//               once per 12 evaluations
//   plan        plan::plan_spamm over the registry (runtime/variants/spamm/), from the kept share;
//               with τ given, what earlier calls on the same operands learned may overrule it
//               (ops/spamm_choice.hpp: a remembered cuBLAS choice, a close call timed)
//   run         the chosen variant's execution (prepared once per plan key on the runtime)
// A call that cuBLAS serves skipped nothing and reports what it computed: every tile product
// (τ = 0, share 1, bound 0). When the caller gives a target share and the planner takes
// cuBLAS at that share, the GEMM needs neither the norms nor τ: the share asked goes into the
// Decision and no norm is computed. (Searching τ
// beside the GEMM only to report it cost 0.1-0.2 ms of a 1.3 ms GEMM at N = 8192 on an H100.)
// The norm maps, the results and the copies live in the runtime's stream-ordered scratch pool.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <limits>
#include <optional>
#include <string>

#include "ops/call_common.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "ops/spamm_choice.hpp"
#include "ops/spamm_devices.hpp"
#include "plan/spamm.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit {

namespace {

// The block sizes spamm_norms.cu and spamm_search.cu are written for.
constexpr int kNormThreads = 256;
constexpr int kSearchThreads = 256;
constexpr int kSearchTilesPerBlock = 32;  // a lane per C tile of a row
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

struct FrontKernels {
  cuda::Kernel norms, search;
};

// How the operands reach the multiplication.
struct OperandForm {
  bool copies = false;  // the products read the padded 16-bit copies the norm pass writes
  bool same = false;    // B is A itself (same buffer, shape and ld): one norm pass, one map, one copy
  int vec = 1;          // elements per load of the norm pass
};

// templates/spamm_search.cu's SearchState, as the device holds it.
struct DeviceSearchState {
  unsigned long long valid = 0;
  double bound_sq = 0;
  unsigned long long max_bits = 0, min_bits = ~0ull;
  unsigned int arrived = 0;
  int evaluations = 0, done = 0, unused = 0;
  double tau = 0;
  double lo = 0, hi = 0;
  double best_tau = 0;
  unsigned long long best_valid = 0;
  double best_bound_sq = 0;
  unsigned long long all_max_bits = 0, all_min_bits = 0;
};
static_assert(sizeof(DeviceSearchState) == 112, "the layout of spamm_search.cu's SearchState");

// Where each piece of a call's scratch lies (byte offsets into one block).
struct ScratchLayout {
  std::size_t a_norms = 0, b_norms = 0, results = 0, a_copy = 0, b_copy = 0, total = 0;
};

ScratchLayout layout_for(const plan::SpammProblem& p, const OperandForm& form) {
  ScratchLayout l;
  cuda::ScratchCursor cursor(kAlign);
  const auto take = [&](std::size_t bytes) { return cursor.take(bytes); };
  l.a_norms = take(std::size_t(p.tile_rows()) * std::size_t(p.tile_inner()) * 8);
  l.b_norms = form.same ? l.a_norms : take(std::size_t(p.tile_cols()) * std::size_t(p.tile_inner()) * 8);
  l.results = take(sizeof(DeviceSearchState));
  if (form.copies) {
    l.a_copy = take(std::size_t(padded(p.m, p.tile)) * std::size_t(padded(p.k, p.tile)) * 2);
    l.b_copy = form.same ? l.a_copy : take(std::size_t(padded(p.k, p.tile)) * std::size_t(padded(p.n, p.tile)) * 2);
  }
  l.total = cursor.total();
  return l;
}

double from_bits(unsigned long long bits) {
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// The search's modes (spamm_search.cu's Mode).
enum class SearchMode : int { Given = 0, Share = 1, Error = 2 };

// Launches per read-back: a share search at 5-50% takes 8-10 evaluations, at 1% 30 or more;
// a launch after the search is done costs only its launch.
constexpr int kStepsPerReadBack = 12;

// τ as the options ask (given, searched for a kept share, or for an error bound), found on the
// device by spamm_search.cu: the arithmetic of plan::search_tau_for_ratio and
// search_tau_for_error, a launch per evaluation, one read-back per kStepsPerReadBack launches.
plan::TauSearch search_on_device(const cuda::Kernel& search, const plan::SpammProblem& p, const SpammOptions& o, CUdeviceptr a_norms,
                                 CUdeviceptr b_norms, CUdeviceptr state, int multiprocessors, CUstream stream, bool early) {
  const SearchMode mode = o.valid_ratio ? SearchMode::Share : o.max_error ? SearchMode::Error : SearchMode::Given;
  int tile_rows = p.tile_rows(), tile_inner = p.tile_inner(), tile_cols = p.tile_cols();
  const int64_t tiles = int64_t(tile_rows) * tile_cols;
  plan::TauSearch result;
  result.tau = mode == SearchMode::Given ? o.tau.value_or(0.0) : 0.0;
  result.iterations = 1;
  if (tiles == 0) return result;  // nothing to select from: no products, no bound
  // The starting state by memsets: zeros, and the smallest positive product's ones. (A copy
  // from pageable host memory would first synchronize the stream.)
  SPARSEJIT_CU(cuMemsetD32Async, state, 0u, sizeof(DeviceSearchState) / 4, stream);
  SPARSEJIT_CU(cuMemsetD32Async, state + offsetof(DeviceSearchState, min_bits), 0xFFFFFFFFu, std::size_t(2), stream);
  DeviceSearchState back;
  int mode_arg = int(mode), max_iterations = o.max_search_iterations;
  double first_tau = result.tau, target = o.valid_ratio.value_or(o.max_error.value_or(0.0)), tolerance = o.ratio_tolerance;
  CUdeviceptr state_arg = state;
  void* args[] = {&a_norms,  &b_norms,   &tile_rows, &tile_inner, &tile_cols, &state_arg, &first_tau,
                  &mode_arg, &target, &tolerance, &max_iterations};
  const int64_t groups = int64_t(tile_rows) * ((tile_cols + kSearchTilesPerBlock - 1) / kSearchTilesPerBlock);
  const unsigned blocks = unsigned(std::min<int64_t>(groups, int64_t(multiprocessors) * 8));
  // An error search always evaluates "nothing kept" after its first τ: one more than max.
  const int most_launches = mode == SearchMode::Given ? 1 : max_iterations + 1;
  for (int launched = 0; launched < most_launches && !back.done;) {
    for (int i = 0; i < kStepsPerReadBack && launched < most_launches; ++i, ++launched)
      search.launch({blocks, 1, 1}, {unsigned(kSearchThreads), 1, 1}, 0, stream, args, early);
    SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, &back, state, sizeof back, stream);
    SPARSEJIT_CU(cuStreamSynchronize, stream);
  }
  if (!back.done) throw CudaError("spamm: the device's τ search did not finish in " + std::to_string(most_launches) + " evaluations (a kernel fault?)");
  result.tau = back.best_tau;
  result.iterations = back.evaluations;
  SpammSelection& s = result.selection;
  s.valid = int64_t(back.best_valid);
  s.triples = tiles * tile_inner;
  s.ratio = s.triples == 0 ? 0.0 : double(s.valid) / double(s.triples);
  s.error_bound = std::sqrt(back.best_bound_sq);
  s.max_product = from_bits(back.all_max_bits);
  // No positive product leaves the minimum at +inf (or untouched without tiles): 0, as on the CPU.
  const double smallest = back.all_min_bits == ~0ull ? 0.0 : from_bits(back.all_min_bits);
  s.min_positive_product = std::isfinite(smallest) ? smallest : 0.0;
  return result;
}

// τ as the options ask, on the CPU's norm maps (explain).
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

// Without m: an execution takes C's rows at run time, so a spread call's blocks of every height
// share one (a re-cut prepares nothing).
std::string prepared_key(const Decision& d, const plan::SpammProblem& p) {
  return std::string("spamm:") + to_string(p.dtype) + ":" + to_string(p.operands) + ":" + to_string(p.precision) + ":" + std::to_string(p.tile) + ":" +
         "k" + std::to_string(p.k) + "n" + std::to_string(p.n) + ":" + std::to_string(p.lda) + "," +
         std::to_string(p.ldb) + "," + std::to_string(p.ldc) + ":" + d.variant + ":" + d.params.dump();
}

FrontKernels front_kernels(detail::RuntimeState& rt, const plan::SpammProblem& p, const OperandForm& form) {
  const jit::KernelSpec norms = variants::norms_spec(p.operands, p.precision, p.tile, form.copies, form.vec);
  return *std::static_pointer_cast<FrontKernels>(rt.prepared("spamm-front:" + norms.kernel_name, [&] {
    return std::make_shared<FrontKernels>(FrontKernels{rt.loader.load(norms).kernel, rt.loader.load(variants::search_spec()).kernel});
  }));
}

// 16 bytes' worth of elements per norm-pass load when every row of A and B starts 16-byte
// aligned (cols and ld multiples of it; the buffers' starts are), else 1.
int norms_vec(const plan::SpammProblem& p) {
  const int vec = int(16 / size_of(p.operands));
  for (int64_t size : {int64_t(p.k), int64_t(p.n), p.lda, p.ldb})
    if (size % vec != 0) return 1;
  return vec;
}

// 16-bit operands are read as they are when the products' 16-byte copies never straddle the
// end of a row (k, n and the leading dimensions multiples of 8 elements); f32 operands of a
// 16-bit precision are always converted.
bool needs_copies(const plan::SpammProblem& p) {
  if (!variants::half_operands(p.precision)) return false;
  if (p.operands == DType::F32) return true;
  for (int64_t size : {int64_t(p.k), int64_t(p.n), p.lda, p.ldb})
    if (size % 8 != 0) return true;
  return false;
}

template <class In>
bool same_matrix(const DeviceDense<In>& a, const DeviceDense<In>& b) {
  return a.buffer().ptr() == b.buffer().ptr() && a.rows() == b.rows() && a.cols() == b.cols() && a.ld() == b.ld();
}

// The planner's choice from the caller's target share alone (the share the search will reach,
// τ and the bound not known yet).
plan::SpammFeatures expected_at(double share, const plan::SpammProblem& p) {
  plan::SpammFeatures f;
  f.selection.triples = int64_t(p.tile_rows()) * p.tile_inner() * p.tile_cols();
  f.selection.valid = int64_t(std::llround(share * double(f.selection.triples)));
  f.selection.ratio = share;
  f.tau_to_search = true;
  return f;
}

// The planner's features at a share already known before any norm pass (τ = 0: every product).
plan::SpammFeatures known_share(double share, const plan::SpammProblem& p) {
  plan::SpammFeatures f = expected_at(share, p);
  f.tau_to_search = false;
  return f;
}

// What a call that multiplies every tile product reports: τ = 0 keeps them all, nothing skipped.
plan::TauSearch every_product(const plan::SpammProblem& p) {
  plan::TauSearch all;
  all.selection.triples = int64_t(p.tile_rows()) * p.tile_inner() * p.tile_cols();
  all.selection.valid = all.selection.triples;
  all.selection.ratio = all.selection.triples == 0 ? 0.0 : 1.0;
  return all;
}

// The key of what auto learns about calls with τ given (ops/spamm_choice.hpp), per problem.
std::string choice_key(const plan::SpammProblem& p) {
  return "spamm-choice:" + std::to_string(p.m) + "x" + std::to_string(p.k) + "x" + std::to_string(p.n) + ":" + std::to_string(p.lda) +
         "," + std::to_string(p.ldb) + ":" + to_string(p.operands) + ":" + to_string(p.dtype) + ":" + to_string(p.precision) + ":" +
         std::to_string(p.tile);
}

// The variant's execution for a decision, prepared once per plan key; how its kernels were
// obtained goes into d (this call's compile and load only when it prepared them, `made`).
template <class Out>
std::shared_ptr<PreparedSpamm<Out>> prepared_for(detail::RuntimeState& rt, Decision& d, const plan::SpammProblem& problem, bool& made) {
  made = false;
  const auto prepared = std::static_pointer_cast<PreparedSpamm<Out>>(rt.prepared(prepared_key(d, problem), [&] {
    made = true;
    auto p = std::make_shared<PreparedSpamm<Out>>();
    Decision record = d;
    p->execution = variants::SpammRegistry::find(d.variant)->prepare(variants::SpammPreparation<Out>{rt, problem, record});
    p->origin = record.kernel_origin;
    p->compile_ms = record.compile_ms;
    p->load_ms = record.load_ms;
    return p;
  }));
  d.kernel_origin = made ? prepared->origin : (prepared->origin == KernelOrigin::None ? KernelOrigin::None : KernelOrigin::Memory);
  d.compile_ms = made ? prepared->compile_ms : 0;
  d.load_ms = made ? prepared->load_ms : 0;
  return prepared;
}

template <class In>
OperandForm form_of(const plan::SpammProblem& p, const DeviceDense<In>& a, const DeviceDense<In>& b, bool copies) {
  OperandForm form;
  form.copies = copies;
  form.same = same_matrix(a, b);
  form.vec = norms_vec(p);
  return form;
}

template <class In, class Out>
plan::SpammProblem problem_of(const DeviceDense<In>& a, const DeviceDense<In>& b, int64_t ldc, const SpammOptions& options) {
  plan::SpammProblem problem;
  problem.dtype = dtype_of<Out>::value;
  problem.operands = dtype_of<In>::value;
  problem.precision = options.precision;
  problem.m = a.rows();
  problem.k = a.cols();
  problem.n = b.cols();
  problem.lda = a.ld();
  problem.ldb = b.ld();
  problem.ldc = ldc;
  problem.tile = plan::spamm_tile(problem.m, problem.k, problem.n, options);
  return problem;
}

// What one GPU's products read and write, set up on its stream: the problem, the form of the
// operands, the scratch (norm maps, results, copies) and the front kernels.
template <class In, class Out>
struct CallSetup {
  CallSetup(detail::RuntimeState& rt, const DeviceDense<In>& a_, const DeviceDense<In>& b_, DeviceDense<Out>& c_,
            const SpammOptions& options)
      : a(a_),
        b(b_),
        c(c_),
        problem(problem_of<In, Out>(a_, b_, c_.ld(), options)),
        stream(static_cast<CUstream>(options.stream)),
        early(current_and_early(rt, options)),
        form(form_of(problem, a_, b_, needs_copies(problem))),
        layout(layout_for(problem, form)),
        scratch(rt.scratch_pool().allocate(layout.total, stream)),
        base(scratch.ptr()),
        front(front_kernels(rt, problem, form)),
        k_padded(padded(problem.k, problem.tile)),
        n_padded(padded(problem.n, problem.tile)) {}

  // Makes the runtime's context current (what follows allocates and loads there); whether the
  // launches may start early.
  static bool current_and_early(detail::RuntimeState& rt, const SpammOptions& options) {
    rt.context.make_current();
    Options launch_options;
    launch_options.early_launch = options.early_launch;
    return ops::launches_early(launch_options, rt.target.sm);
  }

  // The norm maps of A and B (and the 16-bit copies where the products read them).
  void launch_norm_pass() const {
    launch_norms(front.norms, a.buffer().ptr(), problem.m, problem.k, a.ld(), base + layout.a_norms, problem.tile_inner(), 1,
                 form.copies ? base + layout.a_copy : 0, k_padded, problem.tile, stream, early);
    if (!form.same)
      launch_norms(front.norms, b.buffer().ptr(), problem.k, problem.n, b.ld(), base + layout.b_norms, problem.tile_cols(), 1,
                   form.copies ? base + layout.b_copy : 0, n_padded, problem.tile, stream, early);
  }

  // Runs the chosen variant at τ over the norm maps of this setup's scratch, or over `maps` made
  // elsewhere; true when this call prepared it (compiled or loaded its kernels).
  bool multiply(detail::RuntimeState& rt, Decision& chosen, double tau, const ops::SpammMaps* maps = nullptr) {
    bool made = false;
    variants::SpammExecution<Out>& execution = *prepared_for<Out>(rt, chosen, problem, made)->execution;
    if (problem.k == 0) {
      zero_output(c, stream);  // no products: C = 0 (no kernel has a tile to walk)
      return made;
    }
    if (problem.m == 0 || problem.n == 0) return made;
    variants::SpammOperands<Out> operands{{}, {}, c, maps ? maps->a : base + layout.a_norms, maps ? maps->b : base + layout.b_norms,
                                          tau, stream, early};
    if (form.copies) {
      operands.a = {base + layout.a_copy, k_padded, int32_t(padded(problem.m, problem.tile)), int32_t(k_padded)};
      operands.b = {base + layout.b_copy, n_padded, int32_t(k_padded), int32_t(n_padded)};
    } else {
      operands.a = {a.buffer().ptr(), a.ld(), problem.m, problem.k};
      operands.b = {b.buffer().ptr(), b.ld(), problem.k, problem.n};
    }
    execution.run(rt, operands);
    return made;
  }

  const DeviceDense<In>& a;
  const DeviceDense<In>& b;
  DeviceDense<Out>& c;
  const plan::SpammProblem problem;
  const CUstream stream;
  const bool early;
  const OperandForm form;
  const ScratchLayout layout;
  const cuda::ScratchPool::Block scratch;  // freed on the stream after the launches
  const CUdeviceptr base;
  const FrontKernels front;
  const int64_t k_padded, n_padded;
};

// One call: In is A's and B's element type, Out C's (f32 for f16/bf16 operands).
template <class In, class Out>
SpammInfo spamm_call(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, DeviceDense<Out>& c,
                     const SpammOptions& options) {
  plan::check_spamm_options(options, dtype_of<Out>::value);
  check_shapes(a.rows(), a.cols(), b.rows(), b.cols());
  if (c.rows() != a.rows() || c.cols() != b.cols())
    throw InvalidInputError("spamm: C is " + dims(c.rows(), c.cols()) + " but A·B is " + dims(a.rows(), b.cols()));
  const SpammOptions forced = with_environment_force(options);
  CallSetup<In, Out> setup(rt, a, b, c, options);
  const plan::SpammProblem& problem = setup.problem;
  const CUstream stream = setup.stream;
  const plan::PlanSources sources = ops::plan_sources(Op::SpAMM, rt.target);
  const auto vendor_at = [&](const plan::SpammFeatures& features) -> std::optional<Decision> {
    Decision d = plan::plan_spamm(features, problem, rt.target, forced, sources);
    if (!variants::SpammRegistry::find(d.variant)->traits.vendor) return std::nullopt;
    return d;
  };

  // A choice that needs no norms: cuBLAS multiplies everything whatever τ is. It is made from
  // the caller's target share or from τ = 0 (every product kept); a forced variant needs no
  // choice. A τ > 0 needs the share it keeps: the norm pass and one evaluation come first,
  // unless what was learned on these operands and τ says cuBLAS (ops/spamm_choice.hpp).
  std::optional<Decision> before_norms;
  std::shared_ptr<ops::SpammChoice> choice;
  ops::SpammChoice::Call learned;
  if (options.valid_ratio || !forced.variant.empty()) {
    before_norms = vendor_at(expected_at(options.valid_ratio.value_or(1.0), problem));
  } else if (!options.max_error && options.tau.value_or(0.0) == 0.0) {
    before_norms = vendor_at(known_share(1.0, problem));
  } else if (options.tau) {
    choice = std::static_pointer_cast<ops::SpammChoice>(
        rt.prepared(choice_key(problem), [&] { return std::make_shared<ops::SpammChoice>(rt.context); }));
    learned = choice->begin(a.buffer().ptr(), b.buffer().ptr(), *options.tau, stream);
    before_norms = std::move(learned.before_norms);
  }

  plan::TauSearch tau;
  double search_ms = 0;
  Decision d;
  bool prepared_now = false;
  if (before_norms) {
    d = std::move(*before_norms);
    if (setup.form.copies) setup.launch_norm_pass();  // the conversion pass: the GEMM reads the 16-bit copies
    prepared_now = setup.multiply(rt, d, 0.0);
    tau = every_product(problem);
    d.features = plan::to_json({tau.tau, tau.selection}, problem);
    d.features["decided_before_norms"] = true;
    if (options.valid_ratio) d.features["asked_share"] = *options.valid_ratio;
    if (learned.remembered_calls > 0) d.features["remembered_calls"] = learned.remembered_calls;
  } else {
    setup.launch_norm_pass();
    const auto search_start = std::chrono::steady_clock::now();
    tau = search_on_device(setup.front.search, problem, options, setup.base + setup.layout.a_norms, setup.base + setup.layout.b_norms,
                           setup.base + setup.layout.results, rt.target.multiprocessors, stream, setup.early);
    search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - search_start).count();
    d = plan::plan_spamm({tau.tau, tau.selection}, problem, rt.target, forced, sources);
    if (choice) d = choice->after_norms(learned, std::move(d), tau.selection.ratio);
    prepared_now = setup.multiply(rt, d, tau.tau);
    // cuBLAS took every product whatever τ was (the share at τ that chose it stays in d).
    if (variants::SpammRegistry::find(d.variant)->traits.vendor) tau = every_product(problem);
  }
  if (choice) {
    choice->end(learned, prepared_now, stream);
    if (learned.timed != ops::SpammChoice::Side::None) d.features["timed_for_choice"] = true;
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

// The precision of 16-bit operands: their own (Full names it too); another is refused.
SpammOptions with_operand_precision(const SpammOptions& options, SpammPrecision own, DType operands) {
  if (options.precision != SpammPrecision::Full && options.precision != own)
    throw UnsupportedError(std::string("spamm: ") + to_string(operands) + " operands compute in precision " + to_string(own) + ", not " +
                           to_string(options.precision));
  SpammOptions out = options;
  out.precision = own;
  return out;
}

}  // namespace

namespace ops {

namespace {

// The kept products per tile row of C at τ (templates/spamm_row_counts.cu), read back: the
// stream's second synchronization of a spread call's front.
std::vector<int64_t> kept_per_row_on_device(detail::RuntimeState& rt, const plan::SpammProblem& p, CUdeviceptr a_map, CUdeviceptr b_map,
                                            double tau, CUstream stream) {
  const auto counter = std::static_pointer_cast<cuda::Kernel>(
      rt.prepared("spamm-row-counts", [&] { return std::make_shared<cuda::Kernel>(rt.loader.load(variants::row_counts_spec()).kernel); }));
  std::vector<int64_t> kept(std::size_t(p.tile_rows()), 0);
  if (kept.empty() || p.tile_inner() == 0 || p.tile_cols() == 0) return kept;
  const cuda::ScratchPool::Block counts = rt.scratch_pool().allocate(kept.size() * sizeof(int64_t), stream);
  int tile_inner = p.tile_inner(), tile_cols = p.tile_cols();
  CUdeviceptr out = counts.ptr();
  // Poisoned first (all ones: -1), so that a row the kernel did not write cannot pass for a count.
  SPARSEJIT_CU(cuMemsetD8Async, out, 0xFF, kept.size() * sizeof(int64_t), stream);
  void* args[] = {&a_map, &b_map, &tile_inner, &tile_cols, &tau, &out};
  counter->launch({unsigned(p.tile_rows()), 1, 1}, {256u, 1, 1}, 0, stream, args, true);
  static_assert(sizeof(int64_t) == sizeof(unsigned long long), "the kernel's counts are 64-bit");
  SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, kept.data(), out, kept.size() * sizeof(int64_t), stream);
  SPARSEJIT_CU(cuStreamSynchronize, stream);
  const int64_t most = int64_t(tile_inner) * tile_cols;
  for (std::size_t i = 0; i < kept.size(); ++i)
    if (kept[i] < 0 || kept[i] > most)
      throw CudaError("spamm: the row-count kernel left tile row " + std::to_string(i) + " at " + std::to_string(kept[i]) +
                      ", outside [0, " + std::to_string(most) + "] (not written)");
  return kept;
}

// τ as the options ask over norm maps on rank 0's GPU, then the kept products per tile row.
SpammFront front_on_maps(detail::RuntimeState& rt, const plan::SpammProblem& p, const FrontKernels& kernels, CUdeviceptr a_map,
                         CUdeviceptr b_map, const SpammOptions& options) {
  SpammFront front;
  front.problem = p;
  const CUstream stream = static_cast<CUstream>(options.stream);
  const cuda::ScratchPool::Block results = rt.scratch_pool().allocate(sizeof(DeviceSearchState), stream);
  const auto search_start = std::chrono::steady_clock::now();
  front.tau = search_on_device(kernels.search, p, options, a_map, b_map, results.ptr(), rt.target.multiprocessors, stream, true);
  front.search_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - search_start).count();
  front.kept_per_row = kept_per_row_on_device(rt, p, a_map, b_map, front.tau.tau, stream);
  return front;
}

// The norm pass's kernels for maps alone (no converted copies).
FrontKernels map_kernels(detail::RuntimeState& rt, const plan::SpammProblem& p) {
  OperandForm form;
  form.vec = norms_vec(p);
  return front_kernels(rt, p, form);
}

}  // namespace

template <class In, class Out>
SpammFront spamm_front(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, int64_t ldc,
                       const SpammOptions& options) {
  plan::check_spamm_options(options, dtype_of<Out>::value);
  check_shapes(a.rows(), a.cols(), b.rows(), b.cols());
  const plan::SpammProblem p = problem_of<In, Out>(a, b, ldc, options);
  const CUstream stream = static_cast<CUstream>(options.stream);
  rt.context.make_current();
  const OperandForm form = form_of(p, a, b, false);  // the maps only: no converted copies
  const ScratchLayout layout = layout_for(p, form);
  const cuda::ScratchPool::Block scratch = rt.scratch_pool().allocate(layout.total, stream);
  const CUdeviceptr base = scratch.ptr();
  const FrontKernels kernels = front_kernels(rt, p, form);
  launch_norms(kernels.norms, a.buffer().ptr(), p.m, p.k, a.ld(), base + layout.a_norms, p.tile_inner(), 1, 0, 0, p.tile, stream, true);
  if (!form.same)
    launch_norms(kernels.norms, b.buffer().ptr(), p.k, p.n, b.ld(), base + layout.b_norms, p.tile_cols(), 1, 0, 0, p.tile, stream, true);
  return front_on_maps(rt, p, kernels, base + layout.a_norms, base + layout.b_norms, options);
}

template <class In, class Out>
plan::SpammProblem spamm_problem(const DeviceDense<In>& a, const DeviceDense<In>& b, int64_t ldc, const SpammOptions& options) {
  plan::check_spamm_options(options, dtype_of<Out>::value);
  check_shapes(a.rows(), a.cols(), b.rows(), b.cols());
  return problem_of<In, Out>(a, b, ldc, options);
}

bool spamm_reads_copies(const plan::SpammProblem& p) { return needs_copies(p); }

std::size_t spamm_map_bytes(const plan::SpammProblem& p, bool of_b) {
  return (of_b ? std::size_t(p.tile_inner()) * std::size_t(p.tile_cols()) : std::size_t(p.tile_rows()) * std::size_t(p.tile_inner())) *
         sizeof(double);
}

template <class In>
void spamm_norm_rows(detail::RuntimeState& rt, const plan::SpammProblem& p, const DeviceDense<In>& x, bool of_b, int32_t first,
                     int32_t end, CUdeviceptr map, CUstream stream) {
  if (end <= first) return;
  rt.context.make_current();
  const int32_t row = first * p.tile;
  const int32_t rows = int32_t(std::min<int64_t>(int64_t(end) * p.tile, x.rows()) - row);
  const long long stride = of_b ? p.tile_cols() : p.tile_inner();
  launch_norms(map_kernels(rt, p).norms, x.buffer().ptr() + std::size_t(row) * std::size_t(x.ld()) * sizeof(In), rows, x.cols(), x.ld(),
               map + std::size_t(first) * std::size_t(stride) * sizeof(double), stride, 1, 0, 0, p.tile, stream, true);
}

SpammFront spamm_front_on_maps(detail::RuntimeState& rt, const plan::SpammProblem& p, const SpammMaps& maps, const SpammOptions& options) {
  rt.context.make_current();
  return front_on_maps(rt, p, map_kernels(rt, p), maps.a, maps.b, options);
}

template <class In, class Out>
void spamm_share(detail::RuntimeState& rt, const DeviceDense<In>& a, const DeviceDense<In>& b, DeviceDense<Out>& c, Decision d,
                 double tau, const SpammOptions& options, const SpammMaps* maps) {
  CallSetup<In, Out> setup(rt, a, b, c, options);
  if (maps != nullptr && setup.form.copies)
    throw InvalidInputError("spamm: a share with norm maps made elsewhere cannot read converted copies (no norm pass writes them)");
  // cuBLAS multiplies every product: it needs the norm pass only for the 16-bit copies it reads.
  const bool vendor = variants::SpammRegistry::find(d.variant)->traits.vendor;
  if (maps == nullptr && (!vendor || setup.form.copies)) setup.launch_norm_pass();
  setup.multiply(rt, d, vendor ? 0.0 : tau, maps);
}

}  // namespace ops

template <class T>
SpammInfo Runtime::spamm(const DeviceDense<T>& a, const DeviceDense<T>& b, DeviceDense<T>& c, const SpammOptions& options) {
  if constexpr (!ops::kFloatOrDouble<T>) {
    throw UnsupportedError(std::string("spamm: value type ") + to_string(dtype_of<T>::value) +
                           " for C not supported (f32 and f64; f16/bf16 operands take an f32 C)");
  } else {
    if (!options.devices.empty()) return ops::spamm_on_devices(*state_, a, b, c, options);
    return spamm_call(*state_, a, b, c, options);
  }
}

SpammInfo Runtime::spamm(const DeviceDense<half>& a, const DeviceDense<half>& b, DeviceDense<float>& c, const SpammOptions& options) {
  const SpammOptions own = with_operand_precision(options, SpammPrecision::FP16, DType::F16);
  if (!own.devices.empty()) return ops::spamm_on_devices(*state_, a, b, c, own);
  return spamm_call(*state_, a, b, c, own);
}

SpammInfo Runtime::spamm(const DeviceDense<bfloat16>& a, const DeviceDense<bfloat16>& b, DeviceDense<float>& c,
                         const SpammOptions& options) {
  const SpammOptions own = with_operand_precision(options, SpammPrecision::BF16, DType::BF16);
  if (!own.devices.empty()) return ops::spamm_on_devices(*state_, a, b, c, own);
  return spamm_call(*state_, a, b, c, own);
}

template <class T>
SpammInfo Runtime::spamm(const SpreadDense<T>& a, const SpreadDense<T>& b, SpreadDense<T>& c, const SpammOptions& options) {
  if constexpr (!ops::kFloatOrDouble<T>) {
    throw UnsupportedError(std::string("spamm: value type ") + to_string(dtype_of<T>::value) +
                           " for C not supported (f32 and f64; f16/bf16 operands take an f32 C)");
  } else {
    return ops::spamm_spread(*state_, a, b, c, options);
  }
}

SpammInfo Runtime::spamm(const SpreadDense<half>& a, const SpreadDense<half>& b, SpreadDense<float>& c, const SpammOptions& options) {
  return ops::spamm_spread(*state_, a, b, c, with_operand_precision(options, SpammPrecision::FP16, DType::F16));
}

SpammInfo Runtime::spamm(const SpreadDense<bfloat16>& a, const SpreadDense<bfloat16>& b, SpreadDense<float>& c,
                         const SpammOptions& options) {
  return ops::spamm_spread(*state_, a, b, c, with_operand_precision(options, SpammPrecision::BF16, DType::BF16));
}

template <class T>
SpreadDense<T> Runtime::replicate(const DeviceDense<T>& x, const std::vector<int>& devices, void* stream) {
  return ops::replicate(*state_, x, devices, stream);
}

template <class T>
void Runtime::gather(const SpreadDense<T>& x, DeviceDense<T>& into, void* stream) {
  ops::gather(*state_, x, into, stream);
}

template <class T>
Decision explain_spamm(const Dense<T>& a, const Dense<T>& b, const SpammOptions& options, SpammInfo* info, int device) {
  if constexpr (!ops::kFloatOrDouble<T>) {
    throw UnsupportedError(std::string("spamm: value type ") + to_string(dtype_of<T>::value) + " not supported (f32 and f64)");
  } else {
    plan::check_spamm_options(options, dtype_of<T>::value);
    check_shapes(a.rows, a.cols, b.rows, b.cols);
    plan::SpammProblem problem;
    problem.dtype = problem.operands = dtype_of<T>::value;
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
    const jit::KernelSpec norms = variants::norms_spec(problem.operands, problem.precision, problem.tile, needs_copies(problem), norms_vec(problem));
    for (const jit::KernelSpec& spec : {norms, variants::search_spec()}) {
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
  template SpammInfo Runtime::spamm<T>(const SpreadDense<T>&, const SpreadDense<T>&, SpreadDense<T>&, const SpammOptions&); \
  template Decision explain_spamm<T>(const Dense<T>&, const Dense<T>&, const SpammOptions&, SpammInfo*, int);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
#undef SPARSEJIT_INSTANTIATE

#define SPARSEJIT_INSTANTIATE(T)                                                                                   \
  template SpreadDense<T> Runtime::replicate<T>(const DeviceDense<T>&, const std::vector<int>&, void*); \
  template void Runtime::gather<T>(const SpreadDense<T>&, DeviceDense<T>&, void*);
SPARSEJIT_INSTANTIATE(float)
SPARSEJIT_INSTANTIATE(double)
SPARSEJIT_INSTANTIATE(half)
SPARSEJIT_INSTANTIATE(bfloat16)
#undef SPARSEJIT_INSTANTIATE

#define SPARSEJIT_INSTANTIATE(In, Out)                                                                                             \
  template ops::SpammFront ops::spamm_front<In, Out>(detail::RuntimeState&, const DeviceDense<In>&, const DeviceDense<In>&, int64_t, \
                                                     const SpammOptions&);                                                         \
  template void ops::spamm_share(detail::RuntimeState&, const DeviceDense<In>&, const DeviceDense<In>&, DeviceDense<Out>&, Decision, \
                                 double, const SpammOptions&, const ops::SpammMaps*);                                           \
  template plan::SpammProblem ops::spamm_problem<In, Out>(const DeviceDense<In>&, const DeviceDense<In>&, int64_t,               \
                                                          const SpammOptions&);                                                 \
  template void ops::spamm_norm_rows(detail::RuntimeState&, const plan::SpammProblem&, const DeviceDense<In>&, bool, int32_t,    \
                                     int32_t, CUdeviceptr, CUstream);
SPARSEJIT_INSTANTIATE(float, float)
SPARSEJIT_INSTANTIATE(double, double)
SPARSEJIT_INSTANTIATE(half, float)
SPARSEJIT_INSTANTIATE(bfloat16, float)
#undef SPARSEJIT_INSTANTIATE

}  // namespace sparsejit
