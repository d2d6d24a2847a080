// `sparsejit tune --op spgemm`: times every SpGEMM variant the planner offers on this GPU and
// fits the SpGEMM model's cost coefficients to the times (tuner/spgemm_fit.hpp has the fit).
//
// Inputs: the square matrices of a directory (every file below it, so the shared folder's
// graphs/ too, as `bench` takes a directory; files are tuned up to tuner::kMaxFileNnz nonzeros,
// as `tune --op spmm`'s) and a generated set of 1-4 M nonzeros each (the shapes of bench's
// SpGEMM runs, smaller: uniform, band, clustered, R-MAT, block diagonal with and without
// noise); --quick: three tiny generated ones and short timing, no directory.
//
// Per input and value type, C = A·A: one automatic call gives the Decision, whose candidates
// not rejected are the variants timed and whose terms each timing is priced with; each is
// then forced with its candidate's parameters and timed as `bench --op spgemm` times it
// (cli/spgemm_timer.hpp: an untimed call, then events around the host's whole call, 2 warm-up
// and 10 timed calls, --quick 1 and 3, the median). A variant unsupported for the input is
// skipped and said so; one that fails otherwise is left out with its error (a lost CUDA
// context ends the run). The products are not checked against the CPU reference here: `bench
// --op spgemm --check` and the GPU suites check every variant.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_store.hpp"
#include "sparsejit/types.hpp"

namespace sparsejit::cli {

struct SpgemmTuneConfig {
  std::vector<std::string> inputs;  // files and gen: specs (cli/matrix_input.hpp), in the order timed
  std::vector<std::string> names;   // what the report and the model call each input
  std::vector<DType> dtypes;
  bool quick = false;
  uint64_t seed = 1;  // of the generated matrices and of the files' random values
  std::optional<std::string> write_models_dir;
  bool quiet = false;
};

// The generated set (quick or full) and, when given, every matrix file below `matrices_dir`
// (IoError naming it when it is not a directory); `dtypes`: f32 and f64 only (tune's
// parse_dtypes), none meaning f32.
SpgemmTuneConfig spgemm_tune_config(const std::optional<std::string>& matrices_dir, bool quick, const std::vector<DType>& dtypes);

// Measures, fits, stores the tuned model in `store` for this GPU and prints the report.
void run_spgemm_tune(const SpgemmTuneConfig& config, cache::CacheStore& store);

}  // namespace sparsejit::cli
