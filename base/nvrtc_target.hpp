// What a compiled kernel is built for, as the compile cache records it: the NVRTC release this
// process uses and the sm name of the target architecture. Both the JIT (which compiles) and
// the cache (which keys and explains entries) need them, so they live below both.
#pragma once
#include <string>

namespace sparsejit {

// "sm_90" for 90, "sm_90a" with arch_specific; InvalidInputError outside [50, 1000).
std::string arch_name(int sm, bool arch_specific = false);
// The NVRTC this process uses, "major.minor" ("unknown" if NVRTC cannot say).
std::string nvrtc_version();

}  // namespace sparsejit
