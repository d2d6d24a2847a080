#include "sparsejit/device_matrix.hpp"

#include "cuda/driver_api.hpp"
#include "cuda/launch_graph.hpp"
#include "cuda/memory.hpp"
#include "sparsejit/error.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

namespace sparsejit {

namespace {

// The kernels load operands in 16-byte vectors from the start of their storage (the
// runtime's own buffers start 256-byte aligned); a borrowed array starting elsewhere (a view
// at an offset into a tensor) faulted on the device and lost the context. Refused until the
// planners take the start address into their vector widths.
void require_vector_aligned(const DeviceBuffer& storage, const char* what) {
  if (storage.borrowed() && storage.ptr() % 16 != 0) {
    char address[32];
    std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(storage.ptr()));
    throw InvalidInputError(std::string(what) + " starts at device address " + address +
                            ", not a multiple of 16 bytes: the kernels load 16-byte vectors; pass an array that starts aligned "
                            "(a fresh allocation, or a copy of the view)");
  }
}

}  // namespace

template <class T>
DeviceCsr<T>::DeviceCsr(const Context& context, const Csr<T>& host)
    : context_(context), rows_(host.rows), cols_(host.cols), nnz_(host.nnz()), host_row_ptr_(host.row_ptr),
      host_col_idx_(host.col_idx) {
  validate(host, /*require_sorted=*/false);
  row_ptr_ = DeviceBuffer::from_host(context, host.row_ptr);
  col_idx_ = DeviceBuffer::from_host(context, host.col_idx);
  values_ = DeviceBuffer::from_host(context, host.values);
}

namespace {
// A device array must hold exactly `elements` of `size` bytes each.
void check_array_bytes(const char* what, const DeviceBuffer& buffer, std::size_t elements, std::size_t size) {
  if (buffer.bytes() != elements * size)
    throw InvalidInputError(std::string(what) + ": " + std::to_string(buffer.bytes()) + " bytes, " +
                            std::to_string(elements) + " elements of " + std::to_string(size) + " bytes need " +
                            std::to_string(elements * size));
}
}  // namespace

template <class T>
DeviceCsr<T>::DeviceCsr(const Context& context, int32_t rows, int32_t cols, DeviceBuffer row_ptr, DeviceBuffer col_idx,
                        DeviceBuffer values, CUstream stream)
    : context_(context), rows_(rows), cols_(cols), nnz_(int64_t(col_idx.bytes() / sizeof(int32_t))),
      row_ptr_(std::move(row_ptr)), col_idx_(std::move(col_idx)), values_(std::move(values)) {
  if (rows < 0 || cols < 0)
    throw InvalidInputError("CSR shape " + std::to_string(rows) + "x" + std::to_string(cols) + " is negative");
  check_array_bytes("CSR row offsets", row_ptr_, std::size_t(rows) + 1, sizeof(int32_t));
  check_array_bytes("CSR column indices", col_idx_, std::size_t(nnz_), sizeof(int32_t));
  check_array_bytes("CSR values", values_, std::size_t(nnz_), sizeof(T));
  require_vector_aligned(row_ptr_, "a CSR matrix's row offsets");
  require_vector_aligned(col_idx_, "a CSR matrix's column indices");
  require_vector_aligned(values_, "a CSR matrix's values");
  context.make_current();
  SPARSEJIT_CU(cuStreamSynchronize, stream);  // the caller's kernels may still be writing the pattern
  host_row_ptr_ = row_ptr_.download_as<int32_t>(std::size_t(rows) + 1);
  host_col_idx_ = col_idx_.download_as<int32_t>(std::size_t(nnz_));
  const PatternView pattern{rows_, cols_, host_row_ptr_.data(), host_col_idx_.data()};
  if (pattern.nnz() != nnz_)
    throw InvalidInputError("CSR row offsets end at " + std::to_string(pattern.nnz()) + " but there are " +
                            std::to_string(nnz_) + " column indices");
  validate(pattern, /*require_sorted=*/false);
}

