// `sparsejit run`: one operation on one matrix, as a user would call it (auto unless forced),
// timed, optionally checked against the CPU reference, next to the vendor's time.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <limits>

#include "cli/call_options.hpp"
#include "cli/commands.hpp"
#include "cli/matrix_input.hpp"
#include "cli/operand_fit.hpp"
#include "cli/spamm_baseline.hpp"
#include "cli/spamm_input.hpp"
#include "plan/measure_policy.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "sparsejit/runtime.hpp"
#include "tuner/measure.hpp"
#include "variants/catalog.hpp"
#include "vendor/cusparse_sddmm.hpp"
#include "vendor/cusparse_spmm.hpp"

namespace sparsejit::cli {

namespace {

struct RunArgs {
  std::string input, op = "spmm", dtype = "f32", variant;
  int32_t k = 128;
  int repeat = 20;
  bool check = false, transpose = false, replay_launches = false;
  std::optional<double> measure_skip_margin;  // unset: the model's
  double measure_budget_ms = Options{}.measure_budget_ms, measure_budget_calls = Options{}.measure_budget_calls;
  int64_t memory_limit = 0;  // --memory-limit, when given
  Options call;  // from variant, transpose, the measuring options and the memory limit (call_options)
};

// Bytes of a CSR on the device: offsets, indices and values.
template <class T>
int64_t sparse_bytes(const Csr<T>& a) {
  return (int64_t(a.rows) + 1) * 4 + a.nnz() * int64_t(4 + sizeof(T));
}

// Wall-clock microseconds per call for `calls` back-to-back calls (host side only: launches
// are asynchronous), after the plan exists.
template <class F>
double host_us_per_call(const Context& context, int calls, F&& call) {
  context.synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) call();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  context.synchronize();
  return us / calls;
}

void report(const RunArgs& args, const Csr<double>& shape, const Decision& d, int64_t shortlists_timed, double ms,
            double vendor_ms, double host_us, const std::string& check) {
  const double flops = 2.0 * double(shape.nnz()) * args.k;
  std::printf("%s %s k=%d %s: %s %s\n", args.op.c_str(), matrix_name(args.input).c_str(), args.k, args.dtype.c_str(),
              d.variant.c_str(), d.params.dump().c_str());
  std::printf("  time %.4f ms, %.1f GFLOP/s; host %.2f us per repeated call\n", ms, flops / ms * 1e-6, host_us);
  std::printf("  vendor (cuSPARSE) %.4f ms; speedup %.2fx\n", vendor_ms, vendor_ms / ms);
  std::printf("  kernel %s, compile %.1f ms, load %.2f ms%s\n", to_string(d.kernel_origin), d.compile_ms, d.load_ms, check.c_str());
  // Where the choice came from, and whether this process timed a shortlist for it (a choice
  // recorded by an earlier process is taken without timing).
  std::printf("  decision source %s; shortlists timed in this process: %lld\n", to_string(d.source),
              static_cast<long long>(shortlists_timed));
}

template <class T>
void run_spmm(const RunArgs& args) {
  Csr<T> a = load_matrix<T>(args.input, 1);
  const int32_t inner = args.transpose ? a.rows : a.cols, outer = args.transpose ? a.cols : a.rows;
  Runtime rt;
  check_operands_fit(rt.device(), "spmm", args.k, dtype_of<T>::value, {{"B", inner}, {"C", outer}}, sparse_bytes(a));
  Dense<T> b(inner, args.k);
  generate::fill_random(b, 2);
  DeviceCsr<T> da(rt.context(), a);
  DeviceDense<T> db(rt.context(), b), dc(rt.context(), outer, args.k);
  const Options& options = args.call;
  std::string check;
  if (args.check) {
    dc.buffer().fill_bytes(0xFF);
    rt.spmm(da, db, dc, options);
    Dense<T> want;
    reference::spmm(a, b, want, args.transpose);
    const Dense<T> got = dc.download();
    const double err = reference::relative_error(got.data, want.data);
    const double limit = reference::check_tolerance<T>();
    check = "; check " + std::string(err <= limit ? "passed" : "FAILED") + " (relative error " + std::to_string(err) + ")";
    if (err > limit) throw Error(ErrorCategory::Cuda, "check failed: relative error " + std::to_string(err) + check);
  }
  rt.spmm(da, db, dc, options);
  const tuner::TimingOptions timing{3, args.repeat};
  const double ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream) { rt.spmm(da, db, dc, options); }).median_ms;
  const double host_us = host_us_per_call(rt.context(), 200, [&] { rt.spmm(da, db, dc, options); });
  // The plan the timed calls ran: auto's second call on the handle may have measured its shortlist.
  const CallInfo call = rt.spmm(da, db, dc, options);
  vendor::CusparseHandle handle(rt.context());
  vendor::CusparseSpmm<T> vendor_call(handle, da, args.transpose, db, dc, vendor::SpmmAlgorithm::CsrAlg2, nullptr);
  const double vendor_ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream s) { vendor_call.run(s); }).median_ms;
  report(args, cast<double>(a), *call.decision, rt.shortlists_timed(), ms, vendor_ms, host_us, check);
}

