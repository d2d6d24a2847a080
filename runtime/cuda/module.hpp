// Compiled kernels: a Module is a cubin loaded into a context (cuModuleLoadData), a Kernel one
// of its functions. A Kernel keeps its module loaded, so it may outlive the Module object.
#pragma once
#include <memory>
#include <string>

#include "sparsejit/device.hpp"

namespace sparsejit::cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

namespace detail { struct LoadedModule; }

class Kernel {
 public:
  CUfunction handle() const { return function_; }
  const std::string& name() const { return name_; }

  // Launches on `stream` with `args` pointing at each kernel argument in order; throws
  // CudaError naming the kernel when the launch is rejected (asynchronous faults surface at
  // the next synchronization).
  // early_launch (sm_90 and later): programmatic dependent launch. The kernel may be scheduled
  // while the previous kernel on the stream is still finishing, which hides most of its launch
  // latency; so it must execute `griddepcontrol.wait` (the templates' sj_wait_for_predecessor)
  // before it touches global memory: the wait returns once that kernel has completed and its
  // writes are visible.
  void launch(Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream, void** args,
              bool early_launch = false) const;
  // Opts the kernel in to `bytes` of dynamic shared memory (needed above 48 KiB).
  void set_max_dynamic_shared(int bytes) const;
  // Asks the driver for the largest shared-memory carveout: left to itself it may pick the
  // smallest that fits one block, capping a kernel that could keep two resident at one.
  void prefer_max_shared_carveout() const;
  int attribute(CUfunction_attribute which) const;
  // Resident blocks per multiprocessor at this block size and dynamic shared memory.
  int max_active_blocks_per_sm(int block_threads, std::size_t dynamic_shared_bytes) const;

 private:
  friend class Module;
  Kernel(std::shared_ptr<const detail::LoadedModule> module, CUfunction function, std::string name)
      : module_(std::move(module)), function_(function), name_(std::move(name)) {}
  std::shared_ptr<const detail::LoadedModule> module_;
  CUfunction function_ = nullptr;
  std::string name_;
};

class Module {
 public:
  // Loads a cubin (or PTX) image into `context`; throws InvalidInputError for an empty image and
  // CudaError "cuModuleLoadData failed: ..." when the driver rejects it.
  Module(const Context& context, const std::string& image);

  // The function `name` (the mangled name unless declared extern "C"); throws CudaError naming it.
  Kernel function(const std::string& name) const;
  // Wall time of cuModuleLoadData, milliseconds.
  double load_ms() const { return load_ms_; }

 private:
  std::shared_ptr<const detail::LoadedModule> module_;
  double load_ms_ = 0;
};

}  // namespace sparsejit::cuda
