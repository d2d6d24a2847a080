// `sparsejit bench INPUT... --op spmm|sddmm|spgemm -k 32,128,512`: our runtime (auto and each
// variant forced) against cuSPARSE, one JSON line per (matrix, K) (SpGEMM: per matrix, C = A·A)
// on stdout (and appended to
// --json-out), then a table and a per-K summary on stderr. Progress (a line per finished
// (matrix, K) with the time elapsed and an ETA, cli/progress.hpp; none with --quiet) and
// failures go to stderr too, so stdout holds nothing but JSON lines.
//
// Every argument is checked before any GPU work; a bad one is a one-line error and exit 1.
// A matrix that fails to load or run is reported on one line and skipped; the exit status is
// 1 when any did, or when a --check failed.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>
#include <sstream>
#include <type_traits>

#include "cli/bench.hpp"
#include "cli/bench_spamm.hpp"
#include "cli/call_options.hpp"
#include "cli/commands.hpp"
#include "cli/json_lines.hpp"
#include "cli/matrix_input.hpp"
#include "cli/one_line.hpp"
#include "cli/progress.hpp"
#include "plan/measure_policy.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/generate.hpp"
#include "sparsejit/io.hpp"

namespace sparsejit::cli {

namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;

// The command line as typed; bench::Config is its validated form.
struct BenchArgs {
  std::vector<std::string> inputs;
  std::string op = "spmm";
  std::string ks = "32,128,512";
  std::string dtype = "f32";
  int repeat = 20;
  int warmup = 5;
  std::string clock = "graph";
  std::string variants = "all";
  bool transpose = false;
  bool check = false;
  bool no_reuse = false;
  bool quiet = false;
  std::optional<double> measure_skip_margin;  // unset: the model's
  double measure_budget_ms = Options{}.measure_budget_ms, measure_budget_calls = Options{}.measure_budget_calls;
  std::string json_out;
  uint64_t seed = 1;
  double time_limit_s = std::numeric_limits<double>::infinity();
  // --op spamm (bench_spamm.hpp)
  std::string sizes = "4096,8192,16384", decays = "algebraic,exponential", ratios = "1,5,10,25,50", precisions = "full",
              paths = "auto,simt,mma,cublas", operands = "value", devices;
  int32_t tile = 0;
};

// One matrix to measure: a file, or a generator spec (the text after "gen:").
struct MatrixSource {
  std::string name;  // what the record and the table call it
  std::string path;
  std::string spec;
};

constexpr const char* kGeneratorPrefix = "gen:";

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool is_matrix_file(const std::string& name) {
  for (const char* suffix : {".mtx", ".mtx.gz", ".smtx", ".smtx.gz"})
    if (ends_with(name, suffix)) return true;
  return false;
}

// A file's name in records: its path without the .gz and .mtx/.smtx endings.
std::string record_name(std::string path) {
  for (const char* suffix : {".gz", ".smtx", ".mtx"})
    if (ends_with(path, suffix)) path.resize(path.size() - std::string(suffix).size());
  return path;
}

std::vector<int32_t> parse_ks(const std::string& text) {
  std::vector<int32_t> ks;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = std::min(text.find(',', pos), text.size());
    const std::string item = text.substr(pos, comma - pos);
    std::size_t used = 0;
    long long k = 0;
    try {
      k = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size()) throw InvalidInputError("bench: -k '" + item + "' is not an integer (expected e.g. -k 32,128,512)");
    if (k < 1 || k > (1 << 20)) throw InvalidInputError("bench: -k " + item + " must be in [1, 1048576]");
    ks.push_back(int32_t(k));
    pos = comma + 1;
  }
  return ks;
}