template <class T>
void run_sddmm(const RunArgs& args) {
  Csr<T> s = load_matrix<T>(args.input, 1);
  Runtime rt;
  // S's values twice: the input and P.
  check_operands_fit(rt.device(), "sddmm", args.k, dtype_of<T>::value, {{"A", s.rows}, {"B", s.cols}},
                     sparse_bytes(s) + s.nnz() * int64_t(sizeof(T)));
  Dense<T> a(s.rows, args.k), b(s.cols, args.k);
  generate::fill_random(a, 2);
  generate::fill_random(b, 3);
  DeviceCsr<T> ds(rt.context(), s);
  DeviceDense<T> da(rt.context(), a), db(rt.context(), b);
  DeviceBuffer dp(rt.context(), std::max<std::size_t>(1, s.values.size()) * sizeof(T));
  const Options& options = args.call;
  std::string check;
  if (args.check) {
    dp.fill_bytes(0xFF);
    rt.sddmm(ds, da, db, dp, options);
    Csr<T> want;
    reference::sddmm(s, a, b, want);
    const auto got = dp.download_as<T>(s.values.size());
    const double err = reference::relative_error(got, want.values);
    const double limit = reference::check_tolerance<T>();
    check = "; check " + std::string(err <= limit ? "passed" : "FAILED") + " (relative error " + std::to_string(err) + ")";
    if (err > limit) throw Error(ErrorCategory::Cuda, "check failed: relative error " + std::to_string(err));
  }
  rt.sddmm(ds, da, db, dp, options);
  const tuner::TimingOptions timing{3, args.repeat};
  const double ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream) { rt.sddmm(ds, da, db, dp, options); }).median_ms;
  const double host_us = host_us_per_call(rt.context(), 200, [&] { rt.sddmm(ds, da, db, dp, options); });
  // The plan the timed calls ran: auto's second call on the handle may have measured its shortlist.
  const CallInfo call = rt.sddmm(ds, da, db, dp, options);
  vendor::CusparseHandle handle(rt.context());
  vendor::CusparseSampledDots<T> vendor_call(handle, ds, da, db, dp, nullptr);
  const double vendor_ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream st) { vendor_call.run(st); }).median_ms;
  report(args, cast<double>(s), *call.decision, rt.shortlists_timed(), ms, vendor_ms, host_us, check);
}

