#include "cuda/scratch_pool.hpp"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "cuda/driver_api.hpp"
#include "cuda/memory.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit::cuda {

ScratchPool::ScratchPool(const Context& context, uint64_t keep_bytes) : context_(context) {
  context_.make_current();
  CUmemPoolProps props = {};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = context_.ordinal();
  SPARSEJIT_CU(cuMemPoolCreate, &pool_, &props);
  // Keep reserved bytes at synchronizations (the default, 0, would return the memory to the
  // device at each one and make the next call reserve it again).
  cuuint64_t keep = keep_bytes;
  try {
    SPARSEJIT_CU(cuMemPoolSetAttribute, pool_, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep);
  } catch (...) {
    driver().cuMemPoolDestroy(pool_);
    throw;
  }
}

ScratchPool::~ScratchPool() {
  // Blocks still being freed in stream order are released by the driver when their frees complete.
  try {
    context_.make_current();
    driver().cuMemPoolDestroy(pool_);
  } catch (const Error&) {  // the context is already gone at process exit: nothing to free
  }
}

// The pool keeps what it reserved: when the device is out of memory, the reserve no block
// uses goes back to the device and the allocation is tried once more.
CUresult ScratchPool::allocate_from_pool(CUdeviceptr* ptr, std::size_t bytes, CUstream stream) {
  CUresult result = driver().cuMemAllocFromPoolAsync(ptr, bytes, pool_, stream);
  if (result == CUDA_ERROR_OUT_OF_MEMORY && driver().cuMemPoolTrimTo(pool_, 0) == CUDA_SUCCESS)
    result = driver().cuMemAllocFromPoolAsync(ptr, bytes, pool_, stream);
  return result;
}

ScratchPool::Block ScratchPool::allocate(std::size_t bytes, CUstream stream) {
  context_.make_current();
  Block block;
  const std::size_t size = bytes > 0 ? bytes : 1;
  const CUresult result = allocate_from_pool(&block.ptr_, size, stream);
  if (result != CUDA_SUCCESS)
    fail(result, "cuMemAllocFromPoolAsync of " + std::to_string(size) + " bytes of scratch failed: " + describe(result));
  block.context_ = &context_;
  block.bytes_ = size;
  block.stream_ = stream;
  count_held_bytes(int64_t(size));
  return block;
}

DeviceBuffer ScratchPool::allocate_buffer(std::size_t bytes, CUstream stream) {
  if (bytes == 0) return DeviceBuffer(context_, 0);
  context_.make_current();
  CUdeviceptr ptr = 0;
  const CUresult result = allocate_from_pool(&ptr, bytes, stream);
  if (result != CUDA_SUCCESS)
    fail(result, "cuMemAllocFromPoolAsync of " + std::to_string(bytes) + " bytes for a result failed: " + describe(result));
  count_held_bytes(int64_t(bytes));
  return DeviceBuffer(context_, ptr, bytes, DeviceBuffer::Ownership::Pooled);
}

std::size_t ScratchPool::idle_bytes() const {
  context_.make_current();
  cuuint64_t reserved = 0, used = 0;
  SPARSEJIT_CU(cuMemPoolGetAttribute, pool_, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
  SPARSEJIT_CU(cuMemPoolGetAttribute, pool_, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used);
  return reserved > used ? std::size_t(reserved - used) : 0;
}

void ScratchPool::release_idle() {
  context_.make_current();
  SPARSEJIT_CU(cuMemPoolTrimTo, pool_, 0);
}

ScratchPool::Block::~Block() { release(); }

ScratchPool::Block::Block(Block&& other) noexcept
    : context_(std::exchange(other.context_, nullptr)),
      ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      stream_(other.stream_) {}

ScratchPool::Block& ScratchPool::Block::operator=(Block&& other) noexcept {
  if (this != &other) {
    release();
    context_ = std::exchange(other.context_, nullptr);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = other.stream_;
  }
  return *this;
}

void ScratchPool::Block::release() noexcept {
  if (ptr_ != 0) {
    try {  // a destructor cannot report; a failing free means the context is already gone
      context_->make_current();
      driver().cuMemFreeAsync(ptr_, stream_);
      count_held_bytes(-int64_t(bytes_));
    } catch (const Error&) {
    }
  }
  ptr_ = 0;
  bytes_ = 0;
}

ScratchPool& result_pool(const Context& context) {
  static std::mutex mutex;
  static std::map<int, ScratchPool*> pools;  // never destroyed: results may live until exit
  const std::lock_guard<std::mutex> lock(mutex);
  ScratchPool*& pool = pools[context.ordinal()];
  if (pool == nullptr) pool = new ScratchPool(context, kResultPoolKeep);
  return *pool;
}

}  // namespace sparsejit::cuda
