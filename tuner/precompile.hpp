// `sparsejit tune --precompile`: compile into the cache, ahead of any call, the kernels the
// planners can pick on one arch, so that steady state (and measured selection's shortlists)
// never waits for NVRTC. NVRTC needs no GPU: a machine without one compiles for the nominal
// sm_90 part (or the arch given).
//
// What "can pick" means here: for every matrix of the tuner's generated training set (the
// quick set with `quick`), value type and K, every setting of the op's search space (what
// forced and tuned choices draw from), the planner's own choice, each priced candidate of that
// choice (measured selection's shortlist) and each candidate's neighbours (its second round),
// each planned as a forced choice on the CPU; every kernel of each plan (the variant's
// kernel_specs) is compiled, once per distinct cache key. The vendor variants compile nothing.
// Not covered: neighbours of a tuned choice outside the shortlist (every setting's neighbours
// would be 1353 kernels instead of 307).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "jit/compiler.hpp"
#include "plan/planner.hpp"
#include "sparsejit/decision.hpp"

namespace sparsejit::tuner {

struct PrecompileOptions {
  std::vector<Op> ops = {Op::SpMM, Op::SDDMM};
  std::vector<int32_t> ks = {32, 64, 128, 512};
  std::vector<DType> dtypes = {DType::F32};
  bool quick = false;                 // the three tiny generated matrices only
  std::vector<std::string> variants;  // only these variants' kernels; empty: every variant
  plan::DeviceTarget target;          // the device planned and compiled for (its sm)
  uint64_t seed = 1;
};

struct PrecompileSummary {
  int kernels = 0;   // distinct kernels (cache keys) the plans need
  int compiled = 0;  // of them, compiled now by NVRTC
  int cached = 0;    // found in the cache (memory or database)
  std::vector<std::string> failures;  // "variant {params} K=.. f32: why", a setting that did not plan or compile
  double seconds = 0;
};

// Throws InvalidInputError naming an empty K list, a K below 1, a value type without kernels
// or an op other than spmm and sddmm.
PrecompileSummary precompile(jit::Compiler& compiler, const PrecompileOptions& options, std::ostream& progress);

}  // namespace sparsejit::tuner
