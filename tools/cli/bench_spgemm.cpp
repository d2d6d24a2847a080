// `bench --op spgemm`: C = A·A for one square matrix, our whole call (auto and, with
// --variants all, every variant of ours forced) against cuSPARSE's whole call (the cusparse
// variant: its documented sequence with its buffers and C allocated, released after), in one
// process on one stream. Each SpGEMM call learns NNZ(C) on the host before allocating C, so a
// call cannot be captured in a graph: every time here is an event pair around the host's call
// (what a caller waits for), the median of --repeat after --warmup and one untimed first run.
// GFLOP/s counts 2 flops per product (2·NNZ(Ĉ)). The record's "numeric" times the numeric phase
// alone with the pattern reused (spgemm_numeric against cusparseSpGEMMreuse_compute; see
// measure_numeric), which does not synchronize and so is also timed on the graph clock;
// "peak_bytes" of auto and the vendor is one whole call's peak device memory
// (SpgemmTimer::peak_bytes, cli/spgemm_timer.hpp).
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "cli/bench.hpp"
#include "cli/spgemm_timer.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/reference.hpp"
#include "vendor/cusparse_spgemm.hpp"

namespace sparsejit::cli::bench {

using nlohmann::ordered_json;

namespace {

// A ratio, or null when either side is missing or not positive.
ordered_json spgemm_ratio(double numerator, double denominator) {
  const double r = numerator / denominator;
  return std::isfinite(r) && r > 0 ? ordered_json(r) : ordered_json(nullptr);
}

// {ok, relative_error} of `got` against the reference: the same pattern and values within
// the value type's tolerance.
template <class T>
ordered_json check_against(const Csr<T>& got, const Csr<T>& want) {
  const bool same_pattern = got.row_ptr == want.row_ptr && got.col_idx == want.col_idx;
  const double error = same_pattern ? reference::relative_error(got.values, want.values) : std::numeric_limits<double>::infinity();
  return {{"ok", same_pattern && error <= reference::check_tolerance<T>()},
          {"relative_error", same_pattern ? ordered_json(error) : ordered_json(nullptr)},
          {"same_pattern", same_pattern}};
}

// Entries list every product on the host (8 bytes each, host and device): forced past this
// many products the list's build would outlast the rest of the record.
constexpr int64_t kMaxForcedEntriesProducts = 300'000'000;

// A time on the graph clock stored as numeric[key], or null there and the reason as
// numeric[key + "_failed"] where the call cannot be captured (a path that synchronizes).
template <class Time>
void time_replayed(ordered_json& numeric, const std::string& key, const Time& graph_ms) {
  try {
    numeric[key] = graph_ms();
  } catch (const Error& e) {
    numeric[key] = nullptr;
    numeric[key + "_failed"] = e.what();
  }
}

// --variants all: each positions kernel forced (Options::positions_kernel), {ms (events),
// graph_ms (the device's clock, or graph_ms_failed), check} by name, or why it was not timed.
template <class Time, class TimeGraph, class Check>
ordered_json forced_kernels(const Time& time_numeric, const TimeGraph& time_graph, const Check& checked, const Options& options,
                            int64_t products) {
  ordered_json kernels = ordered_json::object();
  for (PositionsKernel kernel :
       {PositionsKernel::Entries, PositionsKernel::Warps, PositionsKernel::Blocks, PositionsKernel::Tiles, PositionsKernel::Rows}) {
    if (kernel == PositionsKernel::Entries && products > kMaxForcedEntriesProducts) {
      kernels[to_string(kernel)] = "skipped: more than " + std::to_string(kMaxForcedEntriesProducts) + " products";
      continue;
    }
    Options forced = options;
    forced.positions_kernel = kernel;
    ordered_json timed = {{"ms", time_numeric(forced)}};
    time_replayed(timed, "graph_ms", [&] { return time_graph(forced); });
    if (const std::optional<ordered_json> check = checked()) timed["check"] = *check;
    kernels[to_string(kernel)] = timed;
  }
  return kernels;
}

// The numeric phase alone with the pattern reused: ours (spgemm_numeric into a C from spgemm,
// auto's plan) against cusparseSpGEMMreuse_compute (its pattern phases run once, untimed), each
// an event pair around the host's call. {ms, path (NumericCallInfo::numeric), setup_ms (the
// first call, which finds the positions, wall-clock), recompute_ms (keep_positions off: the
// plan's variant again), vendor_ms, vendor_setup_ms (cuSPARSE's work estimation, nnz and copy
// phases, wall-clock), speedup, host_us (the host's time of one call: 20 calls issued back to
// back, without synchronizing, over 20), replay_ms, replay_host_us and replay_speedup (the same
// with Options::replay_launches: the call one graph launch), graph_ms, vendor_graph_ms and
// graph_speedup (the device's time alone: both sides' calls captured into a CUDA graph and its
// replays timed, as the SpMM and SDDMM records are, so that neither side's launches wait on the
// host; graph_ms_failed or vendor_graph_ms_failed where a side's call cannot be captured, and
// then no graph_speedup), and with --variants all
// "kernels" (forced_kernels)} (vendor_failed when cuSPARSE could not set up its
// pattern), and with `want` (--check) C's values after the timed calls against it.
template <class T>
ordered_json measure_numeric(Runtime& rt, const DeviceCsr<T>& a, int64_t products, const Config& config, const Csr<T>* want) {
  const Stream stream(rt.context());
  Options options;
  options.stream = stream.handle();
  DeviceCsr<T> c = rt.spgemm(a, a, options);
  NumericCallInfo first;
  const double setup_ms = synchronized_ms(rt.context(), [&] { first = rt.spgemm_numeric(a, a, c, options); });
  tuner::TimingOptions timing = config.timing;
  timing.clock = tuner::Clock::Events;
  tuner::TimingOptions graph_timing = config.timing;
  graph_timing.clock = tuner::Clock::Graph;
  const auto time_numeric = [&](const Options& o, const tuner::TimingOptions& clock) {
    return tuner::time_on_stream(rt.context(), stream.handle(), 1, clock, [&](int, CUstream) { rt.spgemm_numeric(a, a, c, o); })
        .median_ms;
  };
  const auto time_events = [&](const Options& o) { return time_numeric(o, timing); };
  const auto time_graph = [&](const Options& o) { return time_numeric(o, graph_timing); };
  const auto host_us = [&](const Options& o) {
    constexpr int kIssued = 20;
    stream.synchronize();
    const auto issue_start = std::chrono::steady_clock::now();
    for (int i = 0; i < kIssued; ++i) rt.spgemm_numeric(a, a, c, o);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - issue_start).count() / kIssued;
  };
  const auto checked = [&]() -> std::optional<ordered_json> {
    if (want == nullptr) return std::nullopt;
    stream.synchronize();
    return check_against(c.download(), *want);
  };
  const double ours = time_events(options);
  ordered_json numeric = {{"ms", ours}, {"path", first.numeric}, {"setup_ms", setup_ms}, {"host_us", host_us(options)}};
  const std::optional<ordered_json> auto_check = checked();
  Options replayed = options;
  replayed.replay_launches = true;
  numeric["replay_ms"] = time_events(replayed);
  numeric["replay_host_us"] = host_us(replayed);
  time_replayed(numeric, "graph_ms", [&] { return time_graph(options); });
  if (config.all_variants) numeric["kernels"] = forced_kernels(time_events, time_graph, checked, options, products);
  Options recompute = options;
  recompute.keep_positions = false;
  numeric["recompute_ms"] = time_events(recompute);
  try {
    const vendor::CusparseHandle handle(rt.context());
    std::optional<vendor::CusparseSpgemmReuse<T>> reuse;
    numeric["vendor_setup_ms"] = synchronized_ms(rt.context(), [&] { reuse.emplace(handle, a, a, stream.handle()); });
    const double vendor_ms = tuner::time_on_stream(rt.context(), stream.handle(), 1, timing, [&](int, CUstream s) {
                               reuse->compute(s);
                             }).median_ms;
    numeric["vendor_ms"] = vendor_ms;
    numeric["speedup"] = spgemm_ratio(vendor_ms, ours);
    numeric["replay_speedup"] = spgemm_ratio(vendor_ms, numeric["replay_ms"].get<double>());
    time_replayed(numeric, "vendor_graph_ms", [&] {
      return tuner::time_on_stream(rt.context(), stream.handle(), 1, graph_timing, [&](int, CUstream s) { reuse->compute(s); })
          .median_ms;
    });
    if (numeric["graph_ms"].is_number() && numeric["vendor_graph_ms"].is_number())
      numeric["graph_speedup"] = spgemm_ratio(numeric["vendor_graph_ms"].get<double>(), numeric["graph_ms"].get<double>());
  } catch (const CudaError& e) {
    numeric["vendor_ms"] = nullptr;
    numeric["vendor_failed"] = e.what();
    numeric["speedup"] = nullptr;
  }
  if (auto_check) numeric["check"] = *auto_check;
  return numeric;
}

}  // namespace

