"""The package's exceptions: one per error category of the C++ library, each also a subclass
of the built-in exception Python code already catches for that kind of problem. The C++
module raises these (its translator imports this module), with the library's message."""


class Error(RuntimeError):
    """Every error sparsejit raises."""


class InvalidInputError(Error, ValueError):
    """The caller's arrays or arguments are wrong: a shape, a dtype, an index, an option."""


class UnsupportedError(Error):
    """A valid request this build or machine cannot serve (no CUDA driver or GPU, say)."""


class CudaError(Error):
    """A CUDA driver, runtime or library call failed (out of GPU memory included)."""


class CompileError(Error):
    """NVRTC rejected a rendered kernel; `log` and `source` hold its log and the source."""

    log = ""
    source = ""


class IoError(Error, OSError):
    """A matrix file could not be opened, read or parsed."""
