// Stream-ordered device scratch owned by a Runtime, for ops whose calls need temporary memory
// (SpGEMM's row bins, hash tables and scan): a CUDA memory pool on the runtime's device that
// keeps what it has reserved (release threshold: unlimited), so once the pool has grown to the
// calls' high-water mark a call's scratch is a sub-allocation, not a cuMemAlloc. Allocation
// and free are ordered on a stream (cuMemAllocFromPoolAsync, cuMemFreeAsync): memory freed on
// one stream is handed out again only under the driver's stream-ordered rules, so a block is
// never reused while work before its free may still touch it, and no call waits for another.
// Thread-safe (the driver's pool is). The reserved memory goes back to the device when the
// pool is destroyed (with its Runtime).
#pragma once
#include <cuda.h>

#include <cstddef>

#include "sparsejit/device.hpp"

namespace sparsejit::cuda {

class ScratchPool {
 public:
  explicit ScratchPool(const Context& context);
  ~ScratchPool();
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // A block of scratch, freed on the stream it was allocated on when it goes out of scope
  // (work enqueued there before the free may use it; move-only). It must not outlive its pool.
  class Block {
   public:
    Block() = default;
    ~Block();
    Block(Block&& other) noexcept;
    Block& operator=(Block&& other) noexcept;
    Block(const Block&) = delete;
    Block& operator=(const Block&) = delete;
    CUdeviceptr ptr() const { return ptr_; }
    std::size_t bytes() const { return bytes_; }

   private:
    friend class ScratchPool;
    void release() noexcept;
    const Context* context_ = nullptr;
    CUdeviceptr ptr_ = 0;
    std::size_t bytes_ = 0;
    CUstream stream_ = nullptr;
  };

  // `bytes` of scratch (at least 1: a valid address), usable on `stream` in stream order;
  // CudaError naming the size when the device has not that much memory.
  Block allocate(std::size_t bytes, CUstream stream);

 private:
  Context context_;
  CUmemoryPool pool_ = nullptr;
};

}  // namespace sparsejit::cuda
