"""sparsejit for Python: sparse products (SpMM, SDDMM, SpGEMM, SpAMM) on NVIDIA GPUs with kernels planned,
compiled and cached by the sparsejit C++ runtime, on PyTorch tensors and CuPy arrays in place
(no copies), on the caller's current stream. See README.md ("Python") and docs/PYTHON.md."""

from ._errors import CompileError, CudaError, Error, InvalidInputError, IoError, UnsupportedError
from ._matrix import Matrix
from ._ops import HostCsr, explain, load, sddmm, spamm, spgemm, spmm, variants
from ._sparsejit import __version__, device_count, driver_available, driver_unavailable_reason

__all__ = [
    "CompileError", "CudaError", "Error", "HostCsr", "InvalidInputError", "IoError", "Matrix",
    "UnsupportedError", "__version__", "device_count", "driver_available", "driver_unavailable_reason",
    "explain", "load", "sddmm", "spamm", "spgemm", "spmm", "variants",
]  # fmt: skip
