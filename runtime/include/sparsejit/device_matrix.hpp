// Matrices on the device: DeviceCsr, the handle every sparse operation takes, and DeviceDense,
// a row-major dense operand.
//
// DeviceCsr lifecycle (the rule every cache user relies on):
//   - made from a host Csr<T>: the pattern (row_ptr, col_idx) and values are uploaded once;
//     a host copy of the pattern is kept so features can be measured without a download;
//   - made over arrays the caller owns on the device (borrowed buffers, e.g. a PyTorch or CuPy
//     CSR matrix's): nothing is copied, the pattern is downloaded once at construction;
//   - made on the device by an operation (Runtime::spgemm's C): the handle owns the arrays the
//     operation wrote and an event recorded after its last write; the host copy of the pattern
//     is downloaded on first use of host_pattern() (which waits for that event), so a product
//     that nobody inspects costs no download (host_row_ptr() downloads the offsets alone).
//     Every op reads host_pattern() (its features) before it launches anything on a handle, so
//     no kernel ever reads a pattern still being written; other readers of the device arrays
//     (spgemm_numeric's, of C) order their stream after the producing call's stream
//     (order_after_producer) or synchronize;
//   - the PATTERN IS IMMUTABLE for the handle's whole life, so anything derived from the pattern
//     alone (features, formats, plans) attached to the cache stays valid until the handle dies;
//   - update_values() replaces the values in place and increments values_version(); entries that
//     depend on values must store the version they were built from and rebuild on a mismatch.
//     use_values() (other device memory) and values_changed() (the caller rewrote the values on
//     the device) increment it too;
//   - the handle is move-only; the cache is internally locked, so const handles may be shared
//     between threads for lookups and attachments.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sparsejit/device.hpp"
#include "sparsejit/matrix.hpp"

namespace sparsejit {

namespace detail {
struct RuntimeState;
}

template <class T>
class DeviceCsr {
 public:
  // Validates `host` (InvalidInputError naming the first violation; rows need not be sorted)
  // and uploads it.
  DeviceCsr(const Context& context, const Csr<T>& host);
  // A handle over CSR arrays already on the device, usually borrowed (DeviceBuffer::borrow):
  // rows + 1 int32 offsets, nnz int32 columns and nnz values, nnz read from col_idx's size.
  // Nothing is copied. The pattern is downloaded here, after the work queued on `stream` (the
  // caller's, which may still be writing it), and validated as a host Csr is (InvalidInputError
  // naming the first violation, or a buffer whose size does not match); the caller keeps it
  // unchanged for the handle's life.
  DeviceCsr(const Context& context, int32_t rows, int32_t cols, DeviceBuffer row_ptr, DeviceBuffer col_idx,
            DeviceBuffer values, CUstream stream);

  const Context& context() const { return context_; }
  int32_t rows() const { return rows_; }
  int32_t cols() const { return cols_; }
  int64_t nnz() const { return nnz_; }

  const DeviceBuffer& row_ptr() const { return row_ptr_; }   // rows + 1 int32
  const DeviceBuffer& col_idx() const { return col_idx_; }   // nnz int32
  const DeviceBuffer& values() const { return values_; }     // nnz T
  // The host copy of the pattern (downloaded on first use for a handle made on the device).
  PatternView host_pattern() const {
    if (pending_) fetch_host_pattern();
    return {rows_, cols_, host_row_ptr_.data(), host_col_idx_.data()};
  }
  // The host copy of the row offsets alone (rows + 1; for a handle made on the device, they are
  // downloaded on first use, without the columns).
  const int32_t* host_row_ptr() const {
    if (pending_) fetch_host_row_ptr();
    return host_row_ptr_.data();
  }
  // Orders `stream` after the operation that wrote a device-made handle's arrays (for the other
  // handles, nothing): work queued on it afterwards may read the pattern and write the values
  // without the host copy of host_pattern().
  void order_after_producer(CUstream stream) const;
  // A blocking download of the whole matrix (pattern and values) as a host Csr<T>.
  Csr<T> download() const;

  // Replaces the values (same count as nnz, else InvalidInputError); keeps the pattern caches.
  void update_values(const std::vector<T>& values);
  // Takes `values` (nnz values of T, else InvalidInputError; borrowed or owned) in place of the
  // current ones, which are released (freed if owned); keeps the pattern caches.
  void use_values(DeviceBuffer values);
  // Tells the handle that its values were rewritten on the device (by the caller's kernels,
  // in place): what was derived from the old values is rebuilt on the next call.
  void values_changed() { ++values_version_; }
  uint64_t values_version() const { return values_version_; }

