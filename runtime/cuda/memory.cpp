#include "cuda/memory.hpp"

#include <atomic>
#include <utility>

#include "cuda/context.hpp"
#include "sparsejit/error.hpp"

namespace sparsejit {
namespace {

std::atomic<int64_t> held_now{0};
std::atomic<int64_t> held_peak{0};

// Running out of device memory is a problem too big for this GPU, not a fault: the message
// names the bytes asked for and the bytes free. Nothing was allocated, nothing is written,
// and the context stays usable (an out-of-memory result is not sticky).
void allocate(CUdeviceptr* ptr, std::size_t bytes) {
  const CUresult result = cuda::driver().cuMemAlloc_v2(ptr, bytes);
  if (result == CUDA_ERROR_OUT_OF_MEMORY) {
    std::size_t free_bytes = 0, total_bytes = 0;
    cuda::driver().cuMemGetInfo_v2(&free_bytes, &total_bytes);
    throw CudaError("out of GPU memory: cuMemAlloc_v2 of " + std::to_string(bytes) + " bytes failed with " +
                    std::to_string(free_bytes) + " of " + std::to_string(total_bytes) + " bytes free");
  }
  cuda::check(result, "cuMemAlloc_v2");
  cuda::count_held_bytes(int64_t(bytes));
}

}  // namespace

namespace cuda {

HeldBytes held_bytes() { return {held_now.load(), held_peak.load()}; }

void reset_peak_held_bytes() { held_peak.store(held_now.load()); }

void count_held_bytes(int64_t bytes) {
  const int64_t now = held_now.fetch_add(bytes) + bytes;
  int64_t peak = held_peak.load();
  while (now > peak && !held_peak.compare_exchange_weak(peak, now)) {
  }
}

}  // namespace cuda

DeviceBuffer::DeviceBuffer(const Context& context, std::size_t bytes) : context_(context), bytes_(bytes) {
  context.make_current();
  if (bytes > 0) allocate(&ptr_, bytes);
}

DeviceBuffer::DeviceBuffer(const Context& context, CUdeviceptr ptr, std::size_t bytes, Ownership ownership)
    : context_(context), ptr_(ptr), bytes_(bytes), ownership_(ownership) {}

DeviceBuffer DeviceBuffer::borrow(const Context& context, CUdeviceptr ptr, std::size_t bytes) {
  if (ptr == 0 && bytes > 0)
    throw InvalidInputError("borrowed device memory of " + std::to_string(bytes) + " bytes at a null pointer");
  return DeviceBuffer(context, ptr, bytes, Ownership::Borrowed);
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : context_(std::move(other.context_)),
      ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      ownership_(std::exchange(other.ownership_, Ownership::Allocated)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    context_ = std::move(other.context_);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    ownership_ = std::exchange(other.ownership_, Ownership::Allocated);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  if (ptr_ != 0 && ownership_ != Ownership::Borrowed) {
    // A destructor cannot report; a failing free means the context is already gone. Pool
    // memory goes back to its pool, the rest to the device. cuMemFree does not wait for the
    // work queued on pool memory (the device faulted on a result dropped while its kernels
    // ran), so that wait is the context synchronization, as cudaFree's is for its memory.
    try {
      context_->make_current();
      if (ownership_ == Ownership::Pooled) cuda::driver().cuCtxSynchronize();
      cuda::driver().cuMemFree_v2(ptr_);
      cuda::count_held_bytes(-int64_t(bytes_));
    } catch (const Error&) {
    }
  }
  ptr_ = 0;
  bytes_ = 0;
  ownership_ = Ownership::Allocated;
}

void DeviceBuffer::check_range(const char* what, std::size_t bytes, std::size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw InvalidInputError(std::string(what) + ": " + std::to_string(bytes) + " bytes at offset " +
                            std::to_string(offset) + " exceed the device buffer of " + std::to_string(bytes_) +
                            " bytes");
}

void DeviceBuffer::upload(const void* host, std::size_t bytes, std::size_t offset) {
  upload_async(host, bytes, nullptr, offset);
  SPARSEJIT_CU(cuStreamSynchronize, nullptr);
}

void DeviceBuffer::download(void* host, std::size_t bytes, std::size_t offset) const {
  download_async(host, bytes, nullptr, offset);
  SPARSEJIT_CU(cuStreamSynchronize, nullptr);
}

void DeviceBuffer::upload_async(const void* host, std::size_t bytes, CUstream stream, std::size_t offset) {
  check_range("upload", bytes, offset);
  if (bytes == 0) return;
  context_->make_current();
  SPARSEJIT_CU(cuMemcpyHtoDAsync_v2, ptr_ + offset, host, bytes, stream);
}

void DeviceBuffer::download_async(void* host, std::size_t bytes, CUstream stream, std::size_t offset) const {
  check_range("download", bytes, offset);
  if (bytes == 0) return;
  context_->make_current();
  SPARSEJIT_CU(cuMemcpyDtoHAsync_v2, host, ptr_ + offset, bytes, stream);
}

void DeviceBuffer::copy_from_async(const DeviceBuffer& source, std::size_t bytes, CUstream stream) {
  check_range("copy destination", bytes, 0);
  source.check_range("copy source", bytes, 0);
  if (bytes == 0) return;
  context_->make_current();
  SPARSEJIT_CU(cuMemcpyDtoDAsync_v2, ptr_, source.ptr_, bytes, stream);
}

void DeviceBuffer::fill_bytes(unsigned char value) {
  fill_bytes_async(value, nullptr);
  SPARSEJIT_CU(cuStreamSynchronize, nullptr);
}

void DeviceBuffer::fill_bytes_async(unsigned char value, CUstream stream) {
  if (bytes_ == 0) return;
  context_->make_current();
  SPARSEJIT_CU(cuMemsetD8Async, ptr_, value, bytes_, stream);
}

namespace cuda {

PinnedBuffer::PinnedBuffer(const Context& context, std::size_t bytes) : context_(context), bytes_(bytes) {
  context.make_current();
  if (bytes > 0) SPARSEJIT_CU(cuMemAllocHost_v2, &data_, bytes);
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : context_(other.context_), data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    release();
    context_ = other.context_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PinnedBuffer::release() noexcept {
  if (data_ != nullptr) {
    try {
      context_.make_current();
      driver().cuMemFreeHost(data_);
    } catch (const Error&) {
    }
  }
  data_ = nullptr;
  bytes_ = 0;
}

namespace {

// One end of a pitched copy: host memory or device memory, and its row pitch in bytes.
struct RowsAt {
  CUmemorytype type;
  const void* host;
  CUdeviceptr device;
  std::size_t pitch;
};

RowsAt on_host(const void* host, std::size_t pitch) { return {CU_MEMORYTYPE_HOST, host, 0, pitch}; }
RowsAt on_device(CUdeviceptr device, std::size_t pitch) { return {CU_MEMORYTYPE_DEVICE, nullptr, device, pitch}; }

// `rows` rows of `row_bytes` from `from` to `to`, ordered on `stream`.
void copy_rows(const Context& context, const RowsAt& to, const RowsAt& from, std::size_t row_bytes, std::size_t rows,
               CUstream stream) {
  if (rows == 0 || row_bytes == 0) return;
  CUDA_MEMCPY2D copy{};
  copy.WidthInBytes = row_bytes;
  copy.Height = rows;
  copy.srcMemoryType = from.type;
  copy.srcHost = from.host;
  copy.srcDevice = from.device;
  copy.srcPitch = from.pitch;
  copy.dstMemoryType = to.type;
  copy.dstHost = const_cast<void*>(to.host);
  copy.dstDevice = to.device;
  copy.dstPitch = to.pitch;
  context.make_current();
  SPARSEJIT_CU(cuMemcpy2DAsync_v2, &copy, stream);
}

}  // namespace

void copy_rows_to_device(const Context& context, CUdeviceptr device, std::size_t device_pitch, const void* host,
                         std::size_t host_pitch, std::size_t row_bytes, std::size_t rows, CUstream stream) {
  copy_rows(context, on_device(device, device_pitch), on_host(host, host_pitch), row_bytes, rows, stream);
}

void copy_rows_to_host(const Context& context, void* host, std::size_t host_pitch, CUdeviceptr device,
                       std::size_t device_pitch, std::size_t row_bytes, std::size_t rows, CUstream stream) {
  copy_rows(context, on_host(host, host_pitch), on_device(device, device_pitch), row_bytes, rows, stream);
}

void copy_rows_on_device(const Context& context, CUdeviceptr to, std::size_t to_pitch, CUdeviceptr from, std::size_t from_pitch,
                         std::size_t row_bytes, std::size_t rows, CUstream stream) {
  copy_rows(context, on_device(to, to_pitch), on_device(from, from_pitch), row_bytes, rows, stream);
}

}  // namespace cuda
}  // namespace sparsejit
