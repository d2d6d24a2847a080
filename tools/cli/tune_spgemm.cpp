#include "cli/tune_spgemm.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/matrix_input.hpp"
#include "cli/one_line.hpp"
#include "cli/progress.hpp"
#include "cli/spgemm_timer.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "plan/tuned.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "tuner/cost_fit.hpp"
#include "tuner/spgemm_fit.hpp"
#include "tuner/training_set.hpp"
#include "tuner/tune.hpp"

namespace sparsejit::cli {

namespace {

using tuner::format_number;

// 1-4 M nonzeros each, so that the slowest variant's call stays within tens of ms and a run
// with the shared matrices within minutes: bench's SpGEMM shapes (bench/results/*spgemm*)
// at a fifth of their rows, and R-MAT's power-law rows.
const std::vector<std::string> kGenerated = {"gen:uniform:200000:8",    "gen:band:200000:16:64",     "gen:clustered:200000:12:0.8:16",
                                             "gen:rmat:100000:1000000", "gen:blockdiag:100000:32:0", "gen:blockdiag:200000:16:2"};
// 1e4 to 3e4 nonzeros: a smoke test of every variant.
const std::vector<std::string> kQuickGenerated = {"gen:uniform:2000:8", "gen:band:4000:8:32", "gen:blockdiag:1024:16:1"};

// 2 warm-up and 10 timed calls, as `tune --op spamm`; --quick: 1 and 3.
tuner::TimingOptions timing_of(bool quick) { return quick ? tuner::TimingOptions{1, 3} : tuner::TimingOptions{2, 10}; }

std::string times_of(const std::vector<tuner::SpgemmTiming>& timings) {
  std::string line;
  for (const tuner::SpgemmTiming& t : timings) line += (line.empty() ? "" : ", ") + t.variant + " " + format_number("%.4g", t.ms) + " ms";
  return line;
}

// One case: the automatic plan, then each variant it offered forced (at the parameters it was
// priced at) and timed; the timings go to `timings`. Returns the case's line: each variant's
// time, or why it was not timed.
template <class T>
std::string time_case(Runtime& rt, const std::string& name, const Csr<T>& host, bool quick, std::vector<tuner::SpgemmTiming>& timings) {
  const DeviceCsr<T> a(rt.context(), host);
  SpgemmTimer<T> timer(rt, a, timing_of(quick));
  CallInfo planned;
  rt.spgemm(a, a, Options{}, &planned);
  const Decision& d = *planned.decision;
  std::vector<tuner::SpgemmTiming> timed;
  std::string left_out;
  for (const Candidate& c : d.candidates) {
    if (!c.rejected_because.empty()) continue;
    Options forced;
    forced.variant = c.variant;
    forced.params = c.params;
    try {
      timed.push_back({name, dtype_of<T>::value, c.variant, c.terms, timer.time(forced).second});
    } catch (const CudaContextLostError&) {
      throw;
    } catch (const UnsupportedError& e) {
      left_out += "; " + c.variant + " skipped (unsupported: " + first_line(e.what()) + ")";
    } catch (const Error& e) {
      left_out += "; " + c.variant + " left out (" + first_line(e.what()) + ")";
    }
  }
  timings.insert(timings.end(), timed.begin(), timed.end());
  return name + " " + to_string(dtype_of<T>::value) + ": " + format_number("%.4g", d.features.at("products").get<double>()) + " products; " +
         (timed.empty() ? std::string("nothing timed") : times_of(timed)) + left_out + " (auto: " + d.variant + ")";
}

class SpgemmTune {
 public:
  SpgemmTune(const SpgemmTuneConfig& config, Runtime& rt)
      : config_(config), rt_(rt), target_(detail::target_of(rt.device())), base_(ops::planner_model(Op::SpGEMM, target_)),
        progress_(items(), double(items()), progress_style(config.quiet), std::cerr) {}

  std::vector<tuner::SpgemmTiming> measure() {
    for (std::size_t i = 0; i < config_.inputs.size(); ++i) measure_input(config_.inputs[i], config_.names[i]);
    return timings_;
  }
  const nlohmann::json& base() const { return *base_; }
  const plan::DeviceTarget& target() const { return target_; }

 private:
  int64_t items() const { return int64_t(config_.inputs.size() * config_.dtypes.size()); }

  // Each value type of one input; an input that cannot be read, is not square or is too large
  // to tune is said so and skipped.
  void measure_input(const std::string& input, const std::string& name) {
    const std::string why = load(input);
    if (!why.empty()) {
      progress_.print(std::cout, name + ": skipped, " + why);
      progress_.skipped(int64_t(config_.dtypes.size()), double(config_.dtypes.size()), name);
      return;
    }
    for (DType dtype : config_.dtypes) {
      progress_.print(std::cout, measure_case(name, dtype));
      progress_.finished(name + " " + to_string(dtype));
    }
  }

