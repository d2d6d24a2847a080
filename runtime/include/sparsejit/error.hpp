// Errors thrown by sparsejit. Every failure is a sparsejit::Error with a category and a
// message that names the offending value ("row 17: column index 4096 out of range [0, 4096)").
#pragma once
#include <stdexcept>
#include <string>

namespace sparsejit {

enum class ErrorCategory {
  InvalidInput,  // the caller's data or arguments are wrong (bad file, bad shape, bad index)
  Unsupported,   // valid request that this build/device cannot serve (no GPU, dtype, arch)
  Cuda,          // a CUDA driver, runtime or library call failed
  Compile,       // NVRTC rejected a rendered kernel (the log is in the message)
  Io,            // a file could not be opened, read or written
};

const char* to_string(ErrorCategory category);

class Error : public std::runtime_error {
 public:
  Error(ErrorCategory category, const std::string& message)
      : std::runtime_error(message), category_(category) {}
  ErrorCategory category() const { return category_; }

 private:
  ErrorCategory category_;
};

// One subclass per category so callers can catch what they can handle.
#define SPARSEJIT_ERROR_KIND(Name, Cat)                                          \
  class Name : public Error {                                                    \
   public:                                                                       \
    explicit Name(const std::string& message) : Error(ErrorCategory::Cat, message) {} \
  };
SPARSEJIT_ERROR_KIND(InvalidInputError, InvalidInput)
SPARSEJIT_ERROR_KIND(UnsupportedError, Unsupported)
SPARSEJIT_ERROR_KIND(CudaError, Cuda)
SPARSEJIT_ERROR_KIND(IoError, Io)
#undef SPARSEJIT_ERROR_KIND

// A sticky CUDA error: a kernel faulted (an illegal address or instruction, a misaligned
// address, a trap, a hardware stack error, a launch timeout, ...) and the device's CUDA context
// is lost. Every later CUDA call in this process fails with the same error, on every Runtime of
// that device and in any other library using its primary context; only a new process can use
// the GPU again (docs/RELIABILITY.md). A CudaError, so code that catches those still does.
class CudaContextLostError : public CudaError {
 public:
  using CudaError::CudaError;
};

// A compile error also carries the NVRTC log and the rendered source it refers to.
class CompileError : public Error {
 public:
  CompileError(const std::string& message, std::string log, std::string source)
      : Error(ErrorCategory::Compile, message), log_(std::move(log)), source_(std::move(source)) {}
  const std::string& log() const { return log_; }
  const std::string& source() const { return source_; }

 private:
  std::string log_;
  std::string source_;
};

}  // namespace sparsejit
