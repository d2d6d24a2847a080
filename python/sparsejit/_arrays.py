"""The caller's arrays as the C++ module takes them: a device pointer with its shape, leading
dimension, dtype and device. PyTorch tensors and CuPy arrays are read through their own
attributes (a few hundred nanoseconds, where a DLPack capsule costs microseconds per call);
any other producer of DLPack GPU arrays goes through __dlpack__. (A product's common case,
contiguous PyTorch tensors of the matrix's dtype and device, the C++ handle reads itself:
tensor_reading.) Results are allocated by the
caller's library (PyTorch or CuPy), on the operand's device, and the call runs on that
library's current stream. Only argument conversion lives here: the checks that depend on the
operation (shapes that must agree) are the C++ library's, with its messages."""

import sys
from typing import NamedTuple

from . import _sparsejit

_DLPACK_CUDA = 2  # DLDeviceType kDLCUDA
_INT32_MAX = 2**31 - 1


class Dense(NamedTuple):
    """A 2-D device array: rows×cols, element (r, c) at ptr + (r·ld + c)·itemsize."""

    ptr: int
    rows: int
    cols: int
    ld: int
    dtype: str  # NumPy's name: "float32"
    device: int
    lib: object  # _Torch, _Cupy, or None for another DLPack producer


class Vector(NamedTuple):
    """A 1-D contiguous device array."""

    ptr: int
    length: int
    dtype: str
    device: int


def _row_major(name, shape, strides, fix):
    """The leading dimension of a 2-D array with `strides` (in elements), or ValueError."""
    if len(shape) != 2:
        raise ValueError(f"{name} must be a 2-D array; it has shape {tuple(shape)}")
    rows, cols = shape
    if rows > _INT32_MAX or cols > _INT32_MAX:
        raise ValueError(f"{name} has shape {tuple(shape)}: sparsejit takes at most 2^31-1 rows and columns")
    # A dimension of extent 1 has no meaningful stride (PyTorch and CuPy may report any).
    col_ok = cols <= 1 or strides[1] == 1
    ld = strides[0] if rows > 1 else cols
    if not col_ok or ld < cols:
        raise ValueError(
            f"{name} has strides {tuple(strides)} (in elements) for shape {tuple(shape)}: sparsejit reads "
            f"row-major arrays (column stride 1, row stride at least the column count); pass {fix}"
        )
    return rows, cols, max(ld, cols)


def _instance_of(module, cls, x):
    """isinstance(x, module.cls) without importing the module: an array of a library that was
    never imported cannot exist."""
    loaded = sys.modules.get(module)
    return loaded is not None and isinstance(x, getattr(loaded, cls))


def _not_cuda(name, where):
    return ValueError(f"{name} is on {where}, not a CUDA device: sparsejit multiplies arrays in GPU memory")


class _Torch:
    """PyTorch tensors."""

    @staticmethod
    def owns(x):
        return _instance_of("torch", "Tensor", x)

    @staticmethod
    def dense(x, name):
        if x.layout is not sys.modules["torch"].strided:
            raise ValueError(f"{name} is a sparse tensor ({x.layout}); this operand must be dense (strided)")
        if not x.is_cuda:
            raise _not_cuda(name, x.device)
        rows, cols, ld = _row_major(name, x.shape, x.stride(), f"{name}.contiguous()")
        return Dense(x.data_ptr(), rows, cols, ld, _Torch.dtype_name(x), x.device.index, _Torch)

    @staticmethod
    def tensor_reading(like):
        """(dtype, device, current stream function) with which the C++ handle reads operands of
        like's dtype and device itself (python/src/tensor_reader.hpp: nearly every call's
        operands, read without running Python code); None where this PyTorch has no raw stream
        call, and every operand takes the general path (dense)."""
        raw_stream = _Torch.raw_stream_call()
        return None if raw_stream is None else (like.dtype, like.get_device(), raw_stream)

    @staticmethod
    def raw_stream_call():
        """PyTorch's call giving a device's current stream as an integer, without the
        torch.cuda.Stream object current_stream() builds (about 2 µs a call): the call PyTorch's
        own fast paths make. None in versions without it."""
        return getattr(sys.modules["torch"]._C, "_cuda_getCurrentRawStream", None)

    @staticmethod
    def vector(x, name):
        if not x.is_cuda:
            raise _not_cuda(name, x.device)
        if x.dim() != 1 or (x.numel() > 1 and x.stride(0) != 1):
            raise ValueError(f"{name} must be a contiguous 1-D tensor; it has shape {tuple(x.shape)}, strides {x.stride()}")
        return Vector(x.data_ptr(), x.numel(), _Torch.dtype_name(x), x.device.index)

    @staticmethod
    def dtype_name(x):
        return str(x.dtype).rpartition(".")[2]  # "torch.float32" -> "float32"

    @staticmethod
    def address(x):
        return x.data_ptr()

    @staticmethod
    def empty(shape, like):
        return sys.modules["torch"].empty(shape, dtype=like.dtype, device=like.device)

    @staticmethod
    def ones(length, like):
        return sys.modules["torch"].ones(length, dtype=like.dtype, device=like.device)

    @staticmethod
    def stream(device):
        raw = _Torch.raw_stream_call()
        return raw(device) if raw else sys.modules["torch"].cuda.current_stream(device).cuda_stream

    @staticmethod
    def csr_parts(a):
        """(indptr, indices, data, shape) of a torch.sparse_csr_tensor, else None."""
        torch = sys.modules.get("torch")
        if torch is None or not isinstance(a, torch.Tensor) or a.layout is torch.strided:
            return None
        if a.layout is not torch.sparse_csr:
            raise ValueError(f"a sparse tensor of layout {a.layout}: sparsejit takes CSR (a.to_sparse_csr())")
        if a.dim() != 2:
            raise ValueError(f"a batched or hybrid CSR tensor of shape {tuple(a.shape)}: sparsejit takes a 2-D matrix")
        return a.crow_indices(), a.col_indices(), a.values(), tuple(a.shape)

    @staticmethod
    def csr(indptr, indices, data, shape):
        """A torch.sparse_csr_tensor over the arrays (not copied)."""
        return sys.modules["torch"].sparse_csr_tensor(indptr, indices, data, shape, check_invariants=False)

    @staticmethod
    def csr_like(a, values):
        """A torch.sparse_csr_tensor with a's pattern (shared, not copied) and `values`."""
        return _Torch.csr(a.crow_indices(), a.col_indices(), values, a.shape)

    @staticmethod
    def adopt(array, device):
        """A tensor over an array exposing __cuda_array_interface__ (kept alive by the tensor)."""
        return sys.modules["torch"].as_tensor(array, device=f"cuda:{device}")

    @staticmethod
    def to_int32(x):
        return x.to(sys.modules["torch"].int32)

    @staticmethod
    def to_host(x):
        return x.detach().cpu().numpy()


