#include "tensor_reader.hpp"

#include <cstdint>
#include <limits>
#include <utility>

namespace nb = nanobind;

namespace sparsejit::python {

namespace {

// The attribute names, interned once: a lookup by an interned string skips hashing it again.
struct Names {
  PyObject* dtype = PyUnicode_InternFromString("dtype");
  PyObject* get_device = PyUnicode_InternFromString("get_device");
  PyObject* is_contiguous = PyUnicode_InternFromString("is_contiguous");
  PyObject* shape = PyUnicode_InternFromString("shape");
  PyObject* data_ptr = PyUnicode_InternFromString("data_ptr");
  PyObject* new_empty = PyUnicode_InternFromString("new_empty");
  PyObject* requires_grad = PyUnicode_InternFromString("requires_grad");
  PyObject* version = PyUnicode_InternFromString("_version");
};

const Names& names() {
  static const Names interned;  // made under the GIL, on the first call, and kept for the process
  return interned;
}

// A read that met something other than the tensor it takes: nothing is left raised, and the
// general path reads the operand again to say what it is.
std::optional<PlainTensor> refused() {
  PyErr_Clear();
  return std::nullopt;
}

nb::object call_method(PyObject* self, PyObject* name) { return nb::steal(PyObject_CallMethodNoArgs(self, name)); }

// An address a tensor's data_ptr() returned; python_error when it raised.
uintptr_t address_of(PyObject* tensor) {
  const nb::object ptr = call_method(tensor, names().data_ptr);
  if (!ptr.is_valid()) throw nb::python_error();
  const uintptr_t value = PyLong_AsUnsignedLongLong(ptr.ptr());
  if (PyErr_Occurred()) throw nb::python_error();
  return value;
}

}  // namespace

TensorReader::TensorReader(nb::object dtype, int device, nb::object current_stream)
    : dtype_(std::move(dtype)), device_(nb::int_(device)), device_index_(device), current_stream_(std::move(current_stream)) {}

std::optional<PlainTensor> TensorReader::matrix(nb::handle x) const { return read(x, 2); }

std::optional<PlainTensor> TensorReader::vector(nb::handle x) const { return read(x, 1); }

std::optional<PlainTensor> TensorReader::read(nb::handle x, Py_ssize_t dims) const {
  PyObject* const self = x.ptr();
  const Names& n = names();
  const nb::object dtype = nb::steal(PyObject_GetAttr(self, n.dtype));
  if (!dtype.is_valid()) return refused();
  if (!dtype.is(dtype_)) return std::nullopt;
  const nb::object device = call_method(self, n.get_device);
  if (!device.is_valid()) return refused();
  if (PyLong_AsLong(device.ptr()) != device_index_) return refused();
  const nb::object contiguous = call_method(self, n.is_contiguous);  // a sparse tensor raises
  if (!contiguous.is_valid()) return refused();
  if (contiguous.ptr() != Py_True) return std::nullopt;
  const nb::object shape = nb::steal(PyObject_GetAttr(self, n.shape));
  if (!shape.is_valid() || !PyTuple_Check(shape.ptr())) return refused();
  if (PyTuple_GET_SIZE(shape.ptr()) != dims) return std::nullopt;
  PlainTensor t;
  t.rows = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), 0));
  t.cols = dims == 2 ? PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), 1)) : 1;
  if (PyErr_Occurred()) return refused();
  constexpr int64_t limit = std::numeric_limits<int32_t>::max();
  if (t.rows > limit || t.cols > limit) return std::nullopt;
  t.ptr = address_of(self);
  return t;
}

std::pair<nb::object, uintptr_t> TensorReader::new_empty(nb::handle like, int64_t rows, int64_t cols) const {
  const nb::object r = nb::int_(rows), c = nb::int_(cols);
  PyObject* args[] = {like.ptr(), r.ptr(), c.ptr()};
  // Sizes as arguments, not a tuple: PyTorch parses a tuple of sizes about 1 µs slower.
  nb::object out = nb::steal(PyObject_VectorcallMethod(names().new_empty, args, cols < 0 ? 2 : 3, nullptr));
  if (!out.is_valid()) throw nb::python_error();
  const uintptr_t ptr = address_of(out.ptr());
  return {std::move(out), ptr};
}

uintptr_t TensorReader::stream() const {
  const nb::object stream = nb::steal(PyObject_CallOneArg(current_stream_.ptr(), device_.ptr()));
  if (!stream.is_valid()) throw nb::python_error();
  const uintptr_t value = PyLong_AsUnsignedLongLong(stream.ptr());
  if (PyErr_Occurred()) throw nb::python_error();
  return value;
}

bool TensorReader::requires_grad(nb::handle x) {
  const nb::object flag = nb::steal(PyObject_GetAttr(x.ptr(), names().requires_grad));
  if (!flag.is_valid()) PyErr_Clear();  // not a tensor: the operand's reading says what it is
  return flag.is_valid() && flag.ptr() == Py_True;
}

std::optional<int64_t> write_count(nb::handle x) {
  const nb::object count = nb::steal(PyObject_GetAttr(x.ptr(), names().version));
  const int64_t value = count.is_valid() ? PyLong_AsLongLong(count.ptr()) : -1;
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return value;
}

}  // namespace sparsejit::python