template <class T>
ordered_json measure_spgemm(Runtime& rt, const Csr<T>& a, const Config& config, std::vector<std::string>& failures) {
  if (a.rows != a.cols)
    throw UnsupportedError("bench --op spgemm squares each matrix (C = A·A); this one is " + std::to_string(a.rows) + "x" +
                           std::to_string(a.cols));
  const DeviceCsr<T> da(rt.context(), a);
  SpgemmTimer<T> timer(rt, da, config.timing);
  ordered_json record;

  const auto [auto_info, auto_ms] = timer.time(Options{});
  const Decision& d = *auto_info.decision;
  const double products = d.features.at("products").get<double>();
  const auto gflops = [&](double ms) { return 2.0 * products / (ms * 1e6); };
  record["products"] = int64_t(products);
  record["nnz_c"] = rt.spgemm(da, da).nnz();
  record["auto"] = {{"variant", d.variant}, {"params", d.params}, {"ms", auto_ms}, {"gflops", gflops(auto_ms)},
                    {"first_call_ms", timer.first_call_ms(a, Options{})}, {"peak_bytes", timer.peak_bytes(Options{})}};

  Fastest oracle;
  ordered_json variants = ordered_json::object();
  if (config.all_variants) {
    for (const ForcedCandidate& candidate : forced_candidates(Op::SpGEMM, false)) {  // the vendor is timed below
      Options forced;
      forced.variant = candidate.variant;
      try {
        const double ms = timer.time(forced).second;
        variants[candidate.label()] = ms;
        oracle.offer(candidate.label(), ms);
      } catch (const UnsupportedError&) {
        variants[candidate.label()] = "unsupported";
      } catch (const Error& e) {
        variants[candidate.label()] = "failed";
        failures.push_back(candidate.label() + ": " + e.what());
      }
    }
  }
  oracle.offer("auto", auto_ms);
  record["variants"] = variants;

  Options vendor;
  vendor.variant = "cusparse";
  try {
    const double vendor_ms = timer.time(vendor).second;
    record["vendor"] = {{"name", "cusparse"}, {"best", vendor_ms}, {"gflops", gflops(vendor_ms)}, {"peak_bytes", timer.peak_bytes(vendor)}};
    oracle.offer("cusparse", vendor_ms);
    record["speedup"] = spgemm_ratio(vendor_ms, auto_ms);
  } catch (const CudaError& e) {
    // cuSPARSE's call can fail where ours runs (ALG1 out of resources): a fact to record.
    record["vendor"] = {{"name", "cusparse"}, {"best", nullptr}, {"failed", e.what()}};
    record["speedup"] = nullptr;
  }
  std::optional<Csr<T>> want;
  if (config.check) want = reference::spgemm(a, a);
  record["numeric"] = measure_numeric(rt, da, int64_t(products), config, want ? &*want : nullptr);
  if (want && !record["numeric"]["check"]["ok"].get<bool>())
    failures.push_back("check of the numeric phase (" + record["numeric"]["path"].get<std::string>() + ") failed");
  record["oracle"] = {{"name", oracle.name}, {"ms", oracle.ms}};
  record["auto_over_oracle"] = spgemm_ratio(auto_ms, oracle.ms);

  if (want) {
    Options checked;
    const Csr<T> got = rt.spgemm(da, da, checked).download();
    record["check"] = check_against(got, *want);
    if (!record["check"]["ok"].get<bool>()) failures.push_back("check of auto (" + d.variant + ") failed");
  }
  return record;
}

template ordered_json measure_spgemm<float>(Runtime&, const Csr<float>&, const Config&, std::vector<std::string>&);
template ordered_json measure_spgemm<double>(Runtime&, const Csr<double>&, const Config&, std::vector<std::string>&);

}  // namespace sparsejit::cli::bench
