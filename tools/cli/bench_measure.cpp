// Timing one (matrix, K): auto, each forced candidate and the vendor, on rotated operand sets,
// SDDMM's pattern-reuse costs, and the --check of every result of ours against the CPU reference.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>

#include "cli/bench.hpp"
#include "cli/operand_fit.hpp"
#include "plan/planner.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/reference.hpp"
#include "variants/catalog.hpp"
#include "vendor/cusparse_sddmm.hpp"
#include "vendor/cusparse_spmm.hpp"

namespace sparsejit::cli::bench {

using nlohmann::ordered_json;

std::string ForcedCandidate::label() const { return params.empty() ? variant : variant + params.dump(); }

std::vector<ForcedCandidate> forced_candidates(Op op, bool with_vendor_variant) {
  std::vector<ForcedCandidate> candidates;
  for (const variants::VariantInfo& v : variants::catalog(op))
    if (with_vendor_variant || !v.traits.vendor) candidates.push_back({v.name, nlohmann::json::object()});
  return candidates;
}

namespace {

using Launch = std::function<void(int set, CUstream stream)>;

template <class T>
int64_t csr_bytes(const Csr<T>& a) { return a.nnz() * int64_t(4 + sizeof(T)) + (int64_t(a.rows) + 1) * 4; }
template <class T>
int64_t dense_bytes(const Dense<T>& d) { return int64_t(d.data.size() * sizeof(T)); }

// The op-specific half of a measurement: operand sets on the device (each set its own
// DeviceCsr, so every copy prepares its plan in the untimed first run), one runtime call, the
// vendor's algorithms and a checked run. The shared half is measure_op() below.
class OpBench {
 public:
  virtual ~OpBench() = default;
  virtual int sets() const = 0;
  // The op's own options every call of ours carries (SpMM: transpose_a), set on the options
  // that auto, the forced candidates and the checked runs all start from.
  virtual void configure(Options& options) const = 0;
  virtual CallInfo run(const Options& options, int set) = 0;
  virtual std::vector<std::string> vendor_algorithms() const = 0;
  // Whether the vendor's bare call computes the whole op, so that the oracle (the fastest
  // choice auto could make) may hold it. SDDMM's does not: cuSPARSE's sampled dots skip the
  // scaling by S's values, which the runtime's `cusparse` variant adds.
  virtual bool vendor_computes_the_op() const = 0;
  // The vendor's algorithm prepared on every set (cuSPARSE preprocess); UnsupportedError when
  // cuSPARSE rejects the combination.
  virtual Launch prepare_vendor(const std::string& algorithm, CUstream stream) = 0;
  // Poisons set 0's output with NaN, runs ours with `options`, and returns the relative error
  // of the result against the CPU reference (computed on the first check).
  virtual double checked_error(const Options& options) = 0;
  // Host wall-clock ms of the first call with `options` on a fresh copy of the sparse operand
  // (set 0's dense operands), between two context synchronizations: what a new matrix handle
  // pays once (features, plan, the variant's format built and uploaded, the call itself) with
  // the kernel already compiled and loaded by the earlier runs.
  virtual double first_call_ms(const Options& options) = 0;
};

template <class T>
class SpmmBench final : public OpBench {
 public:
  SpmmBench(Runtime& rt, const vendor::CusparseHandle& handle, const Csr<T>& a, int32_t k, bool transpose,
            uint64_t seed)
      : rt_(rt), handle_(handle), a_(a), transpose_(transpose), b_(transpose ? a.rows : a.cols, k) {
    generate::fill_random(b_, seed);
    Dense<T> c(transpose ? a.cols : a.rows, k);
    generate::fill_random(c, seed + 1);  // never time on zeros, even in an output
    const int count = tuner::operand_sets(csr_bytes(a) + dense_bytes(b_) + dense_bytes(c), rt.device().l2_bytes);
    for (int i = 0; i < count; ++i) sets_.push_back(std::make_unique<Set>(rt.context(), a, b_, c));
  }

