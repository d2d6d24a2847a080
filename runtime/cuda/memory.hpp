// Internal memory helpers beside the public DeviceBuffer (sparsejit/device.hpp): page-locked
// host memory for truly asynchronous transfers, and pitched 2-D copies for dense operands whose
// leading dimension exceeds their width.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "sparsejit/device.hpp"

namespace sparsejit::cuda {

// Page-locked host memory (cuMemAllocHost), move-only.
class PinnedBuffer {
 public:
  PinnedBuffer(const Context& context, std::size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  template <class T> T* as() const { return static_cast<T*>(data_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  Context context_;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Device memory held by sparsejit's own allocations in this process, over every device:
// DeviceBuffers it allocated (cuMemAlloc) and blocks from its pools (ScratchPool), counted when
// allocated and when freed, a pool block's stream-ordered free when it is enqueued. Borrowed
// memory and what libraries allocate inside their handles are not counted; cuSPARSE's SpGEMM
// takes its buffers from the caller, so its calls through runtime/vendor/ are. `peak` is the
// most held since the last reset_peak_held_bytes (the bench's peak memory of one call).
struct HeldBytes {
  int64_t current = 0;
  int64_t peak = 0;
};
HeldBytes held_bytes();
void reset_peak_held_bytes();  // peak = current
// Counts `bytes` more (negative: fewer) held: the allocators' bookkeeping.
void count_held_bytes(int64_t bytes);

// Copies `rows` rows of `row_bytes` between host and device memory with the given pitches
// (bytes between row starts), ordered on `stream` (the caller synchronizes when it must).
void copy_rows_to_device(const Context& context, CUdeviceptr device, std::size_t device_pitch, const void* host,
                         std::size_t host_pitch, std::size_t row_bytes, std::size_t rows, CUstream stream);
void copy_rows_to_host(const Context& context, void* host, std::size_t host_pitch, CUdeviceptr device,
                       std::size_t device_pitch, std::size_t row_bytes, std::size_t rows, CUstream stream);
// The same between two places of device memory (of one GPU, or of two with unified addressing).
void copy_rows_on_device(const Context& context, CUdeviceptr to, std::size_t to_pitch, CUdeviceptr from, std::size_t from_pitch,
                         std::size_t row_bytes, std::size_t rows, CUstream stream);

}  // namespace sparsejit::cuda