class _Cupy:
    """CuPy arrays."""

    @staticmethod
    def owns(x):
        return _instance_of("cupy", "ndarray", x)

    @staticmethod
    def dense(x, name):
        strides = tuple(s // x.itemsize for s in x.strides)
        rows, cols, ld = _row_major(name, x.shape, strides, f"cupy.ascontiguousarray({name})")
        return Dense(x.data.ptr, rows, cols, ld, x.dtype.name, x.device.id, _Cupy)

    @staticmethod
    def tensor_reading(like):
        """CuPy arrays take the general path (dense)."""
        return None

    @staticmethod
    def vector(x, name):
        if x.ndim != 1 or (x.size > 1 and x.strides[0] != x.itemsize):
            raise ValueError(f"{name} must be a contiguous 1-D array; it has shape {x.shape}, strides {x.strides} (bytes)")
        return Vector(x.data.ptr, x.size, x.dtype.name, x.device.id)

    @staticmethod
    def address(x):
        return x.data.ptr

    @staticmethod
    def empty(shape, like):
        cupy = sys.modules["cupy"]
        with like.device:  # CuPy allocates on the current device
            return cupy.empty(shape, dtype=like.dtype)

    @staticmethod
    def ones(length, like):
        cupy = sys.modules["cupy"]
        with like.device:
            return cupy.ones(length, dtype=like.dtype)

    @staticmethod
    def stream(device):
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            return cupy.cuda.get_current_stream().ptr

    @staticmethod
    def csr_parts(a):
        """(indptr, indices, data, shape) of a cupyx.scipy.sparse.csr_matrix, else None."""
        sparse = sys.modules.get("cupyx.scipy.sparse")
        if sparse is None or not sparse.issparse(a):
            return None
        if a.format != "csr":
            raise ValueError(f"a cupyx.scipy.sparse matrix of format {a.format!r}: sparsejit takes CSR (a.tocsr())")
        return a.indptr, a.indices, a.data, tuple(a.shape)

    @staticmethod
    def csr(indptr, indices, data, shape):
        """A cupyx csr_matrix over the arrays (not copied)."""
        return sys.modules["cupyx.scipy.sparse"].csr_matrix((data, indices, indptr), shape=shape, copy=False)

    @staticmethod
    def csr_like(a, values):
        """A cupyx csr_matrix with a's pattern (shared, not copied) and `values`."""
        return _Cupy.csr(a.indptr, a.indices, values, a.shape)

    @staticmethod
    def adopt(array, device):
        """An array over one exposing __cuda_array_interface__ (kept alive by it)."""
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            return cupy.asarray(array)

    @staticmethod
    def to_int32(x):
        return x.astype(sys.modules["cupy"].int32)

    @staticmethod
    def to_host(x):
        return x.get()


_LIBRARIES = (_Torch, _Cupy)


def library_of(x):
    """_Torch or _Cupy when x is one of theirs, else None."""
    for lib in _LIBRARIES:
        if lib.owns(x):
            return lib
    return None


def _dlpack_dense(x, name, stream):
    """A 2-D array of another DLPack producer, ordered before `stream` as the protocol asks."""
    if not hasattr(x, "__dlpack__"):
        raise TypeError(
            f"{name} is a {type(x).__module__}.{type(x).__qualname__}, not an array: sparsejit takes PyTorch tensors, "
            "CuPy arrays and other DLPack GPU arrays"
        )
    device_type, device = x.__dlpack_device__()
    if device_type != _DLPACK_CUDA:
        raise _not_cuda(name, f"DLPack device type {int(device_type)} ({type(x).__module__}.{type(x).__qualname__})")
    # 1 is the legacy default stream in the protocol (0 is not allowed for CUDA).
    ptr, shape, strides, dtype = _sparsejit.dlpack_array(x.__dlpack__(stream=stream or 1))
    rows, cols, ld = _row_major(name, shape, strides, "a row-major copy")
    return Dense(ptr, rows, cols, ld, dtype, device, None)


def dense(x, name, stream=None):
    """The Dense view of a 2-D device array (ValueError or TypeError naming `name`)."""
    lib = library_of(x)
    return lib.dense(x, name) if lib else _dlpack_dense(x, name, stream)


def require_same(operand, name, dtype, device, against):
    """ValueError unless `operand` has `dtype` and lives on `device` (those of `against`)."""
    if operand.dtype != dtype:
        raise ValueError(f"{name} has dtype {operand.dtype} but {against} has {dtype}")
    if operand.device != device:
        raise ValueError(f"{name} is on cuda:{operand.device} but {against} is on cuda:{device}")
