#include "cuda/nccl.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "sparsejit/error.hpp"

namespace sparsejit::cuda {
namespace {

using Comm = void*;
using Result = int;  // ncclResult_t: 0 is ncclSuccess
constexpr int kBytes = 0;  // ncclDataType_t ncclInt8

struct NcclApi {
  Result (*ncclGetVersion)(int*) = nullptr;
  const char* (*ncclGetErrorString)(Result) = nullptr;
  Result (*ncclCommInitAll)(Comm*, int, const int*) = nullptr;
  Result (*ncclCommDestroy)(Comm) = nullptr;
  Result (*ncclGroupStart)() = nullptr;
  Result (*ncclGroupEnd)() = nullptr;
  Result (*ncclBroadcast)(const void*, void*, std::size_t, int, int, Comm, CUstream) = nullptr;
  Result (*ncclSend)(const void*, std::size_t, int, int, Comm, CUstream) = nullptr;
  Result (*ncclRecv)(void*, std::size_t, int, int, Comm, CUstream) = nullptr;
};

struct LoadedNccl {
  NcclApi api;
  std::string failure;  // empty when loaded
};

template <class F>
bool take(void* library, const char* name, F& slot) {
  slot = reinterpret_cast<F>(dlsym(library, name));
  return slot != nullptr;
}

LoadedNccl load() {
  setenv("NCCL_NVLS_ENABLE", "0", 0);  // no multicast (see the header), unless the caller chose
  LoadedNccl loaded;
  const char* named = std::getenv("SPARSEJIT_NCCL_LIBRARY");
  const std::string path = named && *named ? named : "libnccl.so.2";
  // Never dlclose'd, as the driver: communicators may be released during static destruction.
  void* library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    loaded.failure = "NCCL could not be loaded from '" + path + "' (" + dlerror() +
                     "): install the nvidia-nccl-cu13 wheel and set SPARSEJIT_NCCL_LIBRARY to its nvidia/nccl/lib/libnccl.so.2";
    return loaded;
  }
  NcclApi& a = loaded.api;
  const bool all = take(library, "ncclGetVersion", a.ncclGetVersion) && take(library, "ncclGetErrorString", a.ncclGetErrorString) &&
                   take(library, "ncclCommInitAll", a.ncclCommInitAll) && take(library, "ncclCommDestroy", a.ncclCommDestroy) &&
                   take(library, "ncclGroupStart", a.ncclGroupStart) && take(library, "ncclGroupEnd", a.ncclGroupEnd) &&
                   take(library, "ncclBroadcast", a.ncclBroadcast) && take(library, "ncclSend", a.ncclSend) &&
                   take(library, "ncclRecv", a.ncclRecv);
  if (!all) loaded.failure = "'" + path + "' lacks a function of NCCL 2 (ncclCommInitAll, ncclSend, ...): not NCCL 2.7 or later";
  return loaded;
}

const NcclApi& nccl() {
  static const LoadedNccl loaded = load();
  if (!loaded.failure.empty()) throw UnsupportedError(loaded.failure);
  return loaded.api;
}

void check(Result result, const char* call) {
  if (result != 0) throw CudaError(std::string(call) + " failed: " + nccl().ncclGetErrorString(result) + " (NCCL " + std::to_string(result) + ")");
}

}  // namespace

NcclGroup::NcclGroup(const std::vector<int>& devices) : comms_(devices.size(), nullptr) {
  check(nccl().ncclCommInitAll(comms_.data(), int(devices.size()), devices.data()), "ncclCommInitAll");
}

NcclGroup::~NcclGroup() {
  for (Comm comm : comms_)
    if (comm != nullptr) nccl().ncclCommDestroy(comm);
}

void NcclGroup::start() { check(nccl().ncclGroupStart(), "ncclGroupStart"); }
void NcclGroup::end() { check(nccl().ncclGroupEnd(), "ncclGroupEnd"); }

void NcclGroup::broadcast(int rank, const void* send, void* receive, std::size_t bytes, int root, CUstream stream) {
  check(nccl().ncclBroadcast(send, receive, bytes, kBytes, root, comms_[std::size_t(rank)], stream), "ncclBroadcast");
}

void NcclGroup::send(int rank, const void* data, std::size_t bytes, int peer, CUstream stream) {
  check(nccl().ncclSend(data, bytes, kBytes, peer, comms_[std::size_t(rank)], stream), "ncclSend");
}

void NcclGroup::receive(int rank, void* data, std::size_t bytes, int peer, CUstream stream) {
  check(nccl().ncclRecv(data, bytes, kBytes, peer, comms_[std::size_t(rank)], stream), "ncclRecv");
}

std::string NcclGroup::version() {
  int code = 0;
  check(nccl().ncclGetVersion(&code), "ncclGetVersion");
  // NCCL 2.9 and later: major·10000 + minor·100 + patch
  return "NCCL " + std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

}  // namespace sparsejit::cuda
