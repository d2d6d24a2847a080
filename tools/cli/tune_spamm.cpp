#include "cli/tune_spamm.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/one_line.hpp"
#include "cli/progress.hpp"
#include "cli/spamm_baseline.hpp"
#include "cli/spamm_input.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "plan/spamm.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "tuner/measure.hpp"
#include "tuner/spamm_fit.hpp"
#include "tuner/tune.hpp"
#include "variants/spamm/spamm_variant.hpp"

namespace sparsejit::cli {

namespace {

// Sizes where the crossovers of the H100 runs lie apart (fp16: ~5% at 4096, ~21% at 8192)
// and a run takes about a minute; shares spanning the crossovers seen (5-25%) and the bench's.
const std::vector<int32_t> kDefaultSizes = {4096, 8192};
const std::vector<double> kDefaultShares = {0.01, 0.05, 0.10, 0.25, 0.50};
constexpr int32_t kLargestSize = 65536;  // spamm_matrix's

// What the precision's rounding may add to the bound, relative to ||A·B|| (the device suites'
// check of `bench --op spamm`).
double rounding(SpammPrecision p) { return p == SpammPrecision::Full ? 1e-4 : 1e-2; }

std::string format(const char* f, double x) {
  char text[48];
  std::snprintf(text, sizeof text, f, x);
  return text;
}

std::string percent(double share) { return format("%.3g%%", 100 * share); }

// Device ms per call: events around each (the call reads its selection back, so a graph
// could not hold it); 2 warm-up and 10 timed calls, as the bench's recorded runs.
double time_calls(Runtime& rt, const std::function<void()>& call) {
  const tuner::TimingOptions events{2, 10, tuner::Clock::Events, 1};
  return tuner::time_on_stream(rt.context(), nullptr, 1, events, [&](int, CUstream) { call(); }).median_ms;
}

// One N×N input: A and B as separate f32 buffers with the same values, C, and the exact
// product (DGEMM on f64 copies) the checks compare with.
class Input {
 public:
  Input(Runtime& rt, int32_t n)
      : host_(spamm_matrix("algebraic:" + std::to_string(n))), a_(rt.context(), cast<float>(host_)), b_(rt.context(), cast<float>(host_)),
        c_(rt.context(), n, n) {
    ClassGemm exact(rt.context(), host_, host_, DType::F64, SpammPrecision::Full);
    exact.run(nullptr);
    exact_ = exact.result();
    for (double v : exact_) exact_norm_ += v * v;
    exact_norm_ = std::sqrt(exact_norm_);
  }
  const Dense<double>& host() const { return host_; }
  SpammInfo call(Runtime& rt, const SpammOptions& o) { return rt.spamm(a_, b_, c_, o); }
  void poison() { c_.buffer().fill_bytes(0xFF); }  // NaN: an element no kernel writes cannot pass
  // ||C - A·B||F of the last call.
  double distance() const {
    const Dense<float> got = c_.download();
    double s = 0;
    for (std::size_t i = 0; i < exact_.size(); ++i) s += (double(got.data[i]) - exact_[i]) * (double(got.data[i]) - exact_[i]);
    return std::sqrt(s);
  }
  double exact_norm() const { return exact_norm_; }