  // The per-handle cache: key -> shared object. find() returns nullptr when absent.
  std::shared_ptr<void> find(const std::string& key) const;
  void attach(const std::string& key, std::shared_ptr<void> value) const;
  // Returns the entry for `key`, building it with make() when absent. make() runs WITHOUT the
  // cache lock, so it may itself use this cache (a plan's preparation attaches formats);
  // when two threads build the same key at once, the first to finish is kept and returned
  // to both.
  // Make: a callable returning std::shared_ptr<V> (a template, not std::function: a call that
  // finds its entry, every call after the first, builds nothing).
  template <class V, class Make>
  std::shared_ptr<V> get_or_create(const std::string& key, Make&& make) const {
    {
      std::lock_guard<std::mutex> lock(cache_->mutex);
      const auto it = cache_->entries.find(key);
      if (it != cache_->entries.end()) return std::static_pointer_cast<V>(it->second);
    }
    std::shared_ptr<void> made = make();
    std::lock_guard<std::mutex> lock(cache_->mutex);
    auto& slot = cache_->entries[key];
    if (!slot) slot = std::move(made);
    return std::static_pointer_cast<V>(slot);
  }

 private:
  friend class Runtime;  // makes the handles of its results (spgemm's C)
  friend struct detail::RuntimeState;  // makes the handles of operands it derives (a transpose)
  struct Cache {
    std::mutex mutex;
    std::map<std::string, std::shared_ptr<void>> entries;
  };
  struct PendingPattern;  // the producer's event and the once-only download

  // Takes arrays an operation wrote on the device (rows + 1 offsets, nnz columns and values)
  // and the event recorded after its last write to them. Not validated: the producer
  // guarantees a well-formed pattern.
  DeviceCsr(const Context& context, int32_t rows, int32_t cols, int64_t nnz, DeviceBuffer row_ptr, DeviceBuffer col_idx,
            DeviceBuffer values, Event ready);
  void fetch_host_row_ptr() const;
  void fetch_host_pattern() const;

  Context context_;
  int32_t rows_ = 0;
  int32_t cols_ = 0;
  int64_t nnz_ = 0;
  // Filled at construction, or once by fetch_host_pattern (then read-only).
  mutable std::vector<int32_t> host_row_ptr_;
  mutable std::vector<int32_t> host_col_idx_;
  DeviceBuffer row_ptr_;
  DeviceBuffer col_idx_;
  DeviceBuffer values_;
  std::shared_ptr<PendingPattern> pending_;  // null: the host pattern is present
  uint64_t values_version_ = 0;
  std::unique_ptr<Cache> cache_ = std::make_unique<Cache>();
};

// A row-major dense matrix in device memory: element (r, c) at data()[r * ld + c], ld >= cols.
template <class T>
class DeviceDense {
 public:
  // Uninitialized storage (ld = 0 means ld = cols); InvalidInputError on negative sizes or ld < cols.
  DeviceDense(const Context& context, int32_t rows, int32_t cols, int64_t ld = 0);
  // A copy of `host` with ld = cols.
  DeviceDense(const Context& context, const Dense<T>& host);
  // A matrix over `storage` (usually borrowed: the caller's array), which must hold its
  // (rows - 1)·ld + cols elements (InvalidInputError naming both sizes otherwise). As an
  // output (C) only its rows×cols elements are written: the elements between cols and ld (the
  // caller's other columns, for a view of a wider array) keep their values.
  DeviceDense(const Context& context, DeviceBuffer storage, int32_t rows, int32_t cols, int64_t ld = 0);

  int32_t rows() const { return rows_; }
  int32_t cols() const { return cols_; }
  int64_t ld() const { return ld_; }
  T* data() const { return buffer_.as<T>(); }
  const DeviceBuffer& buffer() const { return buffer_; }
  DeviceBuffer& buffer() { return buffer_; }

  // Blocking copies of the rows×cols elements; `host` must have the same shape.
  void upload(const Dense<T>& host);
  Dense<T> download() const;
  // Sets the rows×cols elements to zero on `stream`; the elements between cols and ld keep theirs.
  void clear_async(CUstream stream);

 private:
  Context context_;
  int32_t rows_ = 0;
  int32_t cols_ = 0;
  int64_t ld_ = 0;
  DeviceBuffer buffer_;
};

}  // namespace sparsejit