  int sets() const override { return int(sets_.size()); }

  void configure(Options& options) const override { options.transpose_a = transpose_; }

  CallInfo run(const Options& options, int set) override {
    Set& s = *sets_[std::size_t(set)];
    return rt_.spmm(s.a, s.b, s.c, options);
  }

  std::vector<std::string> vendor_algorithms() const override {
    std::vector<std::string> names;
    for (const auto algorithm : kAlgorithms) names.push_back(vendor::to_string(algorithm));
    return names;
  }

  bool vendor_computes_the_op() const override { return true; }

  // CSR_ALG3 computes A·B only: cuSPARSE rejects it for Aᵀ·B, but only after printing its
  // own "** On entry to cusparseSpMM_bufferSize()" message, so it is skipped here, before
  // cuSPARSE is called, and recorded as unsupported.
  Launch prepare_vendor(const std::string& name, CUstream stream) override {
    vendor::SpmmAlgorithm algorithm = kAlgorithms[0];
    for (const auto candidate : kAlgorithms)
      if (name == vendor::to_string(candidate)) algorithm = candidate;
    if (transpose_ && algorithm == vendor::SpmmAlgorithm::CsrAlg3)
      throw UnsupportedError(std::string("cuSPARSE ") + vendor::to_string(algorithm) + " computes A·B only (not Aᵀ·B)");
    auto calls = std::make_shared<std::vector<std::unique_ptr<vendor::CusparseSpmm<T>>>>();
    for (auto& s : sets_)
      calls->push_back(std::make_unique<vendor::CusparseSpmm<T>>(handle_, s->a, transpose_, s->b, s->c, algorithm, stream));
    return [calls](int set, CUstream on) { (*calls)[std::size_t(set)]->run(on); };
  }

  double checked_error(const Options& options) override {
    Set& s = *sets_[0];
    s.c.buffer().fill_bytes(0xFF);
    rt_.spmm(s.a, s.b, s.c, options);
    rt_.context().synchronize();
    if (!expected_) {
      expected_.emplace();
      reference::spmm(a_, b_, *expected_, transpose_);
    }
    return reference::relative_error(s.c.download().data, expected_->data);
  }

  double first_call_ms(const Options& options) override {
    const DeviceCsr<T> fresh(rt_.context(), a_);
    Set& s = *sets_[0];
    return synchronized_ms(rt_.context(), [&] { rt_.spmm(fresh, s.b, s.c, options); });
  }

 private:
  static constexpr vendor::SpmmAlgorithm kAlgorithms[] = {vendor::SpmmAlgorithm::CsrAlg1, vendor::SpmmAlgorithm::CsrAlg2,
                                                          vendor::SpmmAlgorithm::CsrAlg3};
  struct Set {
    Set(const Context& context, const Csr<T>& a_host, const Dense<T>& b_host, const Dense<T>& c_host)
        : a(context, a_host), b(context, b_host), c(context, c_host) {}
    DeviceCsr<T> a;
    DeviceDense<T> b;
    DeviceDense<T> c;
  };

  Runtime& rt_;
  const vendor::CusparseHandle& handle_;
  const Csr<T>& a_;
  bool transpose_;
  Dense<T> b_;  // kept for the reference
  std::optional<Dense<T>> expected_;
  std::vector<std::unique_ptr<Set>> sets_;
};

template <class T>
class SddmmBench final : public OpBench {
 public:
  SddmmBench(Runtime& rt, const vendor::CusparseHandle& handle, const Csr<T>& s, int32_t k, uint64_t seed)
      : rt_(rt), handle_(handle), s_(s), a_(s.rows, k), b_(s.cols, k) {
    generate::fill_random(a_, seed);
    generate::fill_random(b_, seed + 1);
    const int64_t p_bytes = s.nnz() * int64_t(sizeof(T));
    const int count = tuner::operand_sets(csr_bytes(s) + dense_bytes(a_) + dense_bytes(b_) + p_bytes, rt.device().l2_bytes);
    std::vector<T> p_values(std::size_t(s.nnz()));
    generate::fill_random(p_values, seed + 2);  // never time on zeros, even in an output
    for (int i = 0; i < count; ++i) sets_.push_back(std::make_unique<Set>(rt.context(), s, a_, b_, p_values));
  }

