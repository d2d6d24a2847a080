// GPU devices and the few device objects the public API hands around: the context of a device,
// device memory, streams and events. All of them work through the CUDA driver API, which is
// loaded at run time; without a driver (or without a device) every constructor here throws
// UnsupportedError with a sentence saying so, while device_count() and driver_available() answer.
//
// Lifecycle: a Context is a shared handle on the device's PRIMARY context (the one the CUDA
// runtime and cuSPARSE use too), retained while any copy of it, or any buffer, stream or
// event made from it, is alive. Objects make their context current on the calling thread
// before each driver call, so they may be used from any thread.
//
// <cuda.h> is included for its types only (CUstream is the same type as cudaStream_t).
#pragma once
#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sparsejit {

// What the planners need to know about a GPU, read from device attributes.
struct DeviceInfo {
  std::string name;                       // "NVIDIA H100 80GB HBM3"
  int ordinal = 0;                        // device index as the driver counts them
  int sm = 0;                             // compute capability major*10 + minor (90 for sm_90)
  int multiprocessors = 0;
  int max_threads_per_block = 0;
  int max_threads_per_sm = 0;
  int max_blocks_per_sm = 0;              // resident blocks, whatever their size
  int shared_mem_per_block = 0;           // bytes, without opt-in (48 KiB)
  int shared_mem_per_block_optin = 0;     // bytes a kernel may opt in to
  int shared_mem_per_sm = 0;              // bytes
  int registers_per_sm = 0;
  int l2_bytes = 0;
  std::size_t total_mem = 0;              // bytes of device memory
  int driver_version = 0;                 // 13000 for CUDA 13.0
};
// "NVIDIA H100 80GB HBM3 (device 0, sm_90, 132 SMs, 79.1 GiB, driver 13.0)"
std::string to_string(const DeviceInfo& info);

// True when libcuda.so.1 is present, cuInit succeeded and at least one device exists.
bool driver_available();
// Why not, in one sentence (empty when driver_available()).
const std::string& driver_unavailable_reason();
// Number of devices; 0 when the driver is unavailable.
int device_count();
// Attributes of one device; throws UnsupportedError without a driver and InvalidInputError for
// an ordinal outside [0, device_count()).
DeviceInfo device_info(int ordinal);

namespace detail { struct PrimaryContext; }

class Context {
 public:
  // Retains the primary context of device `ordinal` and makes it current on this thread.
  explicit Context(int ordinal = 0);

  int ordinal() const;
  CUdevice device() const;
  CUcontext handle() const;
  const DeviceInfo& info() const;
  // Makes this context current on the calling thread (a no-op when it already is).
  void make_current() const;
  // Waits for all work in the context.
  void synchronize() const;
  // Free device memory in bytes, as the driver reports it now.
  std::size_t free_bytes() const;

 private:
  std::shared_ptr<const detail::PrimaryContext> state_;
};

// A stream: either owned (created here, destroyed with the object; a blocking stream, so it is
// ordered with the legacy default stream that the blocking copies below use) or wrapped (the
// caller's CUstream / cudaStream_t, never destroyed here; nullptr is the legacy default stream).
class Stream {
 public:
  explicit Stream(const Context& context);
  static Stream wrap(const Context& context, CUstream handle);
  // An owned stream that is not ordered with the legacy default stream (CU_STREAM_NON_BLOCKING):
  // work on the legacy stream, from any thread, neither waits for it nor joins a graph being
  // captured on it.
  static Stream non_blocking(const Context& context);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  CUstream handle() const { return handle_; }
  bool owned() const { return owned_; }
  const Context& context() const { return context_; }
  void synchronize() const;

 private:
  Stream(const Context& context, CUstream handle, bool owned);
  void release() noexcept;
  Context context_;
  CUstream handle_ = nullptr;
  bool owned_ = false;
};

// A timing event (created with default flags, so elapsed times can be read).
class Event {
 public:
  explicit Event(const Context& context);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  CUevent handle() const { return handle_; }
  void record(CUstream stream) const;
  void record(const Stream& stream) const { record(stream.handle()); }
  void synchronize() const;
  // Whether the work queued before its last record has finished, without waiting.
  bool done() const;

 private:
  void release() noexcept;
  Context context_;
  CUevent handle_ = nullptr;
};
// Milliseconds between two recorded events; waits for `end` first.
float elapsed_ms(const Event& start, const Event& end);

namespace cuda {
class ScratchPool;
}

// Device memory, move-only. A zero-byte buffer allocates nothing and has ptr() == 0. Made by
// cuMemAlloc, or, for the results operations allocate (SpGEMM's C), taken from the device's
// stream-ordered result pool. Either way a buffer may be dropped while kernels that use it are
// still queued: its release waits for the device's work first (cuMemFree does for its own
// memory; for pool memory it does not, so the release synchronizes the context itself).
// A borrowed buffer (borrow()) is a view of memory someone else owns, e.g. a PyTorch or CuPy
// array: it is used like any other and released by nobody here.
// Blocking transfers run on the legacy default stream and have completed when they return;
// the _async ones are ordered on the given stream only (the host memory must stay valid, and be
// pinned for a truly asynchronous copy). Offsets and sizes are in bytes and bounds-checked.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const Context& context, std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // A view of `bytes` of device memory at `ptr` that the caller allocated and keeps alive for
  // the buffer's life (and for the work queued on it); never freed here. InvalidInputError for
  // a null `ptr` with `bytes` > 0.
  static DeviceBuffer borrow(const Context& context, CUdeviceptr ptr, std::size_t bytes);
  bool borrowed() const { return ownership_ == Ownership::Borrowed; }

  // A buffer holding a copy of `host`.
  template <class T>
  static DeviceBuffer from_host(const Context& context, const std::vector<T>& host) {
    DeviceBuffer buffer(context, host.size() * sizeof(T));
    buffer.upload(host.data(), buffer.bytes());
    return buffer;
  }

  CUdeviceptr ptr() const { return ptr_; }
  template <class T> T* as() const { return reinterpret_cast<T*>(static_cast<std::uintptr_t>(ptr_)); }
  std::size_t bytes() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }

  void upload(const void* host, std::size_t bytes, std::size_t offset = 0);
  void download(void* host, std::size_t bytes, std::size_t offset = 0) const;
  void upload_async(const void* host, std::size_t bytes, CUstream stream, std::size_t offset = 0);
  void download_async(void* host, std::size_t bytes, CUstream stream, std::size_t offset = 0) const;
  // Copies `bytes` from `source` (offset 0) into this buffer at offset 0, ordered on `stream`.
  void copy_from_async(const DeviceBuffer& source, std::size_t bytes, CUstream stream);
  // Sets every byte (0xFF poisons floats with NaN).
  void fill_bytes(unsigned char value);
  void fill_bytes_async(unsigned char value, CUstream stream);

  template <class T> void upload(const std::vector<T>& host) { upload(host.data(), host.size() * sizeof(T)); }
  template <class T> std::vector<T> download_as(std::size_t count) const {
    std::vector<T> host(count);
    download(host.data(), count * sizeof(T));
    return host;
  }

 private:
  friend class cuda::ScratchPool;  // hands out pool memory as buffers
  enum class Ownership { Allocated, Pooled, Borrowed };
  DeviceBuffer(const Context& context, CUdeviceptr ptr, std::size_t bytes, Ownership ownership);
  void check_range(const char* what, std::size_t bytes, std::size_t offset) const;
  void release() noexcept;
  std::optional<Context> context_;  // empty for a default-constructed buffer
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_ = 0;
  Ownership ownership_ = Ownership::Allocated;
};

}  // namespace sparsejit
