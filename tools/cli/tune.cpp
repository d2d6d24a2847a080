// `sparsejit tune`: installation-time tuning of this GPU (tuner/tune.hpp does the work).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

#include "cli/commands.hpp"
#include "cli/progress.hpp"
#include "cli/tune_spamm.hpp"
#include "cli/tune_spgemm.hpp"
#include "jit/compiler.hpp"
#include "ops/plan_sources.hpp"
#include "ops/runtime_state.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
#include "tuner/from_records.hpp"
#include "tuner/precompile.hpp"
#include "tuner/tune.hpp"

namespace sparsejit::cli {

namespace {

// Where `tune` looks for real matrices when --matrices is not given: the shared folder
// beside the checkout (as the tests do), or inside it; the first that exists.
constexpr const char* kDefaultMatricesDirs[] = {"../shared/matrices", "shared/matrices"};

struct TuneArgs {
  std::string op;
  std::string matrices;
  bool generated_only = false;
  bool quick = false;
  bool resume = false;
  bool restart = false;
  std::vector<int32_t> ks;  // empty: the op's benchmark widths (default_ks)
  std::vector<std::string> dtypes = {"f32"};
  std::string write_models;
  uint64_t seed = 1;
  bool from_records = false;
  std::string held_out_file;  // --from-records: where the held-out fingerprints go
  bool precompile = false;
  std::string arch;  // --precompile without a GPU: the sm to compile for
  bool quiet = false;
  // --op spamm (empty: tools/cli/tune_spamm.hpp's defaults)
  std::vector<int32_t> sizes;
  std::vector<std::string> precisions;
  std::vector<double> shares;
};

// An option of some ops' runs only, so that one given to another op is refused, not ignored.
struct ScopedOption {
  CLI::Option* option;
  std::vector<std::string> ops;  // the ops it applies to
};

// The ops' groups of options.
const std::vector<std::string> kTrainingOps = {"spmm", "sddmm"};             // tuning records of training cases
const std::vector<std::string> kMatrixOps = {"spmm", "sddmm", "spgemm"};     // matrices: generated, a directory's
const std::vector<std::string> kSpammOps = {"spamm"};                        // generated decay inputs

// A given option that does not apply to --op: an InvalidInputError naming it and the ops it is for.
void refuse_other_options(const std::string& op, const std::vector<ScopedOption>& scoped) {
  for (const ScopedOption& s : scoped) {
    if (s.option->count() == 0 || std::find(s.ops.begin(), s.ops.end(), op) != s.ops.end()) continue;
    std::string ops;
    for (std::size_t i = 0; i < s.ops.size(); ++i) ops += (i == 0 ? "" : i + 1 == s.ops.size() ? " or " : ", ") + s.ops[i];
    throw InvalidInputError("tune --op " + op + ": " + s.option->get_name() + " does not apply (it is for --op " + ops + ")");
  }
}

// The widths `sparsejit bench` reports for the op, so the tuned model covers them.
std::vector<int32_t> default_ks(Op op) {
  return op == Op::SpMM ? std::vector<int32_t>{32, 128, 512} : std::vector<int32_t>{32, 64, 128};
}

std::vector<DType> parse_dtypes(const std::vector<std::string>& texts) {
  std::vector<DType> dtypes;
  for (const auto& text : texts) {
    const DType t = parse_dtype(text);
    if (t != DType::F32 && t != DType::F64) throw UnsupportedError("tune: --dtype " + text + " (f32 and f64 only)");
    dtypes.push_back(t);
  }
  return dtypes;
}

// The directory of real matrices to tune on: --matrices, else none with --generated-only or
// --quick, else the first default directory that exists.
std::optional<std::string> matrices_dir(const TuneArgs& args) {
  if (!args.matrices.empty()) {
    if (!std::filesystem::is_directory(args.matrices)) throw IoError("tune: --matrices '" + args.matrices + "' is not a directory");
    return args.matrices;
  }
  if (args.generated_only || args.quick) return std::nullopt;
  for (const char* dir : kDefaultMatricesDirs)
    if (std::filesystem::is_directory(dir)) return dir;
  return std::nullopt;
}

tuner::TuneOptions to_options(const TuneArgs& args) {
  tuner::TuneOptions o;
  o.op = parse_op(args.op);
  o.quick = args.quick;
  o.restart = args.restart;
  o.seed = args.seed;
  for (int32_t k : args.ks)
    if (k < 1) throw InvalidInputError("tune: --k " + std::to_string(k) + " must be >= 1");
  o.ks = args.ks.empty() ? default_ks(o.op) : args.ks;
  o.dtypes = parse_dtypes(args.dtypes);
  o.matrices_dir = matrices_dir(args);
  if (!args.write_models.empty()) o.write_models_dir = args.write_models;
  return o;
}

// Measures the cases: their lines on stdout, the progress line (cli/progress.hpp) on stderr.
// Each case counts 1 towards the ETA; a skipped matrix's cases are counted but take no time.
tuner::TuneSummary measure_cases(Runtime& runtime, cache::CacheStore& store, const tuner::TuneOptions& options, bool quiet) {
  const Progress::Clock::time_point start = Progress::Clock::now();
  std::optional<Progress> progress;  // the case count is known once the tuner has its matrices
  return tuner::tune(runtime, store, options, [&](const tuner::TuneStep& step) {
    if (!progress) progress.emplace(step.total, double(step.total), progress_style(quiet), std::cerr, start);
    progress->print(std::cout, step.line);
    if (step.measured) progress->finished(step.item);
    else progress->skipped(step.cases, double(step.cases), step.item);
  });
}

void print_summary(const tuner::TuneSummary& s, const std::string& db) {
  std::cout << s.cases << " cases: measured " << s.measured << " candidates (" << s.failed << " failed the reference check or did not run), reused "
            << s.reused << " earlier measurements\n";
  for (const auto& note : s.trained.notes) std::cout << "  " << note << "\n";
  std::cout << "tuned model " << s.trained.model.value("id", "?") << " stored in " << db << "\n";
  if (!s.model_file.empty()) std::cout << "wrote " << s.model_file << "\n";
}

// The store tuning data goes to: the user's cache database (none when the disk cache is off).
cache::CacheStore& tuning_store() {
  if (!cache::default_cache_dir())
    throw InvalidInputError("tune stores its results in the cache database, but SPARSEJIT_CACHE_DIR is set to \"\" (disk cache disabled)");
  return jit::default_compiler().cache().store();
}

std::string percent(const tuner::PredictionScore& s) {
  return std::to_string(int(s.rate() * 100 + 0.5)) + "% of " + std::to_string(s.cases) + " cases";
}

// One fingerprint a line: the patterns the retrained model was judged on and not trained on,
// so a benchmark can be judged on them alone (bench/model_alone.py).
void write_held_out(const std::string& path, const std::vector<std::string>& fingerprints) {
  std::ofstream out(path);
  for (const std::string& f : fingerprints) out << f << "\n";
  out.flush();
  if (!out) throw IoError("tune --held-out: cannot write '" + path + "'");
  std::cout << "wrote the " << fingerprints.size() << " held-out patterns' fingerprints to " << path << "\n";
}

void run_from_records(const TuneArgs& args) {
  const Op op = parse_op(args.op);
  const plan::DeviceTarget target = detail::explain_target(0);
  cache::CacheStore& store = tuning_store();
  const tuner::RetrainSummary s = tuner::retrain_from_records(store, ops::device_key(target), op, *ops::planner_model(op, target));
  std::cout << "retraining " << args.op << " for " << target.name << " from " << s.records << " records ("
            << s.skipped << " without features skipped): " << s.training_patterns << " patterns trained on, "
            << s.held_out_patterns << " held out\n";
  for (const auto& note : s.notes) std::cout << "  " << note << "\n";
  if (!args.held_out_file.empty()) write_held_out(args.held_out_file, s.held_out);
  if (!s.trained) return;
  for (const auto& note : s.model.notes) std::cout << "  " << note << "\n";
  std::cout << "held-out cases within 10% of the fastest timed: before " << percent(s.before) << ", after "
            << percent(s.after) << "\n";
  std::cout << (s.stored ? "stored the retrained model in " + store.path()
                         : std::string("kept the model as it was (the retrained one predicts no better)"))
            << "\n";
}

// The sm --precompile compiles for: --arch, else GPU 0's, else the nominal sm_90 part's.
plan::DeviceTarget precompile_target(const std::string& arch) {
  plan::DeviceTarget target = detail::explain_target(0);
  if (arch.empty()) return target;
  const std::string digits = arch.rfind("sm_", 0) == 0 ? arch.substr(3) : "";
  if (digits.empty() || digits.size() > 3 || digits.find_first_not_of("0123456789") != std::string::npos || std::stoi(digits) < 70)
    throw InvalidInputError("--arch '" + arch + "': expected sm_XY with XY >= 70, e.g. sm_90");
  target.sm = std::stoi(digits);
  return target;
}

void run_precompile(const TuneArgs& args) {
  tuner::PrecompileOptions o;
  if (!args.op.empty()) o.ops = {parse_op(args.op)};
  if (!args.ks.empty()) o.ks = args.ks;
  o.dtypes = parse_dtypes(args.dtypes);
  o.quick = args.quick;
  o.seed = args.seed;
  o.target = precompile_target(args.arch);
  jit::Compiler& compiler = jit::default_compiler();
  std::cout << "precompiling for sm_" << o.target.sm << " into " << compiler.cache().store().path() << "\n" << std::flush;
  const tuner::PrecompileSummary s = tuner::precompile(compiler, o, std::cout);
  for (const auto& failure : s.failures) std::cout << "  failed: " << failure << "\n";
  const auto dir = cache::default_cache_dir();
  const cache::CacheStats stats = dir ? cache::cache_stats(*dir) : cache::CacheStats{};
  std::cout << s.kernels << " kernels (" << s.compiled << " compiled now, " << s.cached << " already cached, "
            << s.failures.size() << " settings failed) in " << s.seconds << " s; cache: " << stats.entries << " kernels, "
            << stats.bytes << " bytes of cubin, file " << stats.file_bytes << " bytes\n";
}

void run_spamm(const TuneArgs& args) {
  SpammTuneConfig config = spamm_tune_config(args.sizes, args.precisions, args.shares);
  if (!args.write_models.empty()) config.write_models_dir = args.write_models;
  config.quiet = args.quiet;
  run_spamm_tune(config, tuning_store());
}

void run_spgemm(const TuneArgs& args) {
  SpgemmTuneConfig config = spgemm_tune_config(matrices_dir(args), args.quick, parse_dtypes(args.dtypes));
  if (!args.write_models.empty()) config.write_models_dir = args.write_models;
  config.seed = args.seed;
  config.quiet = args.quiet;
  run_spgemm_tune(config, tuning_store());
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune", "Measure this GPU's kernel variants, store tuning records and train tuned models");
  static TuneArgs args;
  static std::vector<ScopedOption> scoped;
  const auto scope = [&](CLI::Option* option, const std::vector<std::string>& ops) {
    scoped.push_back({option, ops});
    return option;
  };
  cmd->add_option("--op", args.op,
                  "Operation to tune: spmm, sddmm (measured on training matrices), spgemm (every variant the planner offers, "
                  "timed on matrices and generated inputs: its cost constants refitted), or spamm (the tile kernels against "
                  "cuBLAS on decay inputs: the crossover share per precision); --precompile: spmm and sddmm unless given")
      ->check(CLI::IsMember({"spmm", "sddmm", "spgemm", "spamm"}));
  scope(cmd->add_option("--matrices", args.matrices, "Directory of .mtx/.smtx[.gz] files (searched recursively) to add to the generated "
                                                     "matrices (default: ../shared/matrices or shared/matrices, the first that exists; "
                                                     "none with --quick)"),
        kMatrixOps);
  scope(cmd->add_flag("--generated-only", args.generated_only, "Use the generated matrices only"), kMatrixOps);
  scope(cmd->add_flag("--quick", args.quick, "Three tiny generated matrices and short timing (a smoke test)"), kMatrixOps);
  auto* resume = scope(cmd->add_flag("--resume", args.resume, "Skip candidates this device already has records for (the default)"), kTrainingOps);
  scope(cmd->add_flag("--restart", args.restart, "Measure everything again (earlier records stay, newer ones win)")->excludes(resume), kTrainingOps);
  scope(cmd->add_option("-k,--k", args.ks, "Widths K to tune, comma separated (default: spmm 32,128,512; sddmm 32,64,128)")->delimiter(','),
        kTrainingOps);
  scope(cmd->add_option("--dtype", args.dtypes, "Value types to tune, comma separated (f32, f64)")->delimiter(',')->capture_default_str(),
        kMatrixOps);
  cmd->add_option("--write-models", args.write_models, "Also write the tuned model as DIR/<op>.json (to ship as a default)");
  scope(cmd->add_option("--seed", args.seed, "Seed of the generated matrices and values")->capture_default_str(), kMatrixOps);
  scope(cmd->add_option("--sizes", args.sizes, "--op spamm: N of the N×N algebraic decay inputs, comma separated (default 4096,8192)")
            ->delimiter(','),
        kSpammOps);
  scope(cmd->add_option("--precisions", args.precisions, "--op spamm: precisions to time, comma separated: full, tf32, fp16, bf16 (default: all)")
            ->delimiter(','),
        kSpammOps);
  scope(cmd->add_option("--shares", args.shares,
                        "--op spamm: kept shares of tile products to time, fractions in (0, 1], comma separated "
                        "(default 0.01,0.05,0.1,0.25,0.5)")
            ->delimiter(','),
        kSpammOps);
  auto* from_records = scope(cmd->add_flag("--from-records", args.from_records,
                                           "Measure nothing: retrain the tuned model from this GPU's stored records (tune's and "
                                           "measured selections'); kept only when it predicts held-out patterns better"),
                             kTrainingOps);
  cmd->add_option("--held-out", args.held_out_file,
                  "--from-records: write the held-out patterns' fingerprints to FILE, one a line (bench records name "
                  "their pattern's)")
      ->needs(from_records);
  auto* precompile = cmd->add_flag("--precompile", args.precompile,
                                   "Measure nothing: compile the kernels the planners can pick into the cache (no GPU needed)")
                         ->excludes(from_records);
  cmd->add_flag("-q,--quiet", args.quiet,
                "No progress on stderr. Without it, each case measured shows [done/total], percent, the time elapsed and an "
                "ETA (from the mean time per case so far): one line rewritten in place on a terminal, else a line every 5 s "
                "or 10% of the cases, and the last");
  cmd->add_option("--arch", args.arch, "--precompile: the arch to compile for, e.g. sm_90 (default: GPU 0's, else sm_90)")
      ->needs(precompile);
  cmd->callback([] {
    if (args.precompile) return run_precompile(args);
    if (args.op.empty()) throw InvalidInputError("tune: --op spmm|sddmm|spgemm|spamm is required");
    refuse_other_options(args.op, scoped);
    if (args.op == "spamm") return run_spamm(args);
    if (args.op == "spgemm") return run_spgemm(args);
    if (args.from_records) return run_from_records(args);
    const tuner::TuneOptions options = to_options(args);
    cache::CacheStore& store = tuning_store();
    Runtime runtime(0);
    std::cout << "tuning " << args.op << " on " << to_string(runtime.device()) << "\n" << std::flush;
    const tuner::TuneSummary summary = measure_cases(runtime, store, options, args.quiet);
    print_summary(summary, store.path());
  });
}

}  // namespace sparsejit::cli
