// `sparsejit soak`: many threads calling a few shared Runtimes with mixed operations, shapes,
// K and value types for a set time, every result checked against the CPU reference, process
// RSS and device memory sampled throughout (issue 27's soak). soak.cpp runs it and reports,
// soak_calls.cpp makes and checks one call, soak_memory.cpp samples memory and judges growth
// (pure, so tests check it on hand-made series).
#pragma once
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "sparsejit/decision.hpp"
#include "sparsejit/runtime.hpp"

namespace sparsejit::cli::soak {

// ---- One call -------------------------------------------------------------------------------

// What one iteration of a soak thread runs: drawn by draw_problem, run by run_checked.
struct Problem {
  Op op = Op::SpMM;
  DType dtype = DType::F32;
  std::string shape;  // a generator spec (SpMM, SDDMM, SpGEMM) or "algebraic:N" / "exponential:N" (SpAMM)
  int32_t k = 0;      // SpMM and SDDMM
  bool transpose = false;  // SpMM: Aᵀ·B; SpGEMM: A·Aᵀ
  // SpAMM: the tile, the share of tile products kept (1: τ = 0) and the precision.
  int32_t tile = 0;
  double keep_share = 1;
  SpammPrecision precision = SpammPrecision::Full;
  int runtime = 0;          // the runtime of the first call
  bool again = false;       // a second call on the same handles with new values (plan reuse, measured selection)
  int second_runtime = 0;   // the runtime of that second call
  uint64_t seed = 0;        // of the pattern and every value
};
std::string describe(const Problem& problem);

// A problem from the soak's fixed mix: op, value type, shape, K and options uniformly at
// random (soak_calls.cpp lists the mix), fresh seeds every draw.
Problem draw_problem(std::mt19937_64& rng, int runtimes);

// Runs `problem` on runtimes[problem.runtime] (its second call on runtimes[problem.second_runtime])
// on `stream`, each output poisoned first and compared with the CPU reference. Returns the
// number of calls made; throws Mismatch when a result is off, sparsejit::Error when a call fails.
int run_checked(const std::vector<Runtime*>& runtimes, const Problem& problem, const Stream& stream);

struct Mismatch : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---- Memory over time -----------------------------------------------------------------------

struct MemorySample {
  double seconds = 0;        // since the start
  int64_t calls = 0;         // checked calls so far, every thread
  int64_t rss_bytes = 0;     // VmRSS of this process
  int64_t device_bytes = 0;  // the device's used memory (total - free, cuMemGetInfo)
};

// This process's resident set (/proc/self/status VmRSS), in bytes; 0 where it cannot be read.
int64_t resident_bytes();

// Whether one quantity grew: after `warmup_seconds` (JIT compiles, module loads, plan caches
// and memory pools filling up), the mean over the first tenth of what remains (the baseline)
// against the mean over the last tenth (final). It grew when final - baseline exceeds the
// limit: max(floor_bytes, 10% of the baseline). judged is false when fewer than two samples
// follow the warm-up (then grew is false too).
struct Growth {
  bool judged = false;
  bool grew = false;
  double baseline = 0, final = 0, limit = 0;
  int64_t first = 0, last = 0, max = 0;  // over every sample
};
Growth judge_growth(const std::vector<MemorySample>& samples, int64_t MemorySample::*quantity, double warmup_seconds,
                    int64_t floor_bytes);

// The floors (soak.cpp's help and docs/RELIABILITY.md give the reasons).
constexpr int64_t kRssFloorBytes = int64_t(128) << 20;
constexpr int64_t kDeviceFloorBytes = int64_t(256) << 20;

}  // namespace sparsejit::cli::soak
