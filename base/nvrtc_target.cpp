#include "base/nvrtc_target.hpp"

#include <nvrtc.h>

#include "sparsejit/error.hpp"

namespace sparsejit {

std::string arch_name(int sm, bool arch_specific) {
  if (sm < 50 || sm >= 1000) {
    throw InvalidInputError("compute capability " + std::to_string(sm) + " is not a valid sm (expected e.g. 80, 90)");
  }
  return "sm_" + std::to_string(sm) + (arch_specific ? "a" : "");
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace sparsejit