  // Reads `input` into host_; returns why it cannot be tuned, or "".
  std::string load(const std::string& input) {
    try {
      host_ = load_matrix<double>(input, config_.seed);
    } catch (const Error& e) {
      return first_line(e.what());
    }
    if (host_.rows != host_.cols) return "not square (" + std::to_string(host_.rows) + "x" + std::to_string(host_.cols) + "): C = A·A needs one";
    if (!is_generator(input) && host_.nnz() > tuner::kMaxFileNnz)
      return std::to_string(host_.nnz()) + " nonzeros (files are tuned up to " + std::to_string(tuner::kMaxFileNnz) + ")";
    return "";
  }

  // One case's line; a case whose automatic plan fails (e.g. nothing fits the device's memory)
  // is left out with the error, a lost CUDA context ends the run.
  std::string measure_case(const std::string& name, DType dtype) {
    try {
      return dtype == DType::F64 ? time_case(rt_, name, host_, config_.quick, timings_)
                                 : time_case(rt_, name, cast<float>(host_), config_.quick, timings_);
    } catch (const CudaContextLostError&) {
      throw;
    } catch (const Error& e) {
      return name + " " + to_string(dtype) + ": left out (" + first_line(e.what()) + ")";
    }
  }

  const SpgemmTuneConfig& config_;
  Runtime& rt_;
  plan::DeviceTarget target_;
  std::shared_ptr<const nlohmann::json> base_;
  Progress progress_;
  Csr<double> host_;  // the input being timed
  std::vector<tuner::SpgemmTiming> timings_;
};

// "row_hash products = 2.9e-08 ms", then the notes.
void print_fitted(const tuner::SpgemmFit& fit) {
  for (const std::string& name : fit.fitted) {
    const std::string variant = name.substr(0, name.find(' ')), term = name.substr(name.find(' ') + 1);
    std::cout << "  " << name << " = " << format_number("%.3g", fit.cost[variant][term].get<double>()) << " ms\n";
  }
  for (const std::string& note : fit.notes) std::cout << "  " << note << "\n";
}

void print_selection(const tuner::SpgemmFit& fit) {
  std::cout << "picks within 10% of the fastest timed, every case: base " << tuner::to_string(fit.all.base) << " -> fitted "
            << tuner::to_string(fit.all.fitted) << "\n";
  std::cout << "held-out matrices (" << (fit.held_out_matrices.empty() ? std::string("none") : tuner::comma_list(fit.held_out_matrices))
            << "), fitted without them: base " << tuner::to_string(fit.held_out.base) << " -> fitted " << tuner::to_string(fit.held_out.fitted)
            << "\n";
}

}  // namespace

SpgemmTuneConfig spgemm_tune_config(const std::optional<std::string>& matrices_dir, bool quick, const std::vector<DType>& dtypes) {
  SpgemmTuneConfig c;
  c.quick = quick;
  c.dtypes = dtypes.empty() ? std::vector<DType>{DType::F32} : dtypes;
  c.inputs = quick ? kQuickGenerated : kGenerated;
  c.names = c.inputs;
  if (matrices_dir)
    for (const std::string& file : tuner::matrix_files(*matrices_dir)) {
      c.inputs.push_back(file);
      c.names.push_back(tuner::matrix_file_name(file, *matrices_dir));
    }
  return c;
}

void run_spgemm_tune(const SpgemmTuneConfig& config, cache::CacheStore& store) {
  Runtime rt(0);
  std::cout << "tuning spgemm on " << to_string(rt.device()) << "\n" << std::flush;
  SpgemmTune tune(config, rt);
  const std::vector<tuner::SpgemmTiming> timings = tune.measure();
  if (timings.empty()) throw UnsupportedError("tune --op spgemm: no variant could be timed on any input; nothing to fit");
  const tuner::SpgemmFit fit = tuner::fit_spgemm(timings, tune.base().at("cost"));
  const nlohmann::json model = tuner::tuned_spgemm_model(tune.base(), fit, timings, tune.target().name);
  store.put_model({plan::tuned_model_name(Op::SpGEMM), 1, ops::device_key(tune.target()), model, 0});
  ops::forget_tuned_lookups();
  std::cout << "fitted from " << tune.base().value("id", std::string("?")) << " on " << timings.size() << " timings:\n";
  print_fitted(fit);
  print_selection(fit);
  std::cout << "tuned model " << model["id"].get<std::string>() << " stored in " << store.path() << "\n";
  if (config.write_models_dir) std::cout << "wrote " << tuner::write_model_file(*config.write_models_dir, Op::SpGEMM, model) << "\n";
}

}  // namespace sparsejit::cli
