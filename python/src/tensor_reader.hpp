// The products' fast path on PyTorch tensors: reads a tensor's address and shape, and makes a
// result of its kind, through the CPython API and the tensor's public methods (dtype,
// get_device, is_contiguous, shape, data_ptr, new_empty), so a call runs no Python code of
// ours between its arguments and the launch. Each read is a few of PyTorch's attribute
// lookups; the Python lines that made the same reads cost about as much again on the device's
// host. No PyTorch headers: what is not such a tensor is refused (nullopt), and the package's
// general path reads it and says what is wrong.
#pragma once

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>
#include <utility>

namespace sparsejit::python {

// A contiguous device array: its address and extents (cols 1 for a vector).
struct PlainTensor {
  uintptr_t ptr = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};

class TensorReader {
 public:
  // Operands of `dtype` (a torch.dtype) on CUDA device `device`; `current_stream(device)` gives
  // the caller's current stream as an integer (torch._C._cuda_getCurrentRawStream).
  TensorReader(nanobind::object dtype, int device, nanobind::object current_stream);

  // x when it is a contiguous 2-D tensor of the dtype and device with extents below 2^31;
  // nullopt otherwise, with no Python error left set.
  std::optional<PlainTensor> matrix(nanobind::handle x) const;
  // x when it is a contiguous 1-D tensor of the dtype and device; nullopt otherwise.
  std::optional<PlainTensor> vector(nanobind::handle x) const;
  // like.new_empty(rows, cols) (cols < 0: a vector of `rows`) and its address.
  std::pair<nanobind::object, uintptr_t> new_empty(nanobind::handle like, int64_t rows, int64_t cols = -1) const;
  // The caller's current stream on the device.
  uintptr_t stream() const;
  // Whether x is a tensor that requires gradients (false for anything else).
  static bool requires_grad(nanobind::handle x);

 private:
  std::optional<PlainTensor> read(nanobind::handle x, Py_ssize_t dims) const;
  nanobind::object dtype_;
  nanobind::object device_;  // the device index as a Python int, passed to current_stream_
  int device_index_;
  nanobind::object current_stream_;
};

// PyTorch's count of the in-place writes to tensor x (its _version); nullopt for an array
// without one (CuPy's), whose writes its owner reports.
std::optional<int64_t> write_count(nanobind::handle x);

}  // namespace sparsejit::python