template <class T>
struct DeviceCsr<T>::PendingPattern {
  explicit PendingPattern(Event ready) : ready(std::move(ready)) {}
  Event ready;
  std::once_flag row_ptr_once, col_idx_once;
  std::atomic<bool> finished{false};  // the producer's work is known to be done: nothing to wait for
};

template <class T>
DeviceCsr<T>::DeviceCsr(const Context& context, int32_t rows, int32_t cols, int64_t nnz, DeviceBuffer row_ptr,
                        DeviceBuffer col_idx, DeviceBuffer values, Event ready)
    : context_(context), rows_(rows), cols_(cols), nnz_(nnz), row_ptr_(std::move(row_ptr)), col_idx_(std::move(col_idx)),
      values_(std::move(values)), pending_(std::make_shared<PendingPattern>(std::move(ready))) {}

template <class T>
void DeviceCsr<T>::fetch_host_row_ptr() const {
  std::call_once(pending_->row_ptr_once, [&] {
    pending_->ready.synchronize();
    pending_->finished.store(true, std::memory_order_release);
    host_row_ptr_ = row_ptr_.download_as<int32_t>(std::size_t(rows_) + 1);
  });
}

template <class T>
void DeviceCsr<T>::fetch_host_pattern() const {
  fetch_host_row_ptr();
  std::call_once(pending_->col_idx_once, [&] { host_col_idx_ = col_idx_.download_as<int32_t>(std::size_t(nnz_)); });
}

template <class T>
void DeviceCsr<T>::order_after_producer(CUstream stream) const {
  if (!pending_ || pending_->finished.load(std::memory_order_acquire)) return;
  if (pending_->ready.done()) {
    pending_->finished.store(true, std::memory_order_release);
    return;
  }
  context_.make_current();
  SPARSEJIT_CU(cuStreamWaitEvent, stream, pending_->ready.handle(), 0);
}

template <class T>
Csr<T> DeviceCsr<T>::download() const {
  const PatternView pattern = host_pattern();  // waits for the producer of a device-made handle
  Csr<T> host;
  host.rows = rows_;
  host.cols = cols_;
  host.row_ptr.assign(pattern.row_ptr, pattern.row_ptr + rows_ + 1);
  host.col_idx.assign(pattern.col_idx, pattern.col_idx + nnz_);
  host.values = values_.download_as<T>(std::size_t(nnz_));
  return host;
}

template <class T>
void DeviceCsr<T>::update_values(const std::vector<T>& values) {
  if (int64_t(values.size()) != nnz())
    throw InvalidInputError("update_values: " + std::to_string(values.size()) + " values for a matrix with " +
                            std::to_string(nnz()) + " nonzeros");
  if (pending_) fetch_host_pattern();  // the producer's writes finish before the new values land
  values_.upload(values);
  ++values_version_;
}

template <class T>
void DeviceCsr<T>::use_values(DeviceBuffer values) {
  check_array_bytes("use_values: values", values, std::size_t(nnz_), sizeof(T));
  if (pending_) fetch_host_pattern();  // as update_values: the producer's writes finish first
  values_ = std::move(values);
  ++values_version_;
}

template <class T>
std::shared_ptr<void> DeviceCsr<T>::find(const std::string& key) const {
  std::lock_guard<std::mutex> lock(cache_->mutex);
  const auto it = cache_->entries.find(key);
  return it == cache_->entries.end() ? nullptr : it->second;
}

template <class T>
void DeviceCsr<T>::attach(const std::string& key, std::shared_ptr<void> value) const {
  std::lock_guard<std::mutex> lock(cache_->mutex);
  cache_->entries[key] = std::move(value);
}