// SpGEMM C = A·A: ours and cuSPARSE's whole call (the cusparse variant runs its documented
// sequence, allocations included), each timed from the host's call to its return with events
// on the stream; GFLOP/s with flops = 2 * NNZ(Ĉ).
template <class T>
void run_spgemm(const RunArgs& args) {
  Csr<T> a = load_matrix<T>(args.input, 1);
  if (a.rows != a.cols)
    throw InvalidInputError("run --op spgemm multiplies the matrix by itself, so it must be square; " + matrix_name(args.input) +
                            " is " + std::to_string(a.rows) + "x" + std::to_string(a.cols));
  Runtime rt;
  DeviceCsr<T> da(rt.context(), a);
  const Options& options = args.call;
  std::string check;
  if (args.check) {
    CallInfo checked;
    const Csr<T> got = rt.spgemm(da, da, options, &checked).download();
    const Csr<T> want = reference::spgemm(a, a);
    const bool same_pattern = got.row_ptr == want.row_ptr && got.col_idx == want.col_idx;
    const double err = same_pattern ? reference::relative_error(got.values, want.values) : std::numeric_limits<double>::infinity();
    // A reduced precision the caller asked for (bitmap_tc's "tf32") is held to its own rounding.
    const std::string precision = checked.decision->params.value("precision", std::string("full"));
    const double limit = precision == "full" ? reference::check_tolerance<T>() : 1e-2;
    const bool passed = same_pattern && err <= limit;
    check = "; check " + std::string(passed ? "passed" : "FAILED") +
            (same_pattern ? " (relative error " + std::to_string(err) + (precision == "full" ? "" : ", " + precision + " limit 1e-2") + ")"
                          : " (the pattern differs from the reference's)");
    if (!passed) throw Error(ErrorCategory::Cuda, "check failed" + check);
  }
  CallInfo call;
  rt.spgemm(da, da, options, &call);
  const tuner::TimingOptions timing{2, args.repeat};
  const double ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream s) {
    Options o = options;
    o.stream = s;
    rt.spgemm(da, da, o);
  }).median_ms;
  Options vendor = options;
  vendor.variant = "cusparse";
  vendor.params = nlohmann::json::object();
  // cuSPARSE's call can fail where ours runs (no algorithm's buffers fit, or refused by the
  // planner under --memory-limit): say so, keep our time.
  std::string vendor_line;
  try {
    const double vendor_ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream s) {
      Options o = vendor;
      o.stream = s;
      rt.spgemm(da, da, o);
    }).median_ms;
    char line[128];
    std::snprintf(line, sizeof line, "%.4f ms; speedup %.2fx", vendor_ms, vendor_ms / ms);
    vendor_line = line;
  } catch (const CudaError& e) {
    vendor_line = std::string("failed: ") + e.what();
  } catch (const UnsupportedError& e) {
    vendor_line = std::string("refused: ") + e.what();
  }
  const Decision& d = *call.decision;
  const double products = d.features.at("products").get<double>();
  std::printf("spgemm %s C = A·A %s: %s %s\n", matrix_name(args.input).c_str(), args.dtype.c_str(), d.variant.c_str(),
              d.params.dump().c_str());
  std::printf("  time %.4f ms (whole call, C allocated), %.1f GFLOP/s (2 x %.0f products)\n", ms, 2 * products / ms * 1e-6,
              products);
  std::printf("  vendor (cuSPARSE whole call) %s\n", vendor_line.c_str());
  std::printf("  %s\n", describe_spgemm_memory(d).c_str());
  std::printf("  kernels %s, compile %.1f ms, load %.2f ms%s\n", to_string(d.kernel_origin), d.compile_ms, d.load_ms,
              check.c_str());
}

