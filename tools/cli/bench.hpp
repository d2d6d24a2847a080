// `sparsejit bench`: our runtime and the vendor (cuSPARSE) measured side by side in one process.
// bench.cpp parses the command and walks the inputs, bench_measure.cpp times one (matrix, K),
// bench_report.cpp prints the closing table and the per-K summary.
//
// One (matrix, K) gives one JSON record (ordered_json: its fields keep a fixed, readable order;
// tools/bench/README.md writes the line format down). The report reads the same records, so
// what the table shows is what the JSON lines hold.
#pragma once
#include <cstdint>
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
  uint64_t seed = 1;
};

// One of our variants with fixed parameters, measured by forcing it (Options::variant/params).
struct ForcedCandidate {
  std::string variant;
  nlohmann::json params = nlohmann::json::object();  // empty: the planner's defaults
  // The key in the record's "variants": the name, followed by the parameters when forced.
  std::string label() const;
};

// Everything --variants all measures for `op`, in one place: every variant the op's planner
// knows except "cusparse" (the vendor is measured on its own, algorithm by algorithm), each
// with its default parameters. When the planners expose search spaces, the (variant, params)
// points of those spaces are added here.
std::vector<ForcedCandidate> forced_candidates(Op op);

// Times auto, the forced candidates (with --variants all) and the vendor for one matrix and one
// K, checks them with --check, and returns the record (without "device", "date" and "matrix",
// which the caller adds). T: float or double. Errors other than a variant's UnsupportedError
// propagate; `failures` receives one line per forced variant or check that failed.
template <class T>
nlohmann::ordered_json measure(Runtime& rt, const vendor::CusparseHandle& handle, const Csr<T>& a, int32_t k,
                       const Config& config, std::vector<std::string>& failures);

// The closing table (one line per record) and the per-K summary.
void print_report(std::ostream& out, const std::vector<nlohmann::ordered_json>& records);

}  // namespace sparsejit::cli::bench