bench::Config validated(const BenchArgs& args) {
  bench::Config config;
  if (args.op != "spmm" && args.op != "sddmm" && args.op != "spgemm")
    throw InvalidInputError("bench: unknown --op '" + args.op + "' (expected spmm, sddmm, spgemm or spamm)");
  config.op = parse_op(args.op);
  config.ks = config.op == Op::SpGEMM ? std::vector<int32_t>{} : parse_ks(args.ks);
  if (args.dtype != "f32" && args.dtype != "f64")
    throw InvalidInputError("bench: --dtype '" + args.dtype + "' not measured (expected f32 or f64)");
  config.dtype = parse_dtype(args.dtype);
  if (args.repeat < 1) throw InvalidInputError("bench: --repeat " + std::to_string(args.repeat) + " must be >= 1");
  if (args.warmup < 0) throw InvalidInputError("bench: --warmup " + std::to_string(args.warmup) + " must be >= 0");
  config.timing = {args.warmup, args.repeat, tuner::parse_clock(args.clock)};
  if (args.variants != "auto" && args.variants != "all")
    throw InvalidInputError("bench: --variants '" + args.variants + "' (expected auto or all)");
  config.all_variants = args.variants == "all";
  if (args.transpose && config.op != Op::SpMM) throw InvalidInputError("bench: --transpose applies to --op spmm only");
  config.transpose = args.transpose;
  if (args.no_reuse && config.op != Op::SDDMM) throw InvalidInputError("bench: --no-reuse applies to --op sddmm only");
  config.reuse = config.op == Op::SDDMM && !args.no_reuse;
  config.check = args.check;
  config.seed = args.seed;
  if (!(args.time_limit_s > 0)) {
    std::ostringstream text;
    text << "bench: --time-limit " << args.time_limit_s << " must be a positive number of seconds";
    throw InvalidInputError(text.str());
  }
  config.time_limit_s = args.time_limit_s;
  config.measure.measure_skip_margin = args.measure_skip_margin;
  config.measure.measure_budget_calls = args.measure_budget_calls;
  config.measure.measure_budget_ms = args.measure_budget_ms;
  plan::check_measure_options(config.measure);
  return config;
}

// Every matrix file below `dir`, sorted, named by its path relative to `dir`.
std::vector<MatrixSource> directory_sources(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir))
    if (entry.is_regular_file() && is_matrix_file(entry.path().filename().string())) files.push_back(entry.path().string());
  if (files.empty()) throw InvalidInputError("bench: directory '" + dir + "' holds no .mtx/.smtx(.gz) files");
  std::sort(files.begin(), files.end());
  std::vector<MatrixSource> sources;
  for (const std::string& file : files)
    sources.push_back({record_name(fs::relative(file, dir).string()), file, ""});
  return sources;
}

std::vector<MatrixSource> resolve_inputs(const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw InvalidInputError("bench: no inputs (give matrix files, directories or gen: specs)");
  std::vector<MatrixSource> sources;
  for (const std::string& input : inputs) {
    if (input.rfind(kGeneratorPrefix, 0) == 0) {
      const std::string spec = input.substr(std::string(kGeneratorPrefix).size());
      if (spec.empty()) throw InvalidInputError("bench: '" + input + "' names no generator spec");
      sources.push_back({input, "", spec});
    } else if (fs::is_directory(input)) {
      for (MatrixSource& source : directory_sources(input)) sources.push_back(std::move(source));
    } else if (fs::is_regular_file(input)) {
      sources.push_back({record_name(fs::path(input).filename().string()), input, ""});
    } else {
      throw InvalidInputError("bench: input '" + input + "' does not exist (nor is it a gen: spec)");
    }
  }
  return sources;
}

// Pattern files get random values, so no product runs on all-ones (or zero) data.
template <class T>
Csr<T> load(const MatrixSource& source, uint64_t seed) {
  return load_matrix<T>(source.spec.empty() ? source.path : kGeneratorPrefix + source.spec, seed);
}


