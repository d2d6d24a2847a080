// Stream-ordered device scratch owned by a Runtime, for ops whose calls need temporary memory
// (SpGEMM's row bins, hash tables and scan) or return new arrays (SpGEMM's C): a CUDA memory pool on the runtime's device that
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
#include <cstdint>

#include "sparsejit/device.hpp"

namespace sparsejit::cuda {

// Offsets of the pieces of one scratch block, each starting at the next multiple of `align`
// bytes (256: any vector load and CUB's temporary storage are aligned).
class ScratchCursor {
 public:
  explicit ScratchCursor(std::size_t align = 256) : align_(align) {}
  // The offset of a piece of `bytes` (0 bytes: the offset where the next piece starts).
  std::size_t take(std::size_t bytes) {
    const std::size_t start = end_;
    end_ += (bytes + align_ - 1) / align_ * align_;
    return start;
  }
  std::size_t total() const { return end_; }

 private:
  std::size_t align_;
  std::size_t end_ = 0;
};

class ScratchPool {
 public:
  // keep_bytes: what the pool keeps reserved across synchronizations (the rest goes back to
  // the device at each); by default everything it has reserved.
  explicit ScratchPool(const Context& context, uint64_t keep_bytes = UINT64_MAX);
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
  // `bytes` from the pool as a DeviceBuffer, usable on `stream` in stream order; empty for 0
  // bytes. The buffer must not outlive the pool (result_pool's never ends). A reused block
  // costs no cuMemAlloc and no page mapping, which on the device cost 3 to 60 us each,
  // growing with the size, and as much again for the cuMemFree.
  DeviceBuffer allocate_buffer(std::size_t bytes, CUstream stream);
  // Bytes the pool holds reserved that no block uses: an allocation from the pool can take
  // them although the device does not count them free (cuMemGetInfo).
  std::size_t idle_bytes() const;
  // Gives the reserve no block uses back to the device, for allocations made outside the pool
  // (cuSPARSE's buffers, which cuMemAlloc cannot take from a pool's reserve).
  void release_idle();

 private:
  CUresult allocate_from_pool(CUdeviceptr* ptr, std::size_t bytes, CUstream stream);
  Context context_;
  CUmemoryPool pool_ = nullptr;
};

// The pool of a device that operations' results (SpGEMM's C) are allocated from: one per
// device for the life of the process, since a result may outlive the Runtime that made it (on
// the H100, a result freed after its Runtime's pool was destroyed left later calls faulting).
// It keeps up to kResultPoolKeep bytes reserved across synchronizations. Thread-safe.
constexpr uint64_t kResultPoolKeep = uint64_t(1) << 30;
ScratchPool& result_pool(const Context& context);

}  // namespace sparsejit::cuda