// SpAMM C ≈ A·A on a decay matrix: our whole call (norms, τ, the selection read back, the
// products) timed with events from the host's call to its end, next to cuBLAS's GEMM of the
// same precision class on host-converted operands; --check compares with reference::spamm at
// the call's τ (a CPU product: small N only).
template <class T>
void run_spamm(const RunArgs& args, const SpammArgs& spamm) {
  const Dense<double> host = spamm_matrix(args.input);
  const Dense<T> a = cast<T>(host);
  const SpammOptions options = spamm_options(spamm, args.variant);
  Runtime rt;
  DeviceDense<T> da(rt.context(), a), dc(rt.context(), a.rows, a.cols);
  std::string check;
  if (args.check) {
    dc.buffer().fill_bytes(0xFF);
    const SpammInfo info = rt.spamm(da, da, dc, options);
    Dense<T> want;
    // The vendor's GEMM skips no tile product: its reference is the exact one (τ = 0).
    const bool vendor = info.decision->variant == variants::vendor_variant(Op::SpAMM);
    reference::spamm(a, a, want, info.tile, vendor ? 0.0 : info.tau);
    const double err = reference::relative_error(dc.download().data, want.data);
    const double limit = options.precision == SpammPrecision::Full ? reference::check_tolerance<T>() : 2e-2;
    check = "; check " + std::string(err <= limit ? "passed" : "FAILED") + " (relative error " + std::to_string(err) + ")";
    if (err > limit) throw Error(ErrorCategory::Cuda, "check failed" + check);
  }
  // τ once (a search runs here); the timed calls reuse it.
  const SpammInfo info = rt.spamm(da, da, dc, options);
  SpammOptions fixed = options;
  fixed.valid_ratio.reset();
  fixed.max_error.reset();
  fixed.tau = info.tau;
  const tuner::TimingOptions timing{3, args.repeat};
  const double ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream) { rt.spamm(da, da, dc, fixed); }).median_ms;
  ClassGemm vendor(rt.context(), host, host, dtype_of<T>::value, options.precision);
  const double vendor_ms = tuner::time_on_stream(rt.context(), nullptr, 1, timing, [&](int, CUstream s) { vendor.run(s); }).median_ms;
  const Decision& d = *info.decision;
  const double kept_flops = 2.0 * double(info.valid_products) * info.tile * info.tile * info.tile;
  std::printf("spamm %s C ≈ A·A %s precision %s: %s %s\n", args.input.c_str(), args.dtype.c_str(), to_string(options.precision),
              d.variant.c_str(), d.params.dump().c_str());
  std::printf("  %s\n", describe_selection(info).c_str());
  std::printf("  time %.4f ms (whole call: norms, selection read back, products), %.1f GFLOP/s kept\n", ms, kept_flops / ms * 1e-6);
  std::printf("  %s %.4f ms; speedup %.2fx\n", vendor.name().c_str(), vendor_ms, vendor_ms / ms);
  std::printf("  kernels %s, compile %.1f ms, load %.2f ms%s\n", to_string(d.kernel_origin), d.compile_ms, d.load_ms, check.c_str());
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("run", "Run one operation on one matrix (auto unless --variant), timed next to cuSPARSE");
  static RunArgs args;
  static SpammArgs spamm;
  cmd->add_option("matrix", args.input, std::string("Matrix file or gen:SPEC; for --op spamm a dense ") + kSpammSpecHelp)->required();
  cmd->add_option("--op", args.op, "spmm | sddmm | spgemm (C = A·A) | spamm (C ≈ A·A)")->capture_default_str();
  cmd->add_option("-k,--k", args.k, "Columns of the dense operands (not used by spgemm)")->capture_default_str();
  cmd->add_option("--dtype", args.dtype, "f32 | f64")->capture_default_str();
  cmd->add_option("--variant", args.variant, "Force a variant, NAME[:key=value,...] as SPARSEJIT_FORCE takes it (`sparsejit explain --list --op OP` lists them)");
  cmd->add_option("--repeat", args.repeat, "Timed repetitions (the median is printed); `sparsejit bench` rotates operands, this does not")->capture_default_str();
  cmd->add_flag("--check", args.check, "Compare with the CPU reference first (output poisoned before the run)");
  cmd->add_flag("--transpose", args.transpose, "SpMM: C = Aᵀ·B");
  cmd->add_flag("--replay-launches", args.replay_launches,
                "SpMM and SDDMM: issue the plan's kernels as one CUDA graph replay (Options::replay_launches, the Python package's setting): "
                "less host time per call, no early launch between calls");
  add_measure_options(cmd, args.measure_skip_margin, args.measure_budget_ms, args.measure_budget_calls);
  static const CLI::Option* memory_limit_given = nullptr;  // this command's option (the command may be built again)
  memory_limit_given = add_memory_limit_option(cmd, args.memory_limit);
  add_spamm_options(cmd, spamm);
  cmd->callback([] {
    const Op op = parse_op(args.op);
    const DType type = parse_dtype(args.dtype);
    args.call = call_options(op, args.variant, args.transpose);
    args.call.measure_skip_margin = args.measure_skip_margin;
    args.call.measure_budget_calls = args.measure_budget_calls;
    args.call.measure_budget_ms = args.measure_budget_ms;
    args.call.replay_launches = args.replay_launches;
    apply_memory_limit(args.call, op, *memory_limit_given, args.memory_limit);
    plan::check_measure_options(args.call);
    if (args.repeat < 1) throw InvalidInputError("--repeat " + std::to_string(args.repeat) + " must be >= 1");
    if (type != DType::F32 && type != DType::F64) throw UnsupportedError(std::string("run supports f32 and f64, not ") + to_string(type));
    if (!driver_available()) throw UnsupportedError(driver_unavailable_reason());
    if (op == Op::SpMM) type == DType::F32 ? run_spmm<float>(args) : run_spmm<double>(args);
    else if (op == Op::SDDMM) type == DType::F32 ? run_sddmm<float>(args) : run_sddmm<double>(args);
    else if (op == Op::SpGEMM) type == DType::F32 ? run_spgemm<float>(args) : run_spgemm<double>(args);
    else type == DType::F32 ? run_spamm<float>(args, spamm) : run_spamm<double>(args, spamm);
  });
}

}  // namespace sparsejit::cli