std::string without_final_newline(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The driver's reason without its closing clause about what still works without a GPU.
std::string without_consequence(const std::string& reason) { return reason.substr(0, reason.rfind(": ")); }

// The (matrix, K) items of a run: one per matrix for SpGEMM, which has no K.
int64_t items_per_source(const bench::Config& config) { return config.op == Op::SpGEMM ? 1 : int64_t(config.ks.size()); }

// Runs every K of every source, printing a JSON line per (matrix, K); returns the records.
// Each item counts 1 towards the ETA: a matrix's nnz, the cost's obvious proxy, is known only
// once the matrix is read, and much of an item's time (compiles, the fixed repeat counts) does
// not follow nnz·K anyway.
class BenchRun {
 public:
  BenchRun(const bench::Config& config, std::ofstream* json_out, int64_t items, ProgressStyle style)
      : config_(config), json_out_(json_out), progress_(items, double(items), style, std::cerr), rt_(0), cusparse_(rt_.context()) {}

  void measure_all(const std::vector<MatrixSource>& sources) {
    for (const MatrixSource& source : sources) {
      if (out_of_time(items_per_source(config_), source.name)) continue;
      if (config_.dtype == DType::F64) measure_source<double>(source);
      else measure_source<float>(source);
    }
    if (not_started_ > 0)
      progress_.print(std::cerr, "bench: stopped by --time-limit " + format_duration(config_.time_limit_s) + ": " +
                                     std::to_string(not_started_) + " of " + std::to_string(progress_.items()) + " items not started");
  }

  const std::vector<ordered_json>& records() const { return records_; }
  bool failed() const { return failed_; }

 private:
  template <class T>
  void measure_source(const MatrixSource& source) {
    Csr<T> a;
    try {
      a = load<T>(source, config_.seed);
    } catch (const Error& e) {
      fail(source.name, std::string(to_string(e.category())) + " error: " + e.what());
      const int64_t items = items_per_source(config_);
      progress_.skipped(items, double(items), source.name);
      return;
    }
    progress_.print(std::cerr, "bench: " + source.name + ": " + std::to_string(a.rows) + "x" + std::to_string(a.cols) + ", " +
                                   std::to_string(a.nnz()) + " nonzeros");
    if (config_.op == Op::SpGEMM) {
      measure_product(source, a);
      return;
    }
    for (const int32_t k : config_.ks) {
      const std::string item = source.name + " k=" + std::to_string(k);
      if (out_of_time(1, item)) continue;
      try {
        std::vector<std::string> failures;
        const ordered_json measured = bench::measure(rt_, cusparse_, a, k, config_, failures);
        emit(record_header(source, a.rows, a.cols, a.nnz(), k), measured);
        for (const std::string& failure : failures) fail(item, failure);
      } catch (const Error& e) {
        fail(item, std::string(to_string(e.category())) + " error: " + e.what());
      }
      progress_.finished(item);
    }
  }

  // SpGEMM: C = A·A once per matrix (no K); a matrix that is not square is skipped, not failed.
  template <class T>
  void measure_product(const MatrixSource& source, const Csr<T>& a) {
    if (a.rows != a.cols) {
      progress_.print(std::cerr, "bench: " + source.name + ": skipped (C = A·A needs a square matrix)");
      progress_.skipped(1, 1, source.name);
      return;
    }
    try {
      std::vector<std::string> failures;
      const ordered_json measured = bench::measure_spgemm(rt_, a, config_, failures);
      ordered_json header = record_header(source, a.rows, a.cols, a.nnz(), 0);
      header.erase("k");
      header.erase("transpose");
      header["clock"] = tuner::to_string(tuner::Clock::Events);  // SpGEMM calls synchronize: no graph
      emit(header, measured);
      for (const std::string& failure : failures) fail(source.name, failure);
    } catch (const Error& e) {
      fail(source.name, std::string(to_string(e.category())) + " error: " + e.what());
    }
    progress_.finished(source.name);
  }

  ordered_json record_header(const MatrixSource& source, int32_t rows, int32_t cols, int64_t nnz, int32_t k) const {
    return {{"device", rt_.device().name}, {"date", utc_now()}, {"op", to_string(config_.op)},
            {"dtype", to_string(config_.dtype)}, {"matrix", source.name}, {"rows", rows}, {"cols", cols},
            {"nnz", nnz}, {"k", k}, {"transpose", config_.transpose}, {"seed", config_.seed},
            {"warmup", config_.timing.warmup}, {"repeat", config_.timing.repeat},
            {"clock", tuner::to_string(config_.timing.clock)}};
  }

  void emit(ordered_json record, const ordered_json& measured) {
    for (const auto& [key, value] : measured.items()) record[key] = value;
    const std::string line = record.dump();
    progress_.print(std::cout, line);
    if (json_out_) *json_out_ << line << std::endl;
    records_.push_back(std::move(record));
  }

  void fail(const std::string& what, const std::string& message) {
    progress_.print(std::cerr, "bench: " + what + ": " + first_line(message));
    failed_ = true;
  }

  // Whether `items` are past --time-limit (once one is, every later one is): counted as not
  // started, so the run ends with what it measured and its table, inside a caller's hard limit.
  bool out_of_time(int64_t items, const std::string& what) {
    if (not_started_ == 0 && progress_.next_item_fits(config_.time_limit_s)) return false;
    not_started_ += items;
    progress_.skipped(items, double(items), what);
    return true;
  }

  const bench::Config& config_;
  std::ofstream* json_out_;
  int64_t not_started_ = 0;  // items past --time-limit
  Progress progress_;  // before the runtime: its start up counts in the elapsed time
  Runtime rt_;
  vendor::CusparseHandle cusparse_;
  std::vector<ordered_json> records_;
  bool failed_ = false;
};

// Without a CUDA driver there is nothing to measure: one line, exit 1.
void require_driver() {
  if (driver_available()) return;
  std::cerr << "sparsejit bench: " << without_consequence(driver_unavailable_reason()) << ": nothing to measure" << std::endl;
  throw CLI::RuntimeError(1);
}

// --op spamm: dense decay inputs instead of matrices (bench_spamm.cpp).
void run_spamm_bench(const BenchArgs& args) {
  if (!args.inputs.empty()) throw InvalidInputError("bench --op spamm takes no inputs: it generates its decay matrices (--sizes, --decays)");
  if (args.time_limit_s != std::numeric_limits<double>::infinity())
    throw InvalidInputError("bench: --time-limit applies to --op spmm, sddmm and spgemm (not spamm)");
  const bench::SpammConfig config = bench::spamm_config(args.sizes, args.decays, args.ratios, args.precisions, args.paths, args.operands,
                                                        args.dtype, args.tile, {args.warmup, args.repeat, tuner::Clock::Events},
                                                        args.devices);
  const std::unique_ptr<std::ofstream> json_out = open_json_out("bench", args.json_out);
  require_driver();
  if (!bench::run_spamm(config, json_out.get(), progress_style(args.quiet))) throw CLI::RuntimeError(1);
}

void run_bench(const BenchArgs& args) {
  if (args.op == "spamm") return run_spamm_bench(args);
  const bench::Config config = validated(args);
  const std::vector<MatrixSource> sources = resolve_inputs(args.inputs);
  const std::unique_ptr<std::ofstream> json_out = open_json_out("bench", args.json_out);
  require_driver();
  BenchRun run(config, json_out.get(), int64_t(sources.size()) * items_per_source(config), progress_style(args.quiet));
  run.measure_all(sources);
  bench::print_report(std::cerr, run.records());
  if (json_out && !*json_out) throw IoError("bench: writing --json-out '" + args.json_out + "' failed");
  if (run.failed()) throw CLI::RuntimeError(1);
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Time our SpMM/SDDMM/SpGEMM (auto and every variant) against cuSPARSE; JSON lines out");
  static BenchArgs args;
  cmd->add_option("inputs", args.inputs,
                  "Matrix files (.mtx/.smtx, optionally .gz), directories (searched recursively) or generator specs "
                  "prefixed with gen: (e.g. gen:uniform:200000:50). Specs:\n" + without_final_newline(generate::spec_help()));
  cmd->add_option("--op", args.op,
                  "spmm (C = A·B), sddmm (P = S ∘ (A·Bᵀ)), spgemm (C = A·A, square matrices) or spamm (C ≈ A·A, decay "
                  "matrices)")
      ->capture_default_str();
  cmd->add_option("-k,--k", args.ks, "Comma-separated dense widths K (SpMM and SDDMM)")->capture_default_str();
  cmd->add_option("--dtype", args.dtype, "f32 or f64")->capture_default_str();
  cmd->add_option("--repeat", args.repeat, "Timed runs; the median is reported")->capture_default_str();
  cmd->add_option("--warmup", args.warmup, "Untimed runs before timing")->capture_default_str();
  cmd->add_option("--clock", args.clock,
                  "graph: the calls captured in a CUDA graph, replays timed (device time of a call, ours and the vendor's "
                  "alike); events: an event pair around each call as the host makes it (includes host launch cost when "
                  "the device work is shorter). SpGEMM always uses events (its calls synchronize)")
      ->capture_default_str();
  cmd->add_option("--variants", args.variants, "auto: the planner's choice and the vendor; all: also every variant forced (oracle)")
      ->capture_default_str();
  cmd->add_flag("--transpose", args.transpose, "SpMM: C = Aᵀ·B");
  cmd->add_flag("--check", args.check, "Check every result of ours against the CPU reference (once per matrix and K)");
  cmd->add_flag("--no-reuse", args.no_reuse,
                "SDDMM: skip the \"reuse\" record (the pattern declared reused: reindexed_tiled's preprocessing cost, "
                "auto with Reuse::Many, after how many calls the preprocessing pays off)");
  add_measure_options(cmd, args.measure_skip_margin, args.measure_budget_ms, args.measure_budget_calls);
  cmd->add_option("--json-out", args.json_out, "Also append the JSON lines to this file");
  cmd->add_option("--time-limit", args.time_limit_s,
                  "Seconds after which no further item (matrix and K) starts: none once they have passed, nor one the mean "
                  "time per item so far says would end past them. The run ends with the lines, table and summary of what it "
                  "measured and names how many items did not start (a device call with a hard limit: keep a margin, since "
                  "one item can take longer than the mean). SpMM, SDDMM and SpGEMM");
  cmd->add_flag("-q,--quiet", args.quiet,
                "No progress on stderr. Without it, each finished item (matrix and K; SpAMM: size, decay, precision, operands "
                "and share) shows [done/total], percent, the time elapsed and an ETA (from the mean time per item so far): "
                "one line rewritten in place on a terminal, else a line every 5 s or 10% of the items, and the last");
  cmd->add_option("--seed", args.seed, "Seed of generated matrices and random values")->capture_default_str();
  cmd->add_option("--sizes", args.sizes, "SpAMM: N of the N×N decay inputs")->capture_default_str();
  cmd->add_option("--decays", args.decays, "SpAMM: algebraic (0.1/(|i-j|^0.1+1)) and/or exponential (0.995^|i-j|)")->capture_default_str();
  cmd->add_option("--ratios", args.ratios, "SpAMM: target shares of kept tile products, percent (τ searched per share)")->capture_default_str();
  cmd->add_option("--precisions", args.precisions, "SpAMM: full, tf32, fp16, bf16 (each against cuBLAS of its class)")->capture_default_str();
  cmd->add_option("--paths", args.paths, "SpAMM: auto and forced variants")->capture_default_str();
  cmd->add_option("--tile", args.tile, "SpAMM: tile 32, 64 or 128 (0: the planner's)")->capture_default_str();
  cmd->add_option("--operands", args.operands,
                  "SpAMM: value (A and B in --dtype; fp16/bf16 convert them inside the call), 16bit (fp16/bf16 only: A and B "
                  "given as half/bfloat16, converted on the host like the cuBLAS baseline's)")
      ->capture_default_str();
  cmd->add_option("--devices", args.devices,
                  "SpAMM: auto also on these GPUs (all, or ordinals with this process's GPU 0 among them; NCCL from "
                  "SPARSEJIT_NCCL_LIBRARY): time, speedup over one GPU of ours and over cuBLAS on one GPU, parallel efficiency");
  cmd->callback([] { run_bench(args); });
}

}  // namespace sparsejit::cli