 private:
  Dense<double> host_;
  DeviceDense<float> a_, b_, c_;
  std::vector<double> exact_;
  double exact_norm_ = 0;
};

plan::SpammProblem problem_of(int32_t n, SpammPrecision precision) {
  plan::SpammProblem p;
  p.precision = precision;
  p.m = p.k = p.n = n;
  p.lda = p.ldb = p.ldc = n;
  p.tile = plan::spamm_tile(n, n, n, SpammOptions{});
  return p;
}

const variants::SpammVariant& vendor_variant() {
  for (const variants::SpammVariant* v : variants::SpammRegistry::all())
    if (v->traits.vendor) return *v;
  throw UnsupportedError("tune spamm: no vendor variant is registered");
}

// The registered variants other than the vendor's that compute the problem.
std::vector<std::string> tile_variants(const plan::SpammProblem& problem, const plan::DeviceTarget& target, const nlohmann::json& model) {
  const plan::SpammFeatures features;
  const variants::SpammPlanInputs in{features, problem, target, model};
  std::vector<std::string> names;
  for (const variants::SpammVariant* v : variants::SpammRegistry::all())
    if (!v->traits.vendor && v->rejected(in).empty()) names.push_back(v->name);
  return names;
}

const nlohmann::json& terms_of(const Decision& d, const std::string& variant) {
  for (const Candidate& c : d.candidates)
    if (c.variant == variant && c.rejected_because.empty()) return c.terms;
  throw UnsupportedError("tune spamm: the decision priced no " + variant + " candidate");
}

// What one precision and size measures.
struct CaseRun {
  Runtime& rt;
  Input& input;
  SpammPrecision precision;
  int32_t n;
  std::vector<std::string> variants;  // the tile variants, the first searches τ
  std::string vendor_name;            // "cuBLAS HGEMM (f32 accumulation)"
  tuner::SpammCaseTimes times;
};

SpammOptions at_tau(const CaseRun& r, double tau, const std::string& variant) {
  SpammOptions o;
  o.precision = r.precision;
  o.tau = tau;
  o.variant = variant;
  return o;
}

// The variant's call at τ, checked against the exact product and timed; nullopt (the reason
// in `failure`) when it fails the check or cannot run. A CUDA error ends the run. The call's
// Decision also prices the vendor's GEMM: r.times.vendor_terms.
std::optional<tuner::SpammTileTime> tile_time(CaseRun& r, double tau, const std::string& variant, std::string& failure) {
  const SpammOptions o = at_tau(r, tau, variant);
  try {
    r.input.poison();
    const SpammInfo info = r.input.call(r.rt, o);
    const double distance = r.input.distance(), allowed = info.error_bound + rounding(r.precision) * r.input.exact_norm();
    if (!(distance <= allowed)) {
      failure = variant + ": ||C - A·B|| = " + format("%.3g", distance) + " exceeds the bound plus rounding " + format("%.3g", allowed);
      return std::nullopt;
    }
    r.times.vendor_terms = terms_of(*info.decision, r.times.vendor);
    const double ms = time_calls(r.rt, [&] { r.input.call(r.rt, o); });
    return tuner::SpammTileTime{variant, terms_of(*info.decision, variant), ms};
  } catch (const CudaError&) {
    throw;
  } catch (const Error& e) {
    failure = variant + ": " + e.what();
    return std::nullopt;
  }
}

// One share: τ searched by the first tile variant, every tile variant at that τ.
std::string measure_share(CaseRun& r, double share) {
  SpammOptions search;
  search.precision = r.precision;
  search.valid_ratio = share;
  search.variant = r.variants.front();
  const SpammInfo found = r.input.call(r.rt, search);
  tuner::SpammShareTimes at;
  at.share = found.valid_ratio;
  at.front = variants::front_terms(problem_of(r.n, r.precision), 1);
  std::string line = std::string(to_string(r.precision)) + " N=" + std::to_string(r.n) + " share " + percent(found.valid_ratio) + " (tau " +
                     format("%.4g", found.tau) + "):";
  for (const std::string& variant : r.variants) {
    std::string failure;
    if (const auto t = tile_time(r, found.tau, variant, failure)) {
      at.tiles.push_back(*t);
      line += " " + variant + " " + format("%.4g", t->ms) + " ms";
    } else {
      line += " " + variant + " left out (" + first_line(failure) + ")";
    }
  }
  if (!at.tiles.empty()) r.times.shares.push_back(std::move(at));
  return line + "; " + r.vendor_name + " " + format("%.4g", r.times.vendor_ms) + " ms";
}

double item_weight(int32_t n) { return double(n) * double(n) * double(n); }  // a share's time grows with N³

class SpammTune {
 public:
  SpammTune(const SpammTuneConfig& config, Runtime& rt)
      : config_(config), rt_(rt), target_(detail::target_of(rt.device())), base_(ops::planner_model(Op::SpAMM, target_)),
        progress_(items(), weight(), progress_style(config.quiet), std::cerr) {}

  std::vector<tuner::SpammCaseTimes> measure() {
    for (int32_t n : config_.sizes) {
      Input input(rt_, n);
      for (SpammPrecision p : config_.precisions) measure_case(input, p, n);
    }
    return cases_;
  }
  const std::vector<std::string>& vendor_names() const { return vendor_names_; }
  const nlohmann::json& base() const { return *base_; }
  const plan::DeviceTarget& target() const { return target_; }

 private:
  int64_t items() const { return int64_t(config_.sizes.size() * config_.precisions.size() * config_.shares.size()); }
  double weight() const {
    double w = 0;
    for (int32_t n : config_.sizes) w += item_weight(n) * double(config_.precisions.size() * config_.shares.size());
    return w;
  }

  void measure_case(Input& input, SpammPrecision p, int32_t n) {
    ClassGemm gemm(rt_.context(), input.host(), input.host(), DType::F32, p);
    CaseRun r{rt_, input, p, n, tile_variants(problem_of(n, p), target_, *base_), gemm.name(), {}};
    if (r.variants.empty()) throw UnsupportedError(std::string("tune --op spamm: no tile variant computes precision ") + to_string(p));
    r.times.precision = p;
    r.times.n = n;
    r.times.vendor = vendor_variant().name;
    r.times.vendor_ms = time_calls(rt_, [&] { gemm.run(nullptr); });
    for (double share : config_.shares) {
      progress_.print(std::cout, measure_share(r, share));
      progress_.finished(std::string(to_string(p)) + " N=" + std::to_string(n) + " " + percent(share), item_weight(n));
    }
    if (r.times.shares.empty()) {
      progress_.print(std::cout, std::string(to_string(p)) + " N=" + std::to_string(n) + ": no tile call passed its check; left out");
      return;
    }
    cases_.push_back(std::move(r.times));
    vendor_names_.push_back(r.vendor_name);
  }

