#include "cli/bench_spamm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/bench.hpp"
#include "cli/json_lines.hpp"
#include "cli/one_line.hpp"
#include "cli/spamm_baseline.hpp"
#include "cli/spamm_input.hpp"
#include "plan/spamm.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"

namespace sparsejit::cli::bench {

namespace {

using nlohmann::ordered_json;

std::vector<std::string> items_of(const std::string& list) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t comma = std::min(list.find(',', start), list.size());
    items.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

double number(const std::string& what, const std::string& item) {
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(item, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (item.empty() || used != item.size()) throw InvalidInputError("bench: " + what + " '" + item + "' is not a number");
  return x;
}


// Whether run_case measures `precision`: f64 computes in full precision only.
bool measured(const SpammConfig& config, SpammPrecision precision) {
  return config.dtype != DType::F64 || precision == SpammPrecision::Full;
}

// Whether it measures `operands` with `precision`: 16-bit operands are fp16's and bf16's.
bool measured(SpammPrecision precision, const std::string& operands) {
  return operands != "16bit" || precision == SpammPrecision::FP16 || precision == SpammPrecision::BF16;
}

// The progress items of one (N, decay) input: its (precision, operands, share) runs.
int64_t items_per_input(const SpammConfig& config) {
  int64_t items = 0;
  for (SpammPrecision precision : config.precisions)
    for (const std::string& operands : config.operands)
      if (measured(config, precision) && measured(precision, operands)) items += int64_t(config.ratios.size());
  return items;
}

// An item's share of the ETA: N³, its tile products' and its cuBLAS baseline's order (N =
// 16384 takes about 64 times as long as 4096; a plain mean would be far off).
double item_weight(int32_t n) { return double(n) * double(n) * double(n); }

int64_t total_items(const SpammConfig& config) {
  return int64_t(config.sizes.size() * config.decays.size()) * items_per_input(config);
}

double total_weight(const SpammConfig& config) {
  double weight = 0;
  for (int32_t n : config.sizes) weight += item_weight(n) * double(config.decays.size()) * double(items_per_input(config));
  return weight;
}

std::string share_label(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%g%%", 100 * ratio);
  return text;
}

double frobenius(const std::vector<double>& x) {
  double s = 0;
  for (double v : x) s += v * v;
  return std::sqrt(s);
}

template <class T>
double distance(const std::vector<T>& got, const std::vector<double>& exact) {
  double s = 0;
  for (std::size_t i = 0; i < exact.size(); ++i) s += (double(got[i]) - exact[i]) * (double(got[i]) - exact[i]);
  return std::sqrt(s);
}

// One (N, decay) input on the device, with its exact product (DGEMM on f64 operands), and its
// half and bfloat16 copies (converted on the host) made on first use.
template <class T>
class Case {
 public:
  Case(Runtime& rt, const std::string& decay, int32_t n)
      : rt_(rt), host_(spamm_matrix(decay + ":" + std::to_string(n))), a_(rt.context(), cast<T>(host_)), c_(rt.context(), n, n) {
    ClassGemm exact(rt.context(), host_, host_, DType::F64, SpammPrecision::Full);
    exact.run(nullptr);
    exact_ = exact.result();
    exact_norm_ = frobenius(exact_);
  }
  const Dense<double>& host() const { return host_; }
  const DeviceDense<T>& a() const { return a_; }
  DeviceDense<T>& c() { return c_; }
  const DeviceDense<half>& a_half() {
    if (!a_half_) a_half_.emplace(rt_.context(), cast<half>(host_));
    return *a_half_;
  }
  const DeviceDense<bfloat16>& a_bfloat16() {
    if (!a_bfloat16_) a_bfloat16_.emplace(rt_.context(), cast<bfloat16>(host_));
    return *a_bfloat16_;
  }
  double relative_error() const { return distance(c_.download().data, exact_) / exact_norm_; }
  double exact_norm() const { return exact_norm_; }

 private:
  Runtime& rt_;
  Dense<double> host_;
  DeviceDense<T> a_;
  DeviceDense<T> c_;
  std::optional<DeviceDense<half>> a_half_;
  std::optional<DeviceDense<bfloat16>> a_bfloat16_;
  std::vector<double> exact_;
  double exact_norm_ = 0;
};

class SpammBench {
 public:
  SpammBench(const SpammConfig& config, std::ostream* json_out, ProgressStyle style)
      : config_(config), json_out_(json_out), progress_(total_items(config), total_weight(config), style, std::cerr) {}

  bool run() {
    for (int32_t n : config_.sizes)
      for (const std::string& decay : config_.decays) {
        const int64_t done_before = progress_.done();
        try {
          if (config_.dtype == DType::F64) run_case<double>(decay, n);
          else run_case<float>(decay, n);
        } catch (const Error& e) {
          fail(decay + ":" + std::to_string(n), e.what());
          const int64_t left = items_per_input(config_) - (progress_.done() - done_before);
          progress_.skipped(left, double(left) * item_weight(n), decay + ":" + std::to_string(n));
        }
      }
    return !failed_;
  }

 private:
  template <class T>
  void run_case(const std::string& decay, int32_t n) {
    progress_.print(std::cerr, "bench: spamm " + decay + ":" + std::to_string(n) + " " + to_string(config_.dtype));
    Case<T> input(rt_, decay, n);
    for (SpammPrecision precision : config_.precisions) {
      if (!measured(config_, precision)) continue;
      // The class's GEMM, and (fp16, bf16) cuBLAS's own call on the f32 operands.
      Baseline baseline{ClassGemm(rt_.context(), input.host(), input.host(), config_.dtype, precision), std::nullopt};
      if (precision == SpammPrecision::FP16 || precision == SpammPrecision::BF16)
        baseline.from_f32.emplace(rt_.context(), input.host(), input.host(), config_.dtype, precision, true);
      for (const std::string& operands : config_.operands) {
        if (!measured(precision, operands)) continue;
        for (double ratio : config_.ratios) {
          run_ratio(input, decay, n, precision, operands == "16bit", ratio, baseline);
          progress_.finished(decay + ":" + std::to_string(n) + " " + to_string(precision) + " " + operands + " " + share_label(ratio),
                             item_weight(n));
        }
      }
    }
  }

  // A·A as the operands are handed over: in the value type, or (sixteen) as half/bfloat16.
  template <class T>
  SpammInfo call(Case<T>& input, bool sixteen, const SpammOptions& o) {
    if constexpr (std::is_same_v<T, float>) {
      if (sixteen && o.precision == SpammPrecision::FP16) return rt_.spamm(input.a_half(), input.a_half(), input.c(), o);
      if (sixteen) return rt_.spamm(input.a_bfloat16(), input.a_bfloat16(), input.c(), o);
    }
    return rt_.spamm(input.a(), input.a(), input.c(), o);
  }

  // cuBLAS of the class on host-converted operands, and (fp16, bf16) on the f32 operands.
  struct Baseline {
    ClassGemm gemm;
    std::optional<ClassGemm> from_f32;
  };

  template <class T>
  void run_ratio(Case<T>& input, const std::string& decay, int32_t n, SpammPrecision precision, bool sixteen, double ratio,
                 Baseline& baseline) {
    const std::string vendor = baseline.gemm.name();
    const double f32_inputs_ms = baseline.from_f32 ? time([&](CUstream s) { baseline.from_f32->run(s); }) : 0;
    const std::string operands = sixteen ? "16bit" : "value";
    SpammOptions search;
    search.valid_ratio = ratio;
    search.precision = precision;
    search.tile = config_.tile;
    // τ for the share from a tile variant's search: auto may take cuBLAS at this share, and
    // that call multiplies everything and reports τ = 0.
    SpammOptions tile_search = search;
    tile_search.variant = config_.dtype == DType::F64 ? "simt" : "mma";
    const SpammInfo found = call(input, sixteen, tile_search);
    const double ratio_error = std::abs(found.valid_ratio - ratio) / ratio;
    // The call as a caller asking for the share makes it: the search inside.
    Paired with_search;
    std::string with_search_variant;
    for (const std::string& path : config_.paths)
      if (path == "auto") {
        with_search_variant = call(input, sixteen, search).decision->variant;
        with_search = time_paired([&] { call(input, sixteen, search); }, baseline.gemm);
      }
    for (const std::string& path : config_.paths) {
      SpammOptions o = search;
      o.valid_ratio.reset();
      o.tau = found.tau;
      o.variant = path == "auto" ? "" : path;
      const std::string what = decay + ":" + std::to_string(n) + " " + to_string(precision) + " " + operands + " " +
                               std::to_string(100 * ratio) + "% " + path;
      try {
        // The record is the last timed call's: with τ given, auto may learn over the first calls
        // on these operands (a remembered or timed choice) and follow what it learned after them.
        SpammInfo info = call(input, sixteen, o);
        std::vector<std::string> choices;  // each call's variant and source ("cublas measured, no norms")
        const Paired timed = time_paired(
            [&] {
              info = call(input, sixteen, o);
              const Decision& d = *info.decision;
              choices.push_back(d.variant + " " + to_string(d.source) + (d.features.value("decided_before_norms", false) ? ", no norms" : ""));
            },
            baseline.gemm);
        const double ms = timed.ms, vendor_ms = timed.vendor_ms;
        const double error = input.relative_error();
        ordered_json record{{"device", rt_.device().name}, {"date", utc_now()}, {"op", "spamm"}, {"n", n}, {"decay", decay},
                            {"dtype", to_string(config_.dtype)}, {"precision", to_string(precision)}, {"operands", operands},
                            {"path", path}, {"variant", info.decision->variant}, {"params", info.decision->params},
                            {"source", to_string(info.decision->source)},
                            {"tile", info.tile}, {"target_ratio", ratio}, {"valid_ratio", found.valid_ratio},
                            {"computed_share", info.valid_ratio},
                            {"ratio_error", ratio_error}, {"tau", info.tau}, {"search_iterations", found.search_iterations},
                            {"search_ms", found.search_ms}, {"search_per_multiplication", found.search_ms / ms}, {"ms", ms},
                            {"baseline", vendor}, {"baseline_ms", vendor_ms}, {"speedup", vendor_ms / ms},
                            {"baseline_f32_inputs_ms", f32_inputs_ms > 0 ? f32_inputs_ms : vendor_ms},
                            {"relative_error", error}, {"relative_bound", info.error_bound / input.exact_norm()},
                            {"warmup", config_.timing.warmup}, {"repeat", config_.timing.repeat}};
        if (path == "auto") {
          // call by call (warm-up calls first): what auto learns on these operands shows here
          record["samples_ms"] = timed.samples;
          record["choices"] = choices;
          record["with_search_variant"] = with_search_variant;
          record["with_search_ms"] = with_search.ms;
          record["with_search_baseline_ms"] = with_search.vendor_ms;
          record["with_search_speedup"] = with_search.vendor_ms / with_search.ms;
        }
        char line[800];
        int used = std::snprintf(line, sizeof line,
                                 "%-12s %6d %-5s %-5s %6.2f%% %-6s %-7s %9.4f ms  %s %9.4f ms  %6.2fx  err %.2e  bound %.2e  "
                                 "search %d steps %.2f ms = %.2fx the call, share off by %.2f%%",
                                 decay.c_str(), n, to_string(precision), operands.c_str(), 100 * found.valid_ratio, path.c_str(),
                                 info.decision->variant.c_str(), ms, vendor.c_str(), vendor_ms, vendor_ms / ms, error,
                                 info.error_bound / input.exact_norm(), found.search_iterations, found.search_ms, found.search_ms / ms,
                                 100 * ratio_error);
        if (path == "auto" && used > 0 && std::size_t(used) < sizeof line)
          used += std::snprintf(line + used, sizeof line - std::size_t(used), "  | share asked: %s %.4f ms %.2fx",
                                with_search_variant.c_str(), with_search.ms, with_search.vendor_ms / with_search.ms);
        if (path == "auto" && !config_.devices.empty()) {
          const nlohmann::json spread = on_devices(input, sixteen, o, ms, baseline);
          for (const auto& [k, v] : spread.items()) record[k] = v;
          if (used > 0 && std::size_t(used) < sizeof line)
            std::snprintf(line + used, sizeof line - std::size_t(used),
                          "  | %d GPUs: %.4f ms, %.2fx one GPU of ours, %.2fx cuBLAS; resident %.4f ms, %.2fx one GPU, %.2fx cuBLAS",
                          spread.at("devices").get<int>(), spread.at("devices_ms").get<double>(), spread.at("over_one_gpu").get<double>(),
                          spread.at("devices_speedup").get<double>(), spread.at("resident_ms").get<double>(),
                          spread.at("resident_over_one_gpu").get<double>(), spread.at("resident_speedup").get<double>());
        }
        emit(record);
        progress_.print(std::cerr, line);
      } catch (const UnsupportedError& e) {
        progress_.print(std::cerr, "bench: " + what + ": not run (" + e.what() + ")");
      } catch (const Error& e) {
        fail(what, e.what());
      }
    }
  }

  // Auto with τ given on config_.devices against itself on one GPU (one_gpu_ms) and the
  // class's GEMM on one GPU, timed in alternation: the record's devices_* fields, with A on
  // rank 0 (sent to the others every call, C gathered back); then resident_* with A replicated
  // on every GPU beforehand (untimed) and C left there in blocks (gathered afterwards, untimed,
  // into a poisoned C for the error).
  template <class T>
  nlohmann::json on_devices(Case<T>& input, bool sixteen, SpammOptions o, double one_gpu_ms, Baseline& baseline) {
    o.devices = config_.devices;
    SpammInfo info = call(input, sixteen, o);
    const Paired timed = time_paired([&] { info = call(input, sixteen, o); }, baseline.gemm);
    const Decision& d = *info.decision;
    const int ranks = int(d.features.at("devices").size());
    nlohmann::json out = {{"devices", ranks},
                          {"devices_variant", d.variant},
                          {"devices_ms", timed.ms},
                          {"devices_speedup", timed.vendor_ms / timed.ms},
                          {"over_one_gpu", one_gpu_ms / timed.ms},
                          {"parallel_efficiency", one_gpu_ms / timed.ms / ranks},
                          {"imbalance", d.features.at("imbalance")},
                          {"devices_blocks", d.features.at("devices")},
                          {"devices_balance", d.features.at("balance")},
                          {"devices_host_ms", d.features.at("host_ms")},
                          {"devices_relative_error", input.relative_error()}};
    if constexpr (std::is_same_v<T, float>) {
      if (sixteen && o.precision == SpammPrecision::FP16) return resident(input, input.a_half(), o, one_gpu_ms, baseline, out);
      if (sixteen) return resident(input, input.a_bfloat16(), o, one_gpu_ms, baseline, out);
    }
    return resident(input, input.a(), o, one_gpu_ms, baseline, out);
  }

  template <class T, class In>
  nlohmann::json resident(Case<T>& input, const DeviceDense<In>& a, SpammOptions o, double one_gpu_ms, Baseline& baseline,
                          nlohmann::json out) {
    const SpreadDense<In> spread = rt_.replicate(a, o.devices);
    o.devices.clear();  // the operands name their GPUs
    SpreadDense<T> c;
    SpammInfo info = rt_.spamm(spread, spread, c, o);
    const Paired timed = time_paired([&] { info = rt_.spamm(spread, spread, c, o); }, baseline.gemm);
    input.c().buffer().fill_bytes(0xFF);
    rt_.gather(c, input.c());
    const Decision& d = *info.decision;
    const int ranks = int(c.parts.size());
    out["resident_ms"] = timed.ms;
    out["resident_speedup"] = timed.vendor_ms / timed.ms;
    out["resident_over_one_gpu"] = one_gpu_ms / timed.ms;
    out["resident_efficiency"] = one_gpu_ms / timed.ms / ranks;
    out["resident_imbalance"] = d.features.at("imbalance");
    out["resident_blocks"] = d.features.at("devices");
    out["resident_balance"] = d.features.at("balance");
    out["resident_host_ms"] = d.features.at("host_ms");
    out["resident_relative_error"] = input.relative_error();
    return out;
  }

  // Device ms per call: events around each (our calls synchronize inside, so a graph could not hold them).
  double time(const std::function<void(CUstream)>& call) {
    tuner::TimingOptions events = config_.timing;
    events.clock = tuner::Clock::Events;
    return tuner::time_on_stream(rt_.context(), nullptr, 1, events, [&](int, CUstream s) { call(s); }).median_ms;
  }

  // Ours and the class's GEMM in alternation, call by call, each between its own events (medians,
  // and our calls' samples): back-to-back GEMMs slowed an H100's HGEMM from 1.27 to 1.35-1.43 ms
  // within a second, and timing one side after the other charged that to the side timed second.
  struct Paired {
    double ms = 0, vendor_ms = 0;
    std::vector<double> samples;
  };
  Paired time_paired(const std::function<void()>& ours, ClassGemm& vendor) {
    const tuner::TimingOptions& t = config_.timing;
    for (int i = 0; i < t.warmup; ++i) {
      ours();
      vendor.run(nullptr);
    }
    std::vector<Event> marks;
    for (int i = 0; i < 4 * t.repeat; ++i) marks.emplace_back(rt_.context());
    for (int i = 0; i < t.repeat; ++i) {
      marks[4 * i].record(nullptr);
      vendor.run(nullptr);
      marks[4 * i + 1].record(nullptr);
      marks[4 * i + 2].record(nullptr);
      ours();
      marks[4 * i + 3].record(nullptr);
    }
    Paired p;
    std::vector<double> theirs;
    for (int i = 0; i < t.repeat; ++i) {
      theirs.push_back(elapsed_ms(marks[4 * i], marks[4 * i + 1]));
      p.samples.push_back(elapsed_ms(marks[4 * i + 2], marks[4 * i + 3]));
    }
    p.ms = tuner::median(p.samples);
    p.vendor_ms = tuner::median(theirs);
    return p;
  }

  void emit(const ordered_json& record) {
    const std::string line = record.dump();
    progress_.print(std::cout, line);
    if (json_out_) *json_out_ << line << std::endl;
  }

  void fail(const std::string& what, const std::string& message) {
    progress_.print(std::cerr, "bench: " + what + ": " + first_line(message));
    failed_ = true;
  }

  const SpammConfig& config_;
  std::ostream* json_out_;
  Progress progress_;  // before the runtime: its start up counts in the elapsed time
  Runtime rt_;
  bool failed_ = false;
};

}  // namespace

SpammConfig spamm_config(const std::string& sizes, const std::string& decays, const std::string& ratios,
                         const std::string& precisions, const std::string& paths, const std::string& operands,
                         const std::string& dtype, int32_t tile,
                         const tuner::TimingOptions& timing, const std::string& devices) {
  SpammConfig c;
  for (const std::string& item : items_of(sizes)) {
    const double n = number("--sizes", item);
    if (n < 64 || n > 65536 || n != std::floor(n)) throw InvalidInputError("bench: --sizes " + item + " must be an integer in [64, 65536]");
    c.sizes.push_back(int32_t(n));
  }
  for (const std::string& item : items_of(decays)) {
    if (item != "algebraic" && item != "exponential")
      throw InvalidInputError("bench: --decays '" + item + "' (expected algebraic or exponential)");
    c.decays.push_back(item);
  }
  for (const std::string& item : items_of(ratios)) {
    const double percent = number("--ratios", item);
    if (!(percent > 0 && percent <= 100)) throw InvalidInputError("bench: --ratios " + item + " must be a percentage in (0, 100]");
    c.ratios.push_back(percent / 100);
  }
  for (const std::string& item : items_of(precisions)) c.precisions.push_back(parse_spamm_precision(item));
  const std::vector<std::string> known = plan::spamm_variants();
  for (const std::string& item : items_of(paths)) {
    if (item != "auto" && std::find(known.begin(), known.end(), item) == known.end())
      throw InvalidInputError("bench: --paths '" + item + "' is neither auto nor a spamm variant");
    c.paths.push_back(item);
  }
  c.dtype = parse_dtype(dtype);
  if (c.dtype != DType::F32 && c.dtype != DType::F64) throw InvalidInputError("bench: --dtype '" + dtype + "' (expected f32 or f64)");
  for (const std::string& item : items_of(operands)) {
    if (item != "value" && item != "16bit") throw InvalidInputError("bench: --operands '" + item + "' (expected value or 16bit)");
    if (item == "16bit" && c.dtype != DType::F32)
      throw InvalidInputError("bench: --operands 16bit is for --dtype f32 (fp16/bf16 precisions), not " + dtype);
    c.operands.push_back(item);
  }
  SpammOptions check;
  check.tile = tile;
  plan::check_spamm_options(check, c.dtype);
  c.tile = tile;
  c.timing = timing;
  if (devices == "all") {
    c.devices = {-1};
  } else if (!devices.empty()) {  // unset: one GPU, no spread over devices
    for (const std::string& item : items_of(devices)) {
      const double d = number("--devices", item);
      if (d < 0 || d != std::floor(d) || d > 1024) throw InvalidInputError("bench: --devices " + item + " is not a GPU ordinal (or use all)");
      c.devices.push_back(int(d));
    }
  }
  return c;
}

bool run_spamm(const SpammConfig& config, std::ostream* json_out, ProgressStyle style) {
  return SpammBench(config, json_out, style).run();
}

}  // namespace sparsejit::cli::bench
