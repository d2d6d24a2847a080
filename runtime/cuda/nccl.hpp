// NCCL, loaded at run time like the driver (dlopen), so that one GPU and CI need no NCCL:
// only the calls that spread work over several GPUs load it. The library is the one the
// nvidia-nccl-cu13 wheel ships (nvidia/nccl/lib/libnccl.so.2 in a Python's site-packages):
// SPARSEJIT_NCCL_LIBRARY names its path, else libnccl.so.2 is looked up as the dynamic
// loader does (LD_LIBRARY_PATH, the system's libraries).
//
// The few declarations used are NCCL's public ABI (nccl.h of NCCL 2.x): an opaque
// communicator, ncclResult_t 0 for success, ncclInt8 = 0 as the byte type, and the functions
// below. Multicast (NVLink SHARP) is never wanted here: the loader sets NCCL_NVLS_ENABLE=0
// unless the environment sets it, because a program using it can take a host's GPUs, which
// others share, out of service.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <cuda.h>

namespace sparsejit::cuda {

// One communicator per device of one process (ncclCommInitAll): rank r drives devices[r].
class NcclGroup {
 public:
  // Throws UnsupportedError naming the library and SPARSEJIT_NCCL_LIBRARY when NCCL cannot be
  // loaded, CudaError with NCCL's message when the communicators cannot be made.
  explicit NcclGroup(const std::vector<int>& devices);
  ~NcclGroup();
  NcclGroup(const NcclGroup&) = delete;
  NcclGroup& operator=(const NcclGroup&) = delete;

  int ranks() const { return int(comms_.size()); }
  // Between start() and end() the calls of every rank are one group (one thread drives all).
  void start();
  void end();
  void broadcast(int rank, const void* send, void* receive, std::size_t bytes, int root, CUstream stream);
  void send(int rank, const void* data, std::size_t bytes, int peer, CUstream stream);
  void receive(int rank, void* data, std::size_t bytes, int peer, CUstream stream);
  // e.g. "NCCL 2.27.7"
  static std::string version();

 private:
  std::vector<void*> comms_;
};

}  // namespace sparsejit::cuda