  const SpammTuneConfig& config_;
  Runtime& rt_;
  plan::DeviceTarget target_;
  std::shared_ptr<const nlohmann::json> base_;
  Progress progress_;
  std::vector<tuner::SpammCaseTimes> cases_;
  std::vector<std::string> vendor_names_;  // per case
};

// "mma c_tiles = 8.1e-06 ms", "mma mma_f16_flops = 4.6e-12 ms (217 TFLOP/s)"
void print_fitted(const tuner::SpammFit& fit) {
  for (const std::string& name : fit.fitted) {
    const std::string variant = name.substr(0, name.find(' ')), term = name.substr(name.find(' ') + 1);
    const double c = fit.cost[variant][term].get<double>();
    const bool rate = term.size() > 6 && term.compare(term.size() - 6, 6, "_flops") == 0;
    std::cout << "  " << name << " = " << format("%.3g", c) << " ms" << (rate && c > 0 ? " (" + format("%.0f", 1e-9 / c) + " TFLOP/s)" : "")
              << "\n";
  }
  for (const std::string& note : fit.notes) std::cout << "  " << note << "\n";
}

void print_crossovers(const tuner::SpammFit& fit, const std::vector<tuner::SpammCaseTimes>& cases, const std::vector<std::string>& vendors) {
  for (std::size_t i = 0; i < fit.crossovers.size(); ++i) {
    const tuner::SpammCrossover& x = fit.crossovers[i];
    std::string fastest;
    for (const std::string& v : x.fastest) fastest += (fastest.empty() ? "" : "/") + v;
    std::cout << "crossover " << to_string(x.precision) << " N=" << x.n << ": measured " << to_string(x.measured) << ", model "
              << to_string(x.modelled) << " (" << fastest << " at a given tau against " << vendors[i] << " "
              << format("%.4g", cases[i].vendor_ms) << " ms)\n";
  }
}

}  // namespace

SpammTuneConfig spamm_tune_config(std::vector<int32_t> sizes, const std::vector<std::string>& precisions, std::vector<double> shares) {
  SpammTuneConfig c;
  for (int32_t n : sizes)
    if (n < 1 || n > kLargestSize)
      throw InvalidInputError("tune --op spamm: --sizes " + std::to_string(n) + " must be in [1, " + std::to_string(kLargestSize) + "]");
  for (double s : shares)
    if (!(s > 0 && s <= 1)) throw InvalidInputError("tune --op spamm: --shares " + format("%g", s) + " must be in (0, 1]");
  for (const std::string& p : precisions) c.precisions.push_back(parse_spamm_precision(p));
  if (c.precisions.empty())
    c.precisions = {SpammPrecision::Full, SpammPrecision::TF32, SpammPrecision::FP16, SpammPrecision::BF16};
  c.sizes = sizes.empty() ? kDefaultSizes : sizes;
  c.shares = shares.empty() ? kDefaultShares : shares;
  std::sort(c.shares.begin(), c.shares.end());
  return c;
}

void run_spamm_tune(const SpammTuneConfig& config, cache::CacheStore& store) {
  Runtime rt(0);
  std::cout << "tuning spamm on " << to_string(rt.device()) << "\n" << std::flush;
  SpammTune tune(config, rt);
  const std::vector<tuner::SpammCaseTimes> cases = tune.measure();
  if (cases.empty()) throw UnsupportedError("tune --op spamm: no tile call passed its check; nothing to fit");
  const tuner::SpammFit fit = tuner::fit_spamm(cases, tune.base().at("cost"));
  const nlohmann::json model = tuner::tuned_spamm_model(tune.base(), fit, cases, tune.target().name);
  const cache::DeviceKey key = ops::device_key(tune.target());
  store.put_model({plan::tuned_model_name(Op::SpAMM), 1, key, model, 0});
  ops::forget_tuned_lookups();
  std::cout << "fitted from " << tune.base().value("id", std::string("?")) << ":\n";
  print_fitted(fit);
  print_crossovers(fit, cases, tune.vendor_names());
  std::cout << "tuned model " << model["id"].get<std::string>() << " stored in " << store.path() << "\n";
  if (config.write_models_dir) std::cout << "wrote " << tuner::write_model_file(*config.write_models_dir, Op::SpAMM, model) << "\n";
}

}  // namespace sparsejit::cli
