// `sparsejit bench --op spamm`: SpAMM on decay matrices (A = B, as in cuSpAMM's evaluation)
// at target shares of kept tile products, auto and each forced path against cuBLAS's GEMM of
// the same precision class, in one process. One JSON line per (N, decay, precision, operands,
// share, path) on stdout (and --json-out), a table on stderr. The timed call takes the τ the
// search found (the multiplication alone: norms, selection, kernels); the search is timed
// apart and put next to it with the share it reached; auto is also timed as a caller asking for
// the share makes it (the search inside; cuBLAS, when taken from the share, overlapping it). Every set is selectable, so one device
// call can run a subset.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "cli/progress.hpp"
#include "sparsejit/spamm.hpp"
#include "sparsejit/types.hpp"
#include "tuner/measure.hpp"

namespace sparsejit::cli::bench {

struct SpammConfig {
  std::vector<int32_t> sizes;              // N of the N×N inputs
  std::vector<std::string> decays;         // "algebraic" (0.1/(|i-j|^0.1+1)) | "exponential" (0.995^|i-j|)
  std::vector<double> ratios;              // target shares of kept tile products, in (0, 1]
  std::vector<SpammPrecision> precisions;
  std::vector<std::string> paths;          // "auto" and variant names
  // "value": A and B in dtype (fp16/bf16 convert f32 inside the call); "16bit": fp16/bf16
  // operands handed over as half/bfloat16 (host-converted, like the baseline's).
  std::vector<std::string> operands;
  DType dtype = DType::F32;
  int32_t tile = 0;                        // 0: the planner's
  tuner::TimingOptions timing;
  // GPUs auto also runs on (SpammOptions::devices; {-1}: all): empty, one GPU only.
  std::vector<int> devices;
};

// Parses the comma-separated lists (InvalidInputError naming a bad item): sizes in [64, 65536],
// ratios in percent (0, 100], precisions full|tf32|fp16|bf16, paths auto or a spamm variant,
// operands value|16bit (16bit with f32 only), devices "" | all | ordinals.
SpammConfig spamm_config(const std::string& sizes, const std::string& decays, const std::string& ratios,
                         const std::string& precisions, const std::string& paths, const std::string& operands,
                         const std::string& dtype, int32_t tile,
                         const tuner::TimingOptions& timing, const std::string& devices = "");

// Runs every combination; returns false when any failed (each failure printed on stderr).
// Progress in `style` (cli/progress.hpp): one item per (N, decay, precision, operands, share).
bool run_spamm(const SpammConfig& config, std::ostream* json_out, ProgressStyle style);

}  // namespace sparsejit::cli::bench