  int sets() const override { return int(sets_.size()); }

  void configure(Options&) const override {}

  CallInfo run(const Options& options, int set) override {
    Set& s = *sets_[std::size_t(set)];
    return rt_.sddmm(s.s, s.a, s.b, s.p, options);
  }

  std::vector<std::string> vendor_algorithms() const override { return {"sddmm_alg_default"}; }

  bool vendor_computes_the_op() const override { return false; }

  Launch prepare_vendor(const std::string&, CUstream stream) override {
    auto calls = std::make_shared<std::vector<std::unique_ptr<vendor::CusparseSampledDots<T>>>>();
    for (auto& s : sets_)
      calls->push_back(std::make_unique<vendor::CusparseSampledDots<T>>(handle_, s->s, s->a, s->b, s->p, stream));
    return [calls](int set, CUstream on) { (*calls)[std::size_t(set)]->run(on); };
  }

  // The first call with `timed` on a fresh copy of S (with set 0's A, B and P), in host
  // wall-clock ms between two context synchronizations: nothing `timed` builds from the pattern
  // is cached on that handle yet, so the call builds and uploads it. The copy serves one
  // untimed call with `warm` first, so what every first call on a pattern pays whatever the
  // variant (features, the planner's tile counts) is not counted.
  double fresh_first_call_ms(const Options& warm, const Options& timed) {
    const DeviceCsr<T> fresh(rt_.context(), s_);
    Set& s = *sets_[0];
    rt_.sddmm(fresh, s.a, s.b, s.p, warm);
    return synchronized_ms(rt_.context(), [&] { rt_.sddmm(fresh, s.a, s.b, s.p, timed); });
  }

  double first_call_ms(const Options& options) override {
    const DeviceCsr<T> fresh(rt_.context(), s_);
    Set& s = *sets_[0];
    return synchronized_ms(rt_.context(), [&] { rt_.sddmm(fresh, s.a, s.b, s.p, options); });
  }

  double checked_error(const Options& options) override {
    Set& s = *sets_[0];
    s.p.fill_bytes(0xFF);
    rt_.sddmm(s.s, s.a, s.b, s.p, options);
    rt_.context().synchronize();
    if (!expected_) {
      expected_.emplace();
      reference::sddmm(s_, a_, b_, *expected_);
    }
    return reference::relative_error(s.p.template download_as<T>(std::size_t(s_.nnz())), expected_->values);
  }

 private:
  struct Set {
    // P gets at least one element so an empty pattern still has a buffer to pass.
    Set(const Context& context, const Csr<T>& s_host, const Dense<T>& a_host, const Dense<T>& b_host,
        const std::vector<T>& p_values)
        : s(context, s_host), a(context, a_host), b(context, b_host),
          p(context, std::max<std::size_t>(1, p_values.size()) * sizeof(T)) {
      p.upload(p_values);
    }
    DeviceCsr<T> s;
    DeviceDense<T> a;
    DeviceDense<T> b;
    DeviceBuffer p;
  };

  Runtime& rt_;
  const vendor::CusparseHandle& handle_;
  const Csr<T>& s_;
  Dense<T> a_, b_;  // kept for the reference
  std::optional<Csr<T>> expected_;
  std::vector<std::unique_ptr<Set>> sets_;
};

// A ratio, or null when either side is missing or zero (JSON has no infinity).
ordered_json ratio(double numerator, double denominator) {
  const double r = numerator / denominator;
  return std::isfinite(r) && r > 0 ? ordered_json(r) : ordered_json(nullptr);
}

class Measurement {
 public:
  Measurement(Runtime& rt, OpBench& bench, const Config& config)
      : rt_(rt), bench_(bench), config_(config), stream_(rt.context()) {}

  CUstream stream() const { return stream_.handle(); }

