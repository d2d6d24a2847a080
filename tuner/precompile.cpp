#include "tuner/precompile.hpp"

#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "formats/sddmm_dense_tiles.hpp"
#include "ops/plan_sources.hpp"
#include "sparsejit/error.hpp"
#include "sparsejit/features.hpp"
#include "tuner/search_space.hpp"
#include "tuner/training_set.hpp"
#include "variants/sddmm/sddmm_variant.hpp"
#include "variants/spmm/spmm_variant.hpp"

namespace sparsejit::tuner {

namespace {

// Compiles kernels once per distinct cache key and counts what it did.
class KernelTally {
 public:
  KernelTally(jit::Compiler& compiler, int sm, PrecompileSummary& summary) : compiler_(compiler), sm_(sm), summary_(summary) {}

  void compile(const std::vector<jit::KernelSpec>& specs) {
    for (const jit::KernelSpec& spec : specs) {
      const jit::CompiledKernel k = compiler_.get_kernel(spec, sm_);
      if (!seen_.insert(k.key.to_string() + "|" + k.kernel_name).second) continue;
      ++summary_.kernels;
      ++(k.source == cache::KernelSource::Compiled ? summary_.compiled : summary_.cached);
    }
  }

 private:
  jit::Compiler& compiler_;
  int sm_;
  PrecompileSummary& summary_;
  std::set<std::string> seen_;
};

// One matrix at one value type and K: what each op plans for it.
struct PlanCase {
  PatternView pattern;
  const Features& features;
  int32_t k;
  DType dtype;
  const PrecompileOptions& options;
};

bool wanted(const PrecompileOptions& o, const std::string& variant) {
  return o.variants.empty() || std::find(o.variants.begin(), o.variants.end(), variant) != o.variants.end();
}

// The options that force `variant` at `params`, run as the tuner runs it.
Options forced_setting(Op op, const std::string& variant, const nlohmann::json& params) {
  Options forced;
  forced.variant = variant;
  forced.params = params;
  forced.reuse = reuse_for(op, variant);
  return forced;
}

// The planner's own choice (no variant forced) and every setting of the search space, each as
// the options that plan it; settings of unwanted variants are left out before planning.
std::vector<Options> settings_of(Op op, const std::vector<SearchCandidate>& space, const PrecompileOptions& o) {
  std::vector<Options> settings = {Options{}};
  for (const SearchCandidate& c : space)
    if (wanted(o, c.variant)) settings.push_back(forced_setting(op, c.variant, c.params));
  return settings;
}

std::string setting_label(const Options& o, const PlanCase& c) {
  return (o.forces_variant() ? o.variant + " " + o.params.dump() : std::string("auto")) + " K=" + std::to_string(c.k) + " " +
         to_string(c.dtype);
}

// What an op gives compile_settings: how to plan a setting, the kernels a decision needs, and
// the settings next to one (what measured selection's second round times).
struct OpPlanning {
  Op op;
  std::function<Decision(const Options&)> plan;
  std::function<std::vector<jit::KernelSpec>(const Decision&)> specs;
  std::function<std::vector<plan::TimedChoice>(const std::string& variant, const nlohmann::json& params)> neighbours;
};

// Plans every setting and compiles the kernels of each decision of a wanted variant, then what
// measured selection times besides: the priced candidates of the planner's own choice (its
// shortlist) and their neighbours (its second round; without them a neighbour's first timing
// waited for NVRTC, 113 ms of a 215 ms selection on the H100). Neighbours of every setting of
// the search space would be 1353 kernels in 765 s on two cores instead of 307 in 118 s.
// A setting that fails is a failure line, not the end of the run.
void compile_settings(const std::vector<Options>& settings, const PlanCase& c, KernelTally& tally, PrecompileSummary& summary,
                      const OpPlanning& op) {
  std::set<std::string> planned;
  std::vector<Options> shortlist, neighbours;
  const auto compile = [&](const Options& o) -> std::optional<Decision> {
    if (!planned.insert(o.variant + o.params.dump()).second) return std::nullopt;
    try {
      Decision d = op.plan(o);
      if (wanted(c.options, d.variant)) tally.compile(op.specs(d));
      return d;  // the planner's choice of an unwanted variant still names wanted candidates
    } catch (const Error& e) {
      summary.failures.push_back(setting_label(o, c) + ": " + e.what());
      return std::nullopt;
    }
  };
  for (const Options& o : settings) {
    const std::optional<Decision> d = compile(o);
    if (!d || o.forces_variant()) continue;
    for (const Candidate& cand : d->candidates)
      if (cand.rejected_because.empty() && wanted(c.options, cand.variant))
        shortlist.push_back(forced_setting(op.op, cand.variant, cand.params));
  }
  planned.clear();  // a shortlisted setting already compiled still has neighbours to compile
  for (const Options& o : shortlist) {
    const std::optional<Decision> d = compile(o);
    if (!d || !wanted(c.options, d->variant)) continue;
    for (const plan::TimedChoice& n : op.neighbours(d->variant, d->params)) neighbours.push_back(forced_setting(op.op, n.variant, n.params));
  }
  for (const Options& o : neighbours) compile(o);
}

void spmm_kernels(const PlanCase& c, KernelTally& tally, PrecompileSummary& summary) {
  const plan::DeviceTarget& target = c.options.target;
  const plan::SpmmProblem problem{c.k, c.dtype, false, c.k, c.k};
  std::map<std::pair<int32_t, int32_t>, SplitStats> splits;  // the same (W, T) recur across settings
  const plan::SplitStatsSource split = [&](int32_t w, int32_t t) {
    auto it = splits.find({w, t});
    if (it == splits.end()) it = splits.emplace(std::make_pair(w, t), row_segment_split(c.pattern, w, t)).first;
    return it->second;
  };
  const plan::PlanSources sources = ops::plan_sources(Op::SpMM, target);
  compile_settings(settings_of(Op::SpMM, spmm_candidates(c.features, problem, target), c.options), c, tally, summary,
                   {Op::SpMM, [&](const Options& o) { return plan::plan_spmm(c.features, problem, target, o, split, sources); },
                    [&](const Decision& d) { return variants::SpmmRegistry::find(d.variant)->kernel_specs(d, problem); },
                    [&](const std::string& v, const nlohmann::json& p) { return plan::spmm_neighbors(v, p, problem, target); }});
}

void sddmm_kernels(const PlanCase& c, KernelTally& tally, PrecompileSummary& summary) {
  const plan::DeviceTarget& target = c.options.target;
  plan::SddmmProblem problem{c.k, c.dtype, c.k, c.k};
  problem.tile_count = formats::tile_counter(c.pattern);
  const plan::PlanSources sources = ops::plan_sources(Op::SDDMM, target);
  compile_settings(settings_of(Op::SDDMM, sddmm_candidates(c.features, problem, target), c.options), c, tally, summary,
                   {Op::SDDMM, [&](const Options& o) { return plan::plan_sddmm(c.features, problem, target, o, sources); },
                    [&](const Decision& d) { return variants::sddmm_variant(d.variant).kernel_specs(d, problem, target); },
                    [&](const std::string& v, const nlohmann::json& p) { return plan::sddmm_neighbors(v, p, problem, target); }});
}

void check(const PrecompileOptions& o) {
  if (o.ks.empty()) throw InvalidInputError("tune --precompile: no K given");
  for (int32_t k : o.ks)
    if (k < 1) throw InvalidInputError("tune --precompile: K = " + std::to_string(k) + " must be >= 1");
  for (DType t : o.dtypes)
    if (t != DType::F32 && t != DType::F64)
      throw InvalidInputError(std::string("tune --precompile: value type ") + to_string(t) + " has no kernels (f32 and f64 do)");
  for (Op op : o.ops)
    if (op != Op::SpMM && op != Op::SDDMM)
      throw InvalidInputError(std::string("tune --precompile: ") + to_string(op) + " is not precompiled (spmm and sddmm are)");
}

}  // namespace

PrecompileSummary precompile(jit::Compiler& compiler, const PrecompileOptions& options, std::ostream& progress) {
  check(options);
  const auto start = std::chrono::steady_clock::now();
  PrecompileSummary summary;
  KernelTally tally(compiler, options.target.sm, summary);
  for (const TrainingMatrix& m : generated_training_matrices(options.quick, options.seed)) {
    const Features features = inspect(m.matrix.pattern());
    for (Op op : options.ops) {
      const int before = summary.kernels;
      for (DType dtype : options.dtypes)
        for (int32_t k : options.ks) {
          const PlanCase c{m.matrix.pattern(), features, k, dtype, options};
          op == Op::SpMM ? spmm_kernels(c, tally, summary) : sddmm_kernels(c, tally, summary);
        }
      progress << to_string(op) << " " << m.name << ": " << summary.kernels - before << " new kernels (" << summary.kernels
               << " in all)\n" << std::flush;
    }
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace sparsejit::tuner