namespace {
int64_t checked_ld(int32_t rows, int32_t cols, int64_t ld) {
  if (rows < 0 || cols < 0)
    throw InvalidInputError("dense matrix shape " + std::to_string(rows) + "x" + std::to_string(cols) + " is negative");
  if (ld == 0) return cols;
  if (ld < cols)
    throw InvalidInputError("dense leading dimension " + std::to_string(ld) + " is below the column count " +
                            std::to_string(cols));
  return ld;
}
}  // namespace

template <class T>
DeviceDense<T>::DeviceDense(const Context& context, int32_t rows, int32_t cols, int64_t ld)
    : context_(context), rows_(rows), cols_(cols), ld_(checked_ld(rows, cols, ld)),
      buffer_(context, std::size_t(rows) * std::size_t(ld_) * sizeof(T)) {}

template <class T>
DeviceDense<T>::DeviceDense(const Context& context, const Dense<T>& host) : DeviceDense(context, host.rows, host.cols) {
  upload(host);
}

template <class T>
DeviceDense<T>::DeviceDense(const Context& context, DeviceBuffer storage, int32_t rows, int32_t cols, int64_t ld)
    : context_(context), rows_(rows), cols_(cols), ld_(checked_ld(rows, cols, ld)), buffer_(std::move(storage)) {
  require_vector_aligned(buffer_, "a dense matrix's storage");
  const std::size_t extent = rows == 0 ? 0 : (std::size_t(rows) - 1) * std::size_t(ld_) + std::size_t(cols);
  if (buffer_.bytes() < extent * sizeof(T))
    throw InvalidInputError("dense matrix " + std::to_string(rows) + "x" + std::to_string(cols) + " with leading dimension " +
                            std::to_string(ld_) + " needs " + std::to_string(extent * sizeof(T)) + " bytes, its storage has " +
                            std::to_string(buffer_.bytes()));
}

template <class T>
void DeviceDense<T>::upload(const Dense<T>& host) {
  if (host.rows != rows_ || host.cols != cols_)
    throw InvalidInputError("upload: host matrix " + std::to_string(host.rows) + "x" + std::to_string(host.cols) +
                            " does not match the device matrix " + std::to_string(rows_) + "x" + std::to_string(cols_));
  cuda::copy_rows_to_device(context_, buffer_.ptr(), std::size_t(ld_) * sizeof(T), host.data.data(),
                            std::size_t(cols_) * sizeof(T), std::size_t(cols_) * sizeof(T), std::size_t(rows_), nullptr);
  SPARSEJIT_CU(cuStreamSynchronize, nullptr);
}

template <class T>
void DeviceDense<T>::clear_async(CUstream stream) {
  if (rows_ == 0 || cols_ == 0 || cuda::LaunchGraph::refuse_other_work()) return;
  context_.make_current();
  const std::size_t row_bytes = std::size_t(cols_) * sizeof(T);
  if (ld_ == cols_) {  // one run; the storage may reach past it (a borrowed array's)
    SPARSEJIT_CU(cuMemsetD8Async, buffer_.ptr(), 0, row_bytes * std::size_t(rows_), stream);
  } else {
    SPARSEJIT_CU(cuMemsetD2D8Async, buffer_.ptr(), std::size_t(ld_) * sizeof(T), 0, row_bytes, std::size_t(rows_), stream);
  }
}

template <class T>
Dense<T> DeviceDense<T>::download() const {
  Dense<T> host(rows_, cols_);
  cuda::copy_rows_to_host(context_, host.data.data(), std::size_t(cols_) * sizeof(T), buffer_.ptr(),
                          std::size_t(ld_) * sizeof(T), std::size_t(cols_) * sizeof(T), std::size_t(rows_), nullptr);
  SPARSEJIT_CU(cuStreamSynchronize, nullptr);
  return host;
}

template class DeviceCsr<float>;
template class DeviceCsr<double>;
template class DeviceCsr<half>;
template class DeviceCsr<bfloat16>;
template class DeviceDense<float>;
template class DeviceDense<double>;
template class DeviceDense<half>;
template class DeviceDense<bfloat16>;

}  // namespace sparsejit
