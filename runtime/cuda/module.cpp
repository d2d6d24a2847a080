#include "cuda/module.hpp"

#include <chrono>
#include <mutex>

#include "cuda/context.hpp"
#include "cuda/launch_graph.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::cuda {
namespace detail {

// One loaded module; unloaded when the last Module or Kernel referring to it goes away.
struct LoadedModule {
  LoadedModule(const Context& context, CUmodule module) : context(context), module(module) {}
  ~LoadedModule() {
    try {
      context.make_current();
      driver().cuModuleUnload(module);
    } catch (const Error&) {
    }
  }
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;

  Context context;
  CUmodule module;
};

}  // namespace detail

Module::Module(const Context& context, const std::string& image) {
  if (image.empty()) throw InvalidInputError("cannot load an empty module image");
  context.make_current();
  CUmodule module = nullptr;
  const auto start = std::chrono::steady_clock::now();
  // c_str(): a PTX image must be NUL-terminated, and std::string guarantees it.
  SPARSEJIT_CU(cuModuleLoadData, &module, image.c_str());
  load_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  module_ = std::make_shared<const detail::LoadedModule>(context, module);
}

Kernel Module::function(const std::string& name) const {
  CUfunction function = nullptr;
  module_->context.make_current();
  const CUresult result = driver().cuModuleGetFunction(&function, module_->module, name.c_str());
  if (result != CUDA_SUCCESS)
    fail(result, "cuModuleGetFunction failed for kernel '" + name + "': " + describe(result));
  return Kernel(module_, function, name);
}

void Kernel::launch(Dim3 grid, Dim3 block, unsigned shared_bytes, CUstream stream, void** args,
                    bool early_launch) const {
  if (LaunchGraph::take_launch(function_, grid, block, shared_bytes, args, early_launch)) return;
  module_->context.make_current();
  CUresult result;
  if (early_launch) {
    CUlaunchAttribute overlap{};
    overlap.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    overlap.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig config{};
    config.gridDimX = grid.x, config.gridDimY = grid.y, config.gridDimZ = grid.z;
    config.blockDimX = block.x, config.blockDimY = block.y, config.blockDimZ = block.z;
    config.sharedMemBytes = shared_bytes;
    config.hStream = stream;
    config.attrs = &overlap;
    config.numAttrs = 1;
    result = driver().cuLaunchKernelEx(&config, function_, args, nullptr);
  } else {
    result = driver().cuLaunchKernel(function_, grid.x, grid.y, grid.z, block.x, block.y, block.z, shared_bytes,
                                     stream, args, nullptr);
  }
  if (result != CUDA_SUCCESS)
    fail(result, std::string(early_launch ? "cuLaunchKernelEx" : "cuLaunchKernel") + " failed for kernel '" + name_ +
                     "' (grid " + std::to_string(grid.x) + "x" + std::to_string(grid.y) + "x" + std::to_string(grid.z) +
                     ", block " + std::to_string(block.x) + "x" + std::to_string(block.y) + "x" +
                     std::to_string(block.z) + ", shared " + std::to_string(shared_bytes) + " B): " + describe(result));
}

void Kernel::set_max_dynamic_shared(int bytes) const {
  // The attribute belongs to the CUfunction, which every plan of this kernel shares: plans of
  // different sizes prepared by concurrent threads must only raise it, or one lowers it under
  // another's launch (the soak saw CUDA_ERROR_INVALID_VALUE that way). Read and write under one lock.
  static std::mutex raising;
  const std::lock_guard<std::mutex> lock(raising);
  module_->context.make_current();
  int current = 0;
  SPARSEJIT_CU(cuFuncGetAttribute, &current, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function_);
  if (current < bytes) SPARSEJIT_CU(cuFuncSetAttribute, function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

void Kernel::prefer_max_shared_carveout() const {
  module_->context.make_current();
  SPARSEJIT_CU(cuFuncSetAttribute, function_, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, int(CU_SHAREDMEM_CARVEOUT_MAX_SHARED));
}

int Kernel::attribute(CUfunction_attribute which) const {
  int value = 0;
  module_->context.make_current();
  SPARSEJIT_CU(cuFuncGetAttribute, &value, which, function_);
  return value;
}

int Kernel::max_active_blocks_per_sm(int block_threads, std::size_t dynamic_shared_bytes) const {
  int blocks = 0;
  module_->context.make_current();
  SPARSEJIT_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &blocks, function_, block_threads, dynamic_shared_bytes);
  return blocks;
}

}  // namespace sparsejit::cuda