  // One untimed run on every operand set first (plan preparation, kernel loads and
  // UnsupportedError surface there), then the median of the timed runs.
  double time(const Launch& launch) {
    for (int set = 0; set < bench_.sets(); ++set) launch(set, stream_.handle());
    return tuner::time_on_stream(rt_.context(), stream_.handle(), bench_.sets(), config_.timing, launch).median_ms;
  }

  // Our runtime with fixed options (the stream already in them, so a timed launch copies nothing).
  Launch ours(const Options& options) {
    return [this, &options](int set, CUstream) { bench_.run(options, set); };
  }

 private:
  Runtime& rt_;
  OpBench& bench_;
  const Config& config_;
  Stream stream_;
};

// What --check runs: a label and the options of one call of ours.
using Checks = std::vector<std::pair<std::string, Options>>;

// Host wall-clock ms of one call with `timed` on a fresh copy of the sparse operand that has
// served one untimed call with `warm` (SddmmBench::fresh_first_call_ms).
using FirstCall = std::function<double(const Options& warm, const Options& timed)>;

// The record's "reuse" (SDDMM): auto with Reuse::Many; reuse_variant() forced with Reuse::Many,
// its steady state (the time in "variants" when --variants all took it: the same plan, the
// handles having served calls) and its first call on a fresh handle; all set against the best
// choice without reuse (best_without_reuse). Both runs join `to_check`.
ordered_json measure_reuse(Measurement& m, OpBench& bench, const Options& auto_options, const ordered_json& record,
                           const FirstCall& first_call, Checks& to_check, std::vector<std::string>& failures) {
  ReuseTimes times;
  Options auto_reuse = auto_options;
  auto_reuse.reuse = Reuse::Many;
  times.auto_reuse_variant = bench.run(auto_reuse, 0).decision->variant;
  times.auto_reuse_ms = m.time(m.ours(auto_reuse));
  to_check.emplace_back("auto reuse=many", auto_reuse);

  Options reindexed = auto_reuse;
  reindexed.variant = reuse_variant();
  const ordered_json timed = record.at("variants").value(reuse_variant(), ordered_json());
  if (timed == "failed") return reuse_record(times, best_without_reuse(record));  // already reported
  try {
    // One call on set 0's handle first: the kernel is compiled (NVRTC) and loaded there, if
    // the forced run in "variants" had not done it yet, so the fresh handle's first call below
    // finds it loaded and pays only for the pattern's reindexing (built on the host, uploaded).
    bench.run(reindexed, 0);
    times.reindexed_ms = timed.is_number() ? timed.get<double>() : m.time(m.ours(reindexed));
    times.first_call_ms = first_call(auto_options, reindexed);
    to_check.emplace_back(reuse_variant() + " reuse=many", reindexed);
  } catch (const UnsupportedError&) {
    // Not for this problem (e.g. too many K slices): no reindexed times, the rest is reported.
  } catch (const Error& e) {
    failures.push_back("reuse " + reuse_variant() + ": " + e.what());
  }
  return reuse_record(times, best_without_reuse(record));
}

// `first_call` empty: no "reuse" record (SpMM, or --no-reuse).
ordered_json measure_op(Runtime& rt, OpBench& bench, const Config& config, int64_t nnz, int32_t k, double tol,
                        std::vector<std::string>& failures, const FirstCall& first_call) {
  Measurement m(rt, bench, config);
  const auto gflops = [&](double ms) { return 2.0 * double(nnz) * double(k) / (ms * 1e6); };
  ordered_json record;
  record["sets"] = bench.sets();

  Options auto_options;
  bench.configure(auto_options);
  auto_options.measure_skip_margin = config.measure.measure_skip_margin;
  auto_options.measure_budget_ms = config.measure.measure_budget_ms;
  auto_options.measure_budget_calls = config.measure.measure_budget_calls;
  auto_options.stream = m.stream();
  bench.run(auto_options, 0);
  // Each handle's second call (in the untimed round of time()) is where auto may time its
  // shortlist (SpMM's measured selection): what is timed is the plan it settled on.
  const double auto_ms = m.time(m.ours(auto_options));
  const CallInfo chosen = bench.run(auto_options, 0);
  const Decision& decision = *chosen.decision;
  // The tree's steps as explain prints them (each with the feature's value), so a result can be
  // set against the feature the planner split on (python -m sparsejit.plot).
  record["auto"] = {{"ms", auto_ms}, {"variant", decision.variant}, {"params", ordered_json(decision.params)},
                    {"source", to_string(decision.source)}, {"gflops", gflops(auto_ms)},
                    {"path", ordered_json(to_json(decision).at("path"))}};
  // Names the pattern as tuning records do: `tune --from-records --held-out` lists fingerprints.
  record["fingerprint"] = decision.features.value("fingerprint", std::string());
  Checks to_check = {{"auto", auto_options}};
  // Recorded: the same times, taken from the cache database without timing (measure_ms 0).
  if (decision.source == DecisionSource::Measured || decision.source == DecisionSource::Recorded) {
    if (decision.source == DecisionSource::Measured) {  // a recorded choice cost no timing here
      record["auto"]["measure_ms"] = decision.measure_ms;
      record["auto"]["measure_calls"] = ratio(decision.measure_ms, auto_ms);
      record["auto"]["measure_steps"] = ordered_json(to_json(decision).at("measure_steps"));
    }
    ordered_json timed = ordered_json::array();  // what the selection measured, in its order
    for (const Candidate& c : decision.candidates)
      if (c.measured_ms >= 0) timed.push_back({{"variant", c.variant}, {"params", ordered_json(c.params)}, {"ms", c.measured_ms}});
    record["auto"]["timed"] = timed;
    Options model_options = auto_options;
    model_options.measure = false;
    const double model_ms = m.time(m.ours(model_options));
    record["model"] = {{"ms", model_ms}, {"variant", bench.run(model_options, 0).decision->variant}};
    to_check.emplace_back("auto without measuring", model_options);
  }
  // The same plan launched in plain stream order: what early launch (Options::early_launch) gains.
  Options plain_options = auto_options;
  plain_options.early_launch = false;
  const double plain_ms = m.time(m.ours(plain_options));
  // A fresh handle of a pattern this runtime has measured takes the fastest without timing.
  const double first_ms = bench.first_call_ms(auto_options);
  record["first_call"] = {{"ms", first_ms}, {"calls", ratio(first_ms, auto_ms)}};

  // Forced candidates: the record's "variants" and, with the vendor's algorithms where they
  // compute the op, the oracle.
  ordered_json variants = ordered_json::object();
  Fastest oracle;
  if (config.all_variants) {
    // The vendor-backed variant too: what the runtime runs when it picks cuSPARSE is not always
    // the vendor's bare call timed below (SDDMM's adds a kernel scaling P by S's values), and the
    // oracle and a cost fit must see the time a pick really costs.
    for (const ForcedCandidate& candidate : forced_candidates(config.op, true)) {
      Options forced = auto_options;
      forced.variant = candidate.variant;
      forced.params = candidate.params;
      const std::string label = candidate.label();
      try {
        const double ms = m.time(m.ours(forced));
        variants[label] = ms;
        oracle.offer(label, ms);
        to_check.emplace_back(label, forced);
      } catch (const UnsupportedError&) {
        variants[label] = "unsupported";
      } catch (const Error& e) {
        variants[label] = "failed";
        failures.push_back("variant " + label + ": " + e.what());
      }
    }
  }
  record["variants"] = variants;

  ordered_json vendor = ordered_json::object();
  Fastest vendor_best;
  for (const std::string& algorithm : bench.vendor_algorithms()) {
    try {
      const double ms = m.time(bench.prepare_vendor(algorithm, m.stream()));
      vendor[algorithm] = ms;
      vendor_best.offer(algorithm, ms);
      if (config.all_variants && bench.vendor_computes_the_op()) oracle.offer("cusparse:" + algorithm, ms);
    } catch (const UnsupportedError&) {
      vendor[algorithm] = "unsupported";
    } catch (const Error& e) {
      vendor[algorithm] = "failed";
      failures.push_back("vendor " + algorithm + ": " + e.what());
    }
  }
  vendor["best"] = vendor_best.found() ? ordered_json(vendor_best.ms) : ordered_json(nullptr);
  vendor["best_alg"] = vendor_best.found() ? ordered_json(vendor_best.name) : ordered_json(nullptr);
  record["vendor"] = vendor;
  record["speedup"] = ratio(vendor_best.ms, auto_ms);
  record["plain_launch"] = {{"ms", plain_ms}, {"speedup", ratio(vendor_best.ms, plain_ms)}};
  if (record.contains("model")) record["model"]["speedup"] = ratio(vendor_best.ms, record["model"]["ms"].get<double>());
  record["oracle"] = oracle.found() ? ordered_json{{"ms", oracle.ms}, {"variant", oracle.name}} : ordered_json(nullptr);
  record["auto_over_oracle"] = oracle.found() ? ratio(auto_ms, oracle.ms) : ordered_json(nullptr);
  if (first_call) record["reuse"] = measure_reuse(m, bench, auto_options, record, first_call, to_check, failures);

  record["check"] = nullptr;
  if (config.check) {
    bool ok = true;
    double worst = 0;
    std::string worst_label = "auto";
    for (const auto& [label, options] : to_check) {
      const double error = bench.checked_error(options);
      if (!(error < tol)) {
        ok = false;
        failures.push_back("check of " + label + ": relative error " + std::to_string(error) + " over " + std::to_string(tol));
      }
      if (error > worst) {
        worst = error;
        worst_label = label;
      }
    }
    // A non-finite error (a NaN left in the output) is written as null.
    record["check"] = {{"ok", ok}, {"rel_error", std::isfinite(worst) ? ordered_json(worst) : ordered_json(nullptr)},
                       {"worst", worst_label}, {"tolerance", tol}};
  }
  return record;
}

}  // namespace

template <class T>
ordered_json measure(Runtime& rt, const vendor::CusparseHandle& handle, const Csr<T>& a, int32_t k, const Config& config,
                     std::vector<std::string>& failures) {
  // The dense operands are built on the host before anything runs: refuse what the GPU
  // cannot hold first (operand_sets may add copies; they are sized to the L2, not to this).
  const int64_t sparse = (int64_t(a.rows) + 1) * 4 + a.nnz() * int64_t(4 + sizeof(T));
  if (config.op == Op::SpMM)
    check_operands_fit(rt.device(), "spmm", k, dtype_of<T>::value,
                       {{"B", config.transpose ? a.rows : a.cols}, {"C", config.transpose ? a.cols : a.rows}}, sparse);
  else
    check_operands_fit(rt.device(), "sddmm", k, dtype_of<T>::value, {{"A", a.rows}, {"B", a.cols}}, sparse);
  if (config.op == Op::SpMM) {
    SpmmBench<T> bench(rt, handle, a, k, config.transpose, config.seed + 101);
    return measure_op(rt, bench, config, a.nnz(), k, reference::check_tolerance<T>(), failures, FirstCall());
  }
  SddmmBench<T> bench(rt, handle, a, k, config.seed + 101);
  FirstCall first_call;
  if (config.reuse)
    first_call = [&bench](const Options& warm, const Options& timed) { return bench.fresh_first_call_ms(warm, timed); };
  return measure_op(rt, bench, config, a.nnz(), k, reference::check_tolerance<T>(), failures, first_call);
}

template ordered_json measure<float>(Runtime&, const vendor::CusparseHandle&, const Csr<float>&, int32_t, const Config&,
                                     std::vector<std::string>&);
template ordered_json measure<double>(Runtime&, const vendor::CusparseHandle&, const Csr<double>&, int32_t, const Config&,
                                      std::vector<std::string>&);

}  // namespace sparsejit::cli::bench
