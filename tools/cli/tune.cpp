// `sparsejit tune`: installation-time tuning of this GPU (tuner/tune.hpp does the work).
#include <filesystem>
#include <iostream>

#include "cli/commands.hpp"
#include "jit/compiler.hpp"
#include "sparsejit/cache.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/runtime.hpp"
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
};

// The widths `sparsejit bench` reports for the op, so the tuned model covers them.
std::vector<int32_t> default_ks(Op op) {
  return op == Op::SpMM ? std::vector<int32_t>{32, 128, 512} : std::vector<int32_t>{32, 64, 128};
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
  o.dtypes.clear();
  for (const auto& text : args.dtypes) {
    const DType t = parse_dtype(text);
    if (t != DType::F32 && t != DType::F64) throw UnsupportedError("tune: --dtype " + text + " (f32 and f64 only)");
    o.dtypes.push_back(t);
  }
  if (!args.matrices.empty()) {
    if (!std::filesystem::is_directory(args.matrices)) throw IoError("tune: --matrices '" + args.matrices + "' is not a directory");
    o.matrices_dir = args.matrices;
  } else if (!args.generated_only && !args.quick) {
    for (const char* dir : kDefaultMatricesDirs)
      if (!o.matrices_dir && std::filesystem::is_directory(dir)) o.matrices_dir = dir;
  }
  if (!args.write_models.empty()) o.write_models_dir = args.write_models;
  return o;
}

void print_summary(const tuner::TuneSummary& s, const std::string& db) {
  std::cout << s.cases << " cases: measured " << s.measured << " candidates (" << s.failed << " failed the reference check or did not run), reused "
            << s.reused << " earlier measurements\n";
  for (const auto& note : s.trained.notes) std::cout << "  " << note << "\n";
  std::cout << "tuned model " << s.trained.model.value("id", "?") << " stored in " << db << "\n";
  if (!s.model_file.empty()) std::cout << "wrote " << s.model_file << "\n";
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("tune", "Measure this GPU's kernel variants, store tuning records and train tuned models");
  static TuneArgs args;
  cmd->add_option("--op", args.op, "Operation to tune: spmm or sddmm")->required()->check(CLI::IsMember({"spmm", "sddmm"}));
  cmd->add_option("--matrices", args.matrices, "Directory of .mtx/.smtx[.gz] files to add to the generated matrices (default: ../shared/matrices or "
                                      "shared/matrices, the first that exists; none with --quick)");
  cmd->add_flag("--generated-only", args.generated_only, "Use the generated matrices only");
  cmd->add_flag("--quick", args.quick, "Three tiny generated matrices and short timing (a smoke test)");
  auto* resume = cmd->add_flag("--resume", args.resume, "Skip candidates this device already has records for (the default)");
  cmd->add_flag("--restart", args.restart, "Measure everything again (earlier records stay, newer ones win)")->excludes(resume);
  cmd->add_option("-k,--k", args.ks, "Widths K to tune, comma separated (default: spmm 32,128,512; sddmm 32,64,128)")->delimiter(',');
  cmd->add_option("--dtype", args.dtypes, "Value types to tune, comma separated (f32, f64)")->delimiter(',')->capture_default_str();
  cmd->add_option("--write-models", args.write_models, "Also write the tuned model as DIR/<op>.json (to ship as a default)");
  cmd->add_option("--seed", args.seed, "Seed of the generated matrices and values")->capture_default_str();
  cmd->callback([] {
    const tuner::TuneOptions options = to_options(args);
    if (!cache::default_cache_dir())
      throw InvalidInputError("tune stores its results in the cache database, but SPARSEJIT_CACHE_DIR is set to \"\" (disk cache disabled)");
    Runtime runtime(0);
    std::cout << "tuning " << args.op << " on " << to_string(runtime.device()) << "\n" << std::flush;
    cache::CacheStore& store = jit::default_compiler().cache().store();
    const tuner::TuneSummary summary = tuner::tune(runtime, store, options, std::cout);
    print_summary(summary, store.path());
  });
}

}  // namespace sparsejit::cli
