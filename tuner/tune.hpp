// `sparsejit tune`: measure every candidate of the op's search space on the training set,
// store every measurement as a tuning record the moment it is taken (an interrupted run
// loses nothing), then train the tuned model and store it in the cache database.
//
// For each matrix, value type and K (one "case"): the candidate first runs once and its
// output is compared with the CPU reference (relative L2 error at most 1e-4 for f32, 1e-10
// for f64); a wrong output or an error of the candidate is recorded as a failed record
// (checked = false) and the candidate is not timed. A correct candidate is timed with
// time_on_stream over rotated operand sets. Unless `restart`, candidates this device
// already has records for in the same case are not measured again (their records are
// reused for training). A CUDA error that leaves the context unusable ends the run.
//
// The CPU reference is computed once per case, before its candidates; each candidate's
// checked run is compared with it.
//
// Each measurement carries the cost terms its candidate was priced with at its own params
// (Measurement::terms): those of the checked run's Decision, or, for a record reused from an
// earlier run, of the planner run on the CPU with the same forced Options. The cost
// coefficients are fitted on them (calibrate_costs).
//
// Progress: one TuneStep per case to `report`, its line "[12/40] cyl6 K=128 f32: best rs ...
// panel_width=512 threshold=8 ... 0.031 ms (18 candidates)", and one per matrix skipped. The
// caller prints the lines: `sparsejit tune` puts them on stdout and keeps a progress line with
// an ETA on stderr, which it must erase before each line and draw again after.
//
// Run time. Every candidate of the planner's search space is measured (no reduced grid, also
// with `quick`: quick means three tiny matrices, K as given and 2 + 5 timed runs). SpMM f32
// spaces hold 20-22 candidates per case at K = 32 and 128 (up to ~100 at K = 512 or f64).
// Measured on the H200: a quick SpMM tune at K = 32 took under 1 s (60 candidates), a
// quick SDDMM tune 4.3 s (381 candidates). Estimated for a full `tune --op spmm --k 32,128`
// over the generated set, the two calibration matrices and the 87 shared matrices: 206
// cases, ~4300 candidates; per candidate 5 warm-up + 20 timed runs of 10-500 us plus one
// checked run (C downloaded and compared), the CPU reference once per case, split
// statistics once per (handle, W, T): about 10 s of host work (2 cores), 5-10 s of kernels,
// ~10 s of NVRTC compiles on a cold cache, so one to two minutes in all, well within the
// 8 minutes a tuning run may take; a time budget is not needed for SpMM. (A full SDDMM tune
// measures ~130 candidates per case, about ten times as many.)
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache_store.hpp"
#include "sparsejit/decision.hpp"
#include "sparsejit/runtime.hpp"
#include "tuner/train.hpp"

namespace sparsejit::tuner {

struct TuneOptions {
  Op op = Op::SpMM;
  std::optional<std::string> matrices_dir;   // files to add to the generated set; nullopt: none
  bool quick = false;                        // three tiny matrices, short timing, no calibration
  bool restart = false;                      // measure again what this device already has records for
  std::vector<int32_t> ks = {32, 128};
  std::vector<DType> dtypes = {DType::F32};  // f32 and/or f64
  std::optional<std::string> write_models_dir;  // also write the tuned model as DIR/<op>.json
  uint64_t seed = 1;
};

struct TuneSummary {
  int cases = 0;
  int measured = 0;   // candidates run now
  int reused = 0;     // candidates whose records were already there
  int failed = 0;     // candidates recorded as failed now
  TrainedModel trained;
  std::string model_file;  // written file, when write_models_dir was given
};

// One step of a run, as reported: a case measured, or a matrix whose cases are all skipped.
struct TuneStep {
  std::string line;       // what to show: the case's result, or why the matrix is skipped
  std::string item;       // the case, "cyl6 K=128 f32", or the skipped matrix's name
  int cases = 1;          // cases this step finishes
  bool measured = true;   // false: skipped, nothing run
  int total = 0;          // cases in the whole run
};

TuneSummary tune(Runtime& runtime, cache::CacheStore& store, const TuneOptions& options,
                 const std::function<void(const TuneStep&)>& report);

// Writes `model` as DIR/<op>.json (created as needed; IoError when it cannot be written) and
// returns the file's path: --write-models, to ship a tuned model as a default.
std::string write_model_file(const std::string& dir, Op op, const nlohmann::json& model);

}  // namespace sparsejit::tuner
