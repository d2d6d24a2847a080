#include "tuner/tune.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iomanip>
#include <limits>
#include <map>
#include <sstream>

#include "formats/sddmm_dense_tiles.hpp"
#include "ops/runtime_state.hpp"
#include "plan/choose.hpp"
#include "plan/spmm_params.hpp"
#include "ops/plan_sources.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/io.hpp"
#include "sparsejit/reference.hpp"
#include "tuner/measure.hpp"
#include "tuner/search_space.hpp"
#include "tuner/training_set.hpp"

namespace sparsejit::tuner {

namespace {

// A matrix of the training set, loaded when its turn comes (the whole set need not fit in memory).
struct MatrixSource {
  std::string name;
  std::function<Csr<double>()> load;
  bool file = false;  // from --matrices: subject to kMaxFileNnz (the generated set is sized already)
};

std::vector<MatrixSource> training_sources(const TuneOptions& o) {
  std::vector<MatrixSource> sources;
  for (auto& m : generated_training_matrices(o.quick, o.seed)) {
    auto shared = std::make_shared<Csr<double>>(std::move(m.matrix));
    sources.push_back({m.name, [shared] { return *shared; }});
  }
  if (o.op == Op::SpMM && !o.quick) {
    sources.push_back({"calibration dense 4096x4096", [s = o.seed] { return dense_csr(kCalibrationSize, s); }});
    sources.push_back({"calibration " + std::to_string(kCalibrationSegment) + " per panel 4096x4096",
                       [s = o.seed] { return panel_calibration_matrix(kCalibrationSize, kCalibrationPanel, kCalibrationSegment, s); }});
  }
  if (o.matrices_dir)
    for (const auto& file : matrix_files(*o.matrices_dir))
      sources.push_back({matrix_file_name(file, *o.matrices_dir), [file] { return io::read_csr<double>(file); }, true});
  return sources;
}

std::string describe_params(const nlohmann::json& params) {
  std::string out;
  for (const auto& [key, value] : params.items()) out += " " + key + "=" + value.dump();
  return out;
}

// What one case shares with all its candidates.
struct Case {
  std::string id;      // "<fingerprint> k<K> <dtype>"
  std::string matrix;
  std::string bucket;
  int32_t k = 0;
  DType dtype = DType::F32;
  Decision plan;       // the planner's automatic decision: features and predicted costs
  PatternView pattern;
};

// One checked run: its relative error against the reference and the call's report.
struct CheckedRun {
  double error = 0;
  CallInfo call;
};

// How to run one candidate of a case: once against the reference, and timed on a set; and
// how the planner plans it on the CPU (for records reused from an earlier run).
struct CaseRunner {
  int sets = 1;
  std::function<CheckedRun(const Options&)> checked_run;
  std::function<void(int set, CUstream stream, const Options&)> launch;
  std::function<Decision(const Options&)> plan;
};

// The cost terms a plan priced its chosen (forced) variant with; empty when it has none.
nlohmann::json chosen_terms(const Decision& d) {
  const Candidate* chosen = plan::chosen_candidate(d);
  return chosen ? chosen->terms : nlohmann::json::object();
}

struct Counters {
  int measured = 0, reused = 0, failed = 0;
};

Measurement base_measurement(const Case& c, const SearchCandidate& candidate) {
  Measurement m;
  m.case_id = c.id;
  m.matrix = c.matrix;
  m.k = c.k;
  m.dtype = c.dtype;
  m.features = c.plan.features;
  m.variant = candidate.variant;
  m.params = candidate.params;
  for (const auto& p : c.plan.candidates)
    if (p.variant == candidate.variant && p.rejected_because.empty()) m.predicted_ms = p.predicted_ms;
  using namespace plan::spmm_param;
  if (candidate.params.contains(kPanelWidth) && candidate.params.contains(kThreshold)) {
    const SplitStats split =
        row_segment_split(c.pattern, candidate.params[kPanelWidth].get<int32_t>(), candidate.params[kThreshold].get<int32_t>());
    m.heavy_segments = split.heavy_segments;
    m.heavy_nnz = split.heavy_nnz;
  }
  return m;
}

cache::TuningRecord to_record(const cache::DeviceKey& key, const Case& c, const Measurement& m, const std::string& error) {
  cache::TuningRecord r;
  r.device = key;
  r.op = to_string(c.plan.op);
  r.feature_bucket = c.bucket;
  r.variant = m.variant;
  r.params = m.params;
  r.params[plan::kMeasuredOn] = {{"case", c.id}, {"matrix", c.matrix}, {"k", c.k}};
  if (!error.empty()) r.params[plan::kMeasuredOn]["error"] = error;
  r.time_ms = m.ok ? m.time_ms : 0.0;
  r.checked = m.ok;
  // What `tune --from-records` trains on without the matrix: the features and the measurement
  // with its cost terms.
  r.fingerprint = c.plan.features.value("fingerprint", std::string());
  r.features = c.plan.features;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.timings.push_back(plan::to_json(plan::RecordedTiming{m.variant, m.params, m.ok ? m.time_ms : HUGE_VAL,
                                                         m.predicted_ms > 0 ? m.predicted_ms : nan, m.terms}));
  return r;
}

// Measures (or reuses) every candidate of one case; returns its measurements.
std::vector<Measurement> run_case(Runtime& rt, cache::CacheStore& store, const cache::DeviceKey& key, const Case& c,
                                  const std::vector<SearchCandidate>& space, const CaseRunner& runner,
                                  const TuneOptions& options, Stream& stream, Counters& counters) {
  std::map<std::string, plan::CaseTime> done;
  if (!options.restart)
    for (auto& t : plan::case_times(store.find_tuning_records(key, to_string(c.plan.op), c.bucket)))
      if (t.case_id == c.id) done[t.variant + "\n" + t.params.dump()] = t;
  // The device time of a call, as `sparsejit bench` measures it; 10 replays of 4 calls: the
  // tuner times every candidate of every case, so it takes fewer samples than the bench.
  TimingOptions timing{5, 10, Clock::Graph, 4};
  if (options.quick) timing = {2, 5, Clock::Graph, 2};
  // Every operand set runs once untimed: a vendor call prepares itself per operand set.
  timing.warmup = std::max(timing.warmup, runner.sets);
  std::vector<Measurement> out;
  for (const auto& candidate : space) {
    Measurement m = base_measurement(c, candidate);
    const auto previous = done.find(candidate.variant + "\n" + candidate.params.dump());
    Options run;
    run.variant = candidate.variant;
    run.params = candidate.params;
    run.reuse = reuse_for(c.plan.op, candidate.variant);
    run.stream = stream.handle();
    if (previous != done.end()) {
      m.ok = previous->second.ok;
      m.time_ms = previous->second.time_ms;
      if (m.ok) m.terms = chosen_terms(runner.plan(run));
      ++counters.reused;
      out.push_back(m);
      continue;
    }
    std::string error;
    try {
      const CheckedRun checked = runner.checked_run(run);
      m.terms = chosen_terms(*checked.call.decision);
      if (!(checked.error <= (c.dtype == DType::F64 ? reference::check_tolerance<double>() : reference::check_tolerance<float>()))) {
        std::ostringstream s;
        s << "output differs from the CPU reference: relative error " << checked.error;
        error = s.str();
      } else {
        const Timing t = time_on_stream(rt.context(), stream.handle(), runner.sets, timing,
                                        [&](int set, CUstream st) { runner.launch(set, st, run); });
        m.time_ms = t.median_ms;
        m.ok = true;
      }
    } catch (const CudaError& e) {
      rt.context().synchronize();  // throws again when the context itself is broken: the run ends
      error = e.what();
    } catch (const Error& e) {
      error = e.what();
    }
    if (!m.ok) ++counters.failed;
    ++counters.measured;
    store.insert_tuning_record(to_record(key, c, m, error));
    out.push_back(m);
  }
  return out;
}

template <class T>
std::vector<Measurement> spmm_case(Runtime& rt, cache::CacheStore& store, const cache::DeviceKey& key, Case& c,
                                   const Csr<double>& matrix, const Features& features, const TuneOptions& options,
                                   Stream& stream, Counters& counters) {
  const plan::DeviceTarget target = detail::target_of(rt.device());
  const plan::SpmmProblem problem{c.k, c.dtype, false};
  c.plan = plan::plan_spmm(features, problem, target, Options{}, {}, ops::plan_sources(Op::SpMM, target));
  c.bucket = plan::spmm_bucket(features, problem);
  Csr<T> a = cast<T>(matrix);
  generate::fill_random(a.values, options.seed);
  Dense<T> b(a.cols, c.k);
  generate::fill_random(b, options.seed + 1);
  Dense<T> expected;
  reference::spmm(a, b, expected);

  const int64_t bytes_per_set = (int64_t(a.cols) + a.rows) * c.k * int64_t(sizeof(T));
  const int sets = operand_sets(bytes_per_set, rt.device().l2_bytes, 4);
  DeviceCsr<T> da(rt.context(), a);
  std::vector<DeviceDense<T>> bs, cs;
  for (int s = 0; s < sets; ++s) {
    bs.emplace_back(rt.context(), b);
    cs.emplace_back(rt.context(), a.rows, c.k);
  }
  CaseRunner runner;
  runner.sets = sets;
  runner.checked_run = [&](const Options& run) {
    cs[0].buffer().fill_bytes(0xFF);  // NaN: an element the kernel skips cannot pass
    CheckedRun checked;
    checked.call = rt.spmm(da, bs[0], cs[0], run);
    stream.synchronize();
    checked.error = reference::relative_error(cs[0].download().data, expected.data);
    return checked;
  };
  runner.launch = [&](int set, CUstream, const Options& run) { rt.spmm(da, bs[set], cs[set], run); };
  runner.plan = [&](const Options& run) {
    return plan::plan_spmm(features, problem, target, run,
                           [&](int32_t w, int32_t t) { return row_segment_split(c.pattern, w, t); },
                           ops::plan_sources(Op::SpMM, target));
  };
  return run_case(rt, store, key, c, spmm_candidates(features, problem, target), runner, options, stream, counters);
}

template <class T>
std::vector<Measurement> sddmm_case(Runtime& rt, cache::CacheStore& store, const cache::DeviceKey& key, Case& c,
                                    const Csr<double>& matrix, const Features& features, const TuneOptions& options,
                                    Stream& stream, Counters& counters) {
  const plan::DeviceTarget target = detail::target_of(rt.device());
  plan::SddmmProblem problem{c.k, c.dtype, c.k, c.k};
  // Exact dense-tile counts, as the executor gives the planner (so tile_fill is the runtime's).
  problem.tile_count = formats::tile_counter(c.pattern);
  c.plan = plan::plan_sddmm(features, problem, target, Options{}, ops::plan_sources(Op::SDDMM, target));
  c.bucket = plan::sddmm_bucket(features, problem);
  Csr<T> s = cast<T>(matrix);
  generate::fill_random(s.values, options.seed);
  Dense<T> a(s.rows, c.k), b(s.cols, c.k);
  generate::fill_random(a, options.seed + 1);
  generate::fill_random(b, options.seed + 2);
  Csr<T> expected;
  reference::sddmm(s, a, b, expected);

  const int64_t bytes_per_set = (int64_t(s.rows) + s.cols) * c.k * int64_t(sizeof(T)) + s.nnz() * int64_t(sizeof(T));
  const int sets = operand_sets(bytes_per_set, rt.device().l2_bytes, 4);
  DeviceCsr<T> ds(rt.context(), s);
  std::vector<DeviceDense<T>> as, bs;
  std::vector<DeviceBuffer> ps;
  for (int i = 0; i < sets; ++i) {
    as.emplace_back(rt.context(), a);
    bs.emplace_back(rt.context(), b);
    ps.emplace_back(rt.context(), std::max<std::size_t>(1, s.values.size()) * sizeof(T));
  }
  CaseRunner runner;
  runner.sets = sets;
  runner.checked_run = [&](const Options& run) {
    ps[0].fill_bytes(0xFF);
    CheckedRun checked;
    checked.call = rt.sddmm(ds, as[0], bs[0], ps[0], run);
    stream.synchronize();
    checked.error = reference::relative_error(ps[0].download_as<T>(s.values.size()), expected.values);
    return checked;
  };
  runner.launch = [&](int set, CUstream, const Options& run) { rt.sddmm(ds, as[set], bs[set], ps[set], run); };
  runner.plan = [&](const Options& run) {
    return plan::plan_sddmm(features, problem, target, run, ops::plan_sources(Op::SDDMM, target));
  };
  return run_case(rt, store, key, c, sddmm_candidates(features, problem, target), runner, options, stream, counters);
}

// "cyl6 K=128 f32"
std::string case_name(const Case& c) { return c.matrix + " K=" + std::to_string(c.k) + " " + to_string(c.dtype); }

std::string case_line(int index, int total, const Case& c, const std::vector<Measurement>& ms) {
  std::ostringstream line;
  line << "[" << index << "/" << total << "] " << case_name(c) << ": ";
  const Measurement* best = nullptr;
  for (const auto& m : ms) {
    if (!m.ok) continue;
    const bool tied = best && m.time_ms <= best->time_ms * (1 + plan::kTieTolerance) && m.time_ms >= best->time_ms * (1 - plan::kTieTolerance);
    if (!best || (tied ? plan::tie_break_before(m.variant, m.params, best->variant, best->params) : m.time_ms < best->time_ms)) best = &m;
  }
  if (best) line << "best " << best->variant << describe_params(best->params) << " " << std::setprecision(3) << best->time_ms << " ms";
  else line << "no candidate ran correctly";
  line << " (" << ms.size() << " candidates)";
  return line.str();
}

}  // namespace

std::string write_model_file(const std::string& dir, Op op, const nlohmann::json& model) {
  std::filesystem::create_directories(dir);
  const std::string path = (std::filesystem::path(dir) / (std::string(to_string(op)) + ".json")).string();
  std::ofstream out(path);
  out << model.dump(2) << "\n";
  if (!out) throw IoError("cannot write tuned model to '" + path + "'");
  return path;
}

TuneSummary tune(Runtime& rt, cache::CacheStore& store, const TuneOptions& options, const std::function<void(const TuneStep&)>& report) {
  if (options.op != Op::SpMM && options.op != Op::SDDMM)
    throw UnsupportedError(std::string("tune: ") + to_string(options.op) +
                           " has no training matrices (spmm and sddmm have; spamm's run is `sparsejit tune --op spamm`)");
  if (options.ks.empty()) throw InvalidInputError("tune: no K given");
  for (int32_t k : options.ks)
    if (k < 1) throw InvalidInputError("tune: K = " + std::to_string(k) + " must be >= 1");
  for (DType t : options.dtypes)
    if (t != DType::F32 && t != DType::F64) throw UnsupportedError(std::string("tune: value type ") + to_string(t) + " (f32 and f64 only)");
  const plan::DeviceTarget target = detail::target_of(rt.device());
  const cache::DeviceKey key = ops::device_key(target);
  const auto model_before = ops::planner_model(options.op, target);
  const std::vector<MatrixSource> sources = training_sources(options);
  const int total = int(sources.size() * options.ks.size() * options.dtypes.size());
  Stream stream(rt.context());
  TuneSummary summary;
  Counters counters;
  std::vector<Measurement> all;
  int index = 0;
  for (const auto& source : sources) {
    const Csr<double> matrix = source.load();
    if (matrix.nnz() == 0 || (source.file && matrix.nnz() > kMaxFileNnz)) {
      const int cases = int(options.ks.size() * options.dtypes.size());
      report({"skipping " + source.name + ": " + std::to_string(matrix.nnz()) + " nonzeros (" +
                  (matrix.nnz() == 0 ? std::string("nothing to measure") : "files are tuned up to " + std::to_string(kMaxFileNnz)) + ")",
              source.name, cases, false, total});
      index += cases;
      continue;
    }
    const Features features = inspect(matrix.pattern());
    for (DType dtype : options.dtypes) {
      for (int32_t k : options.ks) {
        Case c;
        c.id = fingerprint_hex(features.fingerprint) + " k" + std::to_string(k) + " " + to_string(dtype);
        c.matrix = source.name;
        c.k = k;
        c.dtype = dtype;
        c.pattern = matrix.pattern();
        const bool f64 = dtype == DType::F64;
        std::vector<Measurement> ms =
            options.op == Op::SpMM
                ? (f64 ? spmm_case<double>(rt, store, key, c, matrix, features, options, stream, counters)
                       : spmm_case<float>(rt, store, key, c, matrix, features, options, stream, counters))
                : (f64 ? sddmm_case<double>(rt, store, key, c, matrix, features, options, stream, counters)
                       : sddmm_case<float>(rt, store, key, c, matrix, features, options, stream, counters));
        report({case_line(++index, total, c, ms), case_name(c), 1, true, total});
        all.insert(all.end(), ms.begin(), ms.end());
        ++summary.cases;
      }
    }
  }
  summary.measured = counters.measured;
  summary.reused = counters.reused;
  summary.failed = counters.failed;
  summary.trained = options.op == Op::SpMM ? train_spmm_model(all, *model_before, key.device_name)
                                           : train_sddmm_model(all, *model_before, key.device_name);
  store.put_model({plan::tuned_model_name(options.op), 1, key, summary.trained.model, 0});
  if (options.write_models_dir) summary.model_file = write_model_file(*options.write_models_dir, options.op, summary.trained.model);
  ops::forget_tuned_lookups();
  return summary;
}

}  // namespace sparsejit::tuner
