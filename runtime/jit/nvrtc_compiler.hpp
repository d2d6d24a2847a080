// Compiling rendered CUDA source to CUBIN with NVRTC for one exact architecture.
//
// Options, in the normalized form that is also part of the cache key:
//   -std=c++17        always
//   -default-device   always (helpers need no __device__)
//   --use_fast_math   off unless the caller passes it
//   extra options     sorted and deduplicated with the above
// Added at compile time and not part of the normalized form (they have their own key
// columns or do not change the binary): --gpu-architecture=sm_XY (or sm_XYa) and -I<CUDA include dir>.
#pragma once
#include <string>
#include <vector>

#include "base/nvrtc_target.hpp"  // arch_name, nvrtc_version

namespace sparsejit::jit {

struct CompileResult {
  std::vector<char> cubin;           // an ELF image for exactly the requested sm
  std::string log;                   // NVRTC's log (warnings), may be empty
  std::vector<std::string> options;  // every option passed to NVRTC, in order
  double compile_ms = 0;             // wall time of nvrtcCompileProgram + retrieval
};

// The normalized option set for these extra options. InvalidInputError for an option the
// compiler owns (-std, -arch / --gpu-architecture, -I / --include-path).
std::vector<std::string> normalize_options(const std::vector<std::string>& extra);
// Normalized options as one string (space separated), as stored in the cache key.
std::string options_string(const std::vector<std::string>& normalized);

// Where cuda_fp16.h lives: $CUDA_HOME/include, $CUDA_PATH/include, /usr/local/cuda/include,
// then the toolkit this library was built against; "" if none has it (NVRTC's built-in
// headers may still suffice).
std::string cuda_include_dir();

// Compiles source (named program_name in NVRTC's messages) for sm (sm_XYa when
// arch_specific). On failure throws
// CompileError whose message holds the log, each referenced source line as
// "line N: <text>", the options, and the path the source was written to.
CompileResult compile_to_cubin(const std::string& source, const std::string& program_name, int sm,
                               const std::vector<std::string>& normalized_options, bool arch_specific = false);

}  // namespace sparsejit::jit
