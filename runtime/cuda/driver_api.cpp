#include "cuda/driver_api.hpp"

#include <dlfcn.h>

#include <cstring>

#include "sparsejit/error.hpp"

namespace sparsejit::cuda {
namespace {

constexpr const char* kLibrary = "libcuda.so.1";
constexpr const char* kConsequence = ": GPU work is unavailable; info, inspect and explain still work";

// Drivers older than CUDA 13 export some functions only under their earlier name with the
// same signature; those are tried when the newer symbol is missing.
const char* older_symbol(const char* name) {
  if (std::strcmp(name, "cuEventElapsedTime_v2") == 0) return "cuEventElapsedTime";
  return nullptr;
}

void* resolve(void* library, const char* name) {
  if (void* symbol = dlsym(library, name)) return symbol;
  if (const char* older = older_symbol(name)) return dlsym(library, older);
  return nullptr;
}

struct LoadedDriver {
  DriverApi api;
  bool available = false;
  std::string reason;
};

std::string result_text(const DriverApi& api, CUresult result) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(result, &name) != CUDA_SUCCESS) name = nullptr;
  if (api.cuGetErrorString == nullptr || api.cuGetErrorString(result, &text) != CUDA_SUCCESS) text = nullptr;
  std::string out = name ? name : "CUDA error " + std::to_string(int(result));
  if (text) out += std::string(" (") + text + ")";
  return out;
}

// Fills loaded.api from the library; returns the first missing symbol or "".
std::string resolve_all(void* library, DriverApi& api) {
#define SPARSEJIT_RESOLVE(name)                                                  \
  api.name = reinterpret_cast<decltype(api.name)>(resolve(library, #name));      \
  if (api.name == nullptr) return #name;
  SPARSEJIT_DRIVER_FUNCTIONS(SPARSEJIT_RESOLVE)
#undef SPARSEJIT_RESOLVE
  return "";
}

LoadedDriver load_driver() {
  LoadedDriver loaded;
  // Never dlclose'd: driver objects may be released during static destruction.
  void* library = dlopen(kLibrary, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    loaded.reason = std::string("no CUDA driver (") + kLibrary + " not found)" + kConsequence;
    return loaded;
  }
  const std::string missing = resolve_all(library, loaded.api);
  if (!missing.empty()) {
    loaded.reason = "CUDA driver too old (" + std::string(kLibrary) + " has no " + missing + ")" + kConsequence;
    return loaded;
  }
  if (const CUresult r = loaded.api.cuInit(0); r != CUDA_SUCCESS) {
    loaded.reason = "no usable CUDA device (cuInit failed: " + result_text(loaded.api, r) + ")" + kConsequence;
    return loaded;
  }
  int count = 0;
  if (const CUresult r = loaded.api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    loaded.reason = "no usable CUDA device (cuDeviceGetCount failed: " + result_text(loaded.api, r) + ")" + kConsequence;
    return loaded;
  }
  if (count == 0) {
    loaded.reason = std::string("no CUDA device (the driver reports 0 devices)") + kConsequence;
    return loaded;
  }
  loaded.available = true;
  return loaded;
}

const LoadedDriver& loaded_driver() {
  static const LoadedDriver loaded = load_driver();
  return loaded;
}

}  // namespace

bool driver_available() { return loaded_driver().available; }

const std::string& driver_unavailable_reason() { return loaded_driver().reason; }

const DriverApi& driver() {
  const LoadedDriver& loaded = loaded_driver();
  if (!loaded.available) throw UnsupportedError(loaded.reason);
  return loaded.api;
}

std::string describe(CUresult result) { return result_text(loaded_driver().api, result); }

void check(CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return;
  fail(result, std::string(call) + " failed: " + describe(result));
}

bool is_sticky(int code) {
  switch (code) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_MPS_CLIENT_TERMINATED:
    case CUDA_ERROR_EXTERNAL_DEVICE:
    case 226:  // CUDA_ERROR_CONTAINED, which the headers of CUDA 12's first releases lack
    case 721:  // CUDA_ERROR_TENSOR_MEMORY_LEAK, likewise
      return true;
    default:
      return false;
  }
}

void fail(int code, const std::string& message) {
  if (!is_sticky(code)) throw CudaError(message);
  // The primary context is shared by every Runtime on the device, cuSPARSE, cuBLAS and the
  // caller's own CUDA code, and the CUDA runtime keeps it until the process ends: there is
  // nothing to reset in-process.
  throw CudaContextLostError(message + "; the CUDA context is lost (a sticky error: a kernel faulted or the device "
                                       "failed): every later GPU call in this process fails, restart the process");
}

}  // namespace sparsejit::cuda
