#include "sparsejit/error.hpp"

namespace sparsejit {

const char* to_string(ErrorCategory category) {
  switch (category) {
    case ErrorCategory::InvalidInput: return "invalid input";
    case ErrorCategory::Unsupported: return "unsupported";
    case ErrorCategory::Cuda: return "CUDA";
    case ErrorCategory::Compile: return "compile";
    case ErrorCategory::Io: return "I/O";
  }
  return "unknown";
}

}  // namespace sparsejit
