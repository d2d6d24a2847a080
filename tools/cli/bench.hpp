// `sparsejit bench`: our runtime and the vendor (cuSPARSE) measured side by side in one process.
// bench.cpp parses the command and walks the inputs, bench_measure.cpp times one (matrix, K),
// bench_reuse.cpp turns the SDDMM pattern-reuse times into the record's "reuse" object, and
// bench_report.cpp prints the closing table and the per-K summary.
//
// One (matrix, K) gives one JSON record (ordered_json: its fields keep a fixed, readable order;
// bench/README.md writes the line format down). The report reads the same records, so
// what the table shows is what the JSON lines hold.
#pragma once
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparsejit/decision.hpp"
#include "sparsejit/matrix.hpp"
#include "sparsejit/runtime.hpp"
#include "sparsejit/types.hpp"
#include "tuner/measure.hpp"
#include "vendor/cusparse_handle.hpp"

namespace sparsejit::cli::bench {

// The validated command line.
struct Config {
  Op op = Op::SpMM;
  std::vector<int32_t> ks;
  DType dtype = DType::F32;
  tuner::TimingOptions timing;
  bool all_variants = true;  // --variants all: also force each of our variants (the oracle)
  bool transpose = false;    // SpMM only: C = Aᵀ·B
  bool check = false;
  bool reuse = true;  // SDDMM only: the "reuse" record (off with --no-reuse)
  uint64_t seed = 1;
  double time_limit_s = std::numeric_limits<double>::infinity();  // --time-limit: start no item past it
  Options measure;  // auto's measuring limits (measure_skip_margin, measure_budget_ms, measure_budget_calls); nothing else is read
};

// The fastest of several named times.
struct Fastest {
  std::string name;
  double ms = std::numeric_limits<double>::infinity();
  void offer(const std::string& candidate, double candidate_ms) {
    if (candidate_ms < ms) {
      name = candidate;
      ms = candidate_ms;
    }
  }
  bool found() const { return !name.empty(); }
};

// One of our variants with fixed parameters, measured by forcing it (Options::variant/params).
struct ForcedCandidate {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();  // empty: the planner's defaults
  // The key in the record's "variants": the name, followed by the parameters when forced.
  std::string label() const;
};

// Everything --variants all measures for `op`, in one place: every variant the op's planner
// knows, each with its default parameters; the vendor-backed one only `with_vendor_variant`
// (SpMM and SDDMM time the vendor's bare call algorithm by algorithm besides, and the runtime's
// vendor variant may add work to it; SpGEMM's vendor entry is that variant itself).
std::vector<ForcedCandidate> forced_candidates(Op op, bool with_vendor_variant);

// Times auto, the forced candidates (with --variants all) and the vendor for one matrix and one
// K, checks them with --check, and returns the record (without "device", "date" and "matrix",
// which the caller adds). T: float or double. Errors other than a variant's UnsupportedError
// propagate; `failures` receives one line per forced variant or check that failed.
template <class T>
nlohmann::ordered_json measure(Runtime& rt, const vendor::CusparseHandle& handle, const Csr<T>& a, int32_t k,
                       const Config& config, std::vector<std::string>& failures);

// SpGEMM C = A·A for a square `a` (bench_spgemm.cpp): auto, the forced variants (with
// --variants all) and cuSPARSE's whole call, each an event pair around the host's call (the
// call synchronizes once, so no graph), with products, NNZ(C), GFLOP/s at 2 flops a product,
// and the check with --check. UnsupportedError when `a` is not square.
template <class T>
nlohmann::ordered_json measure_spgemm(Runtime& rt, const Csr<T>& a, const Config& config, std::vector<std::string>& failures);

// SDDMM pattern reuse (bench_reuse.cpp; pure, so tests check it on hand-made numbers).
//
// The variant that needs a per-pattern preprocessing, admitted only for reused patterns: the
// registered SDDMM variant with Traits::needs_reuse (the first by rank, were there several).
const std::string& reuse_variant();

// How many calls on one pattern it takes before preprocessing once (`prepare_ms`) and then
// running at `reindexed_ms` per call costs no more than running at `without_reuse_ms` every
// call: the least N >= 1 with prepare_ms + N·reindexed_ms <= N·without_reuse_ms. nullopt when
// the reindexed variant is not faster (it never pays off) or a time is not finite.
std::optional<int64_t> pays_off_after_calls(double prepare_ms, double without_reuse_ms, double reindexed_ms);

// The fastest choice a caller has without declaring reuse, from a record's "auto" (planned
// with Reuse::Once on handles that had served no call), "variants" (every forced candidate
// but reuse_variant()) and "vendor" best (named cusparse:ALG).
Fastest best_without_reuse(const nlohmann::ordered_json& record);

// What the reuse measurement timed; a missing time is nullopt (the reindexed variant
// unsupported or failed for this problem).
struct ReuseTimes {
  std::optional<double> first_call_ms;  // host wall-clock of the first Reuse::Many call on a fresh handle
  std::optional<double> reindexed_ms;   // steady state of one reuse_variant() call
  double auto_reuse_ms = 0;             // auto with Reuse::Many
  std::string auto_reuse_variant;
};

// The record's "reuse" object: {first_call_ms, prepare_ms, reindexed_ms, without_reuse_ms,
// without_reuse_variant, auto_reuse_ms, auto_reuse_variant, pays_off_after_calls}, where
// prepare_ms = max(0, first_call_ms - reindexed_ms); unknown values are null.
nlohmann::ordered_json reuse_record(const ReuseTimes& times, const Fastest& without_reuse);

// The closing table (one line per record) and the per-K summary (with the SDDMM reuse line
// where records hold "reuse").
void print_report(std::ostream& out, const std::vector<nlohmann::ordered_json>& records);

// Host wall-clock ms of `call` between two synchronizations of `context`.
template <class Call>
double synchronized_ms(const Context& context, Call&& call) {
  context.synchronize();
  const auto start = std::chrono::steady_clock::now();
  call();
  context.synchronize();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace sparsejit::cli::bench
