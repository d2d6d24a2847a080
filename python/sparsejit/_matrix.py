"""Matrix: a sparse CSR matrix on a CUDA device, borrowed from the caller's arrays, that keeps
its measured features and prepared plans (the C++ handle's cache) across calls."""

import json

from . import _arrays, _sparsejit

_runtimes = {}


def runtime(device):
    """The process's one runtime for CUDA device `device` (made on first use)."""
    rt = _runtimes.get(device)
    if rt is None:
        rt = _runtimes[device] = _sparsejit.Runtime(device)
    return rt


def _csr_parts(a):
    """(indptr, indices, data, shape) of a PyTorch or CuPy CSR matrix or of such a 4-tuple."""
    for lib in _arrays._LIBRARIES:
        parts = lib.csr_parts(a)
        if parts is not None:
            return parts
    if isinstance(a, tuple) and len(a) == 4:
        return a
    raise TypeError(
        f"a {type(a).__module__}.{type(a).__qualname__} is not a sparse matrix sparsejit takes: pass a "
        "torch.sparse_csr_tensor, a cupyx.scipy.sparse.csr_matrix, a sparsejit.Matrix or (indptr, indices, data, shape)"
    )


def _int32_indices(x, name, lib):
    """x as int32 (a copy, made once, when the caller's indices are int64)."""
    dtype = lib.vector(x, name).dtype
    if dtype == "int32":
        return x
    if dtype != "int64":
        raise ValueError(f"{name} has dtype {dtype}; sparse indices must be int32 or int64")
    return lib.to_int32(x)


class Matrix:
    """A sparse matrix A in CSR form on a CUDA device, for repeated products with it.

    `a` is a torch.sparse_csr_tensor, a cupyx.scipy.sparse.csr_matrix or a tuple
    (indptr, indices, data, shape) of PyTorch tensors or CuPy arrays on one device. Nothing is
    copied (int64 indices are converted to int32 once); the arrays must stay unchanged, except
    the values (see set_values and values_changed). The pattern is read to the host once here,
    after the work queued on the caller's current stream. `reuse` is the default of the calls
    made with this matrix ("many": the planner may time its shortlist and build per-pattern
    formats, worth it when the pattern is used again; "once").
    """

    def __init__(self, a, *, reuse="many"):
        indptr, indices, data, shape = _csr_parts(a)
        lib = _arrays.library_of(data)
        if lib is None:
            raise TypeError("the matrix's arrays must be PyTorch tensors or CuPy arrays (other DLPack arrays: dense operands only)")
        rows, cols = (int(n) for n in shape)
        self._indptr = _int32_indices(indptr, "indptr", lib)
        self._indices = _int32_indices(indices, "indices", lib)
        offsets = lib.vector(self._indptr, "indptr")
        columns = lib.vector(self._indices, "indices")
        values = lib.vector(data, "data")
        if offsets.length != rows + 1:
            raise ValueError(f"indptr has {offsets.length} entries; a matrix of {rows} rows needs {rows + 1}")
        if values.length != columns.length:
            raise ValueError(f"data has {values.length} entries but indices has {columns.length}")
        for name, part in (("indices", columns), ("data", values)):
            _arrays.require_same(part, name, part.dtype, offsets.device, "indptr")
        self.shape = (rows, cols)
        self.nnz = columns.length
        self.dtype = values.dtype
        self.device = offsets.device
        self.lib = lib
        self._rt = runtime(self.device)
        # The handle keeps what every product reads (the values' write count, the default reuse,
        # the parsed config of each combination of arguments), so a call reads it in C++.
        self._handle = _sparsejit.Csr(
            self._rt, self.dtype, rows, cols, offsets.ptr, columns.ptr, values.ptr, self.nnz, lib.stream(self.device)
        )
        self.values = data
        self._handle.note_values(data)
        self.reuse = reuse
        self._ones = None
        reading = lib.tensor_reading(data)
        if reading is not None:
            self._handle.read_tensors(*reading)

    def __repr__(self):
        return f"sparsejit.Matrix(shape={self.shape}, nnz={self.nnz}, dtype={self.dtype}, device=cuda:{self.device})"

    @property
    def reuse(self):
        """The default of `reuse` for the products made with this matrix."""
        return self._handle.default_reuse

    @reuse.setter
    def reuse(self, value):
        self._handle.default_reuse = value  # checked by the next product, which names it

    def set_values(self, values):
        """Use `values` (nnz values of the matrix's dtype, same device) from now on; not copied."""
        v = self.lib.vector(values, "values")
        if v.length != self.nnz:
            raise ValueError(f"values has {v.length} entries; the matrix has {self.nnz}")
        _arrays.require_same(v, "values", self.dtype, self.device, "the matrix")
        self._handle.use_values(v.ptr)
        self.values = values
        self._handle.note_values(values)

    def values_changed(self):
        """Say that the values were rewritten in place (needed for CuPy; PyTorch's in-place
        writes are seen): what the runtime derived from them is rebuilt on the next call."""
        self._handle.values_changed(self.values)

    def _bind_values(self, values, rewritten):
        """Before a product: take `values` if they are other memory, and tell the handle when
        they were rewritten in place (`rewritten`; the product itself sees the writes PyTorch
        counted: _ready)."""
        if values is not self.values:
            self.set_values(values)
        elif rewritten:
            self.values_changed()

    @property
    def last_call(self):
        """What the last product made with this matrix reported (plan_reused, launched_as_graph:
        its kernels issued as one replay of the plan's CUDA graph, decision_json()),
        None before one; kept by the handle, so a call makes no record Python never reads."""
        return self._handle.last_call

    @property
    def last_decision(self):
        """The Decision of the last product made with this matrix, as a dict (None before one)."""
        call = self._handle.last_call
        return None if call is None else json.loads(call.decision_json())

    def _stream_and_result_library(self, operand):
        lib = _arrays.library_of(operand) or self.lib
        return lib.stream(self.device), lib

    def _dense(self, x, name, stream):
        d = _arrays.dense(x, name, stream)
        _arrays.require_same(d, name, self.dtype, self.device, "the sparse matrix")
        return d

    def _spmm(self, b, transpose_a, variant, reuse, out=None):
        """C = A·B or Aᵀ·B into `out`, else into a new array of b's library (the matrix's for
        other DLPack arrays). The handle reads b and out itself when they are contiguous PyTorch
        tensors of the matrix's dtype and device (nearly every call: its host time is the
        call's); anything else takes the general path."""
        c = self._handle.spmm_plain(self._ready("spmm", transpose_a, variant, reuse), b, out)
        if c is None:
            rows = self.shape[1] if transpose_a else self.shape[0]
            return self._spmm_general(b, rows, transpose_a, variant, reuse, out)
        return c

    def _spmm_general(self, b, rows, transpose_a, variant, reuse, out):
        stream, lib = self._stream_and_result_library(b)
        bd = self._dense(b, "b", stream)
        if out is None:
            out = lib.empty((rows, bd.cols), b if bd.lib else self.values)
        cd = self._dense(out, "out", stream)
        self._call("spmm", (*bd[:4], *cd[:4]), transpose_a, variant, reuse, stream)
        return out

    def _sddmm(self, a, b, variant, reuse, out=None):
        """The values of S ∘ (A·Bᵀ), S this matrix, into `out`, else into a new 1-D array of a's
        library (read as _spmm reads its operands)."""
        p = self._handle.sddmm_call(self.values, a, b, variant, reuse, out)
        return self._sddmm_general(a, b, variant, reuse, out) if p is None else p

    def _sddmm_general(self, a, b, variant, reuse, out):
        stream, lib = self._stream_and_result_library(a)
        ad = self._dense(a, "a", stream)
        bd = self._dense(b, "b", stream)
        if out is None:
            out = lib.empty((self.nnz,), a if ad.lib else self.values)
        p = self._values_out(out)
        self._call("sddmm", (*ad[:4], *bd[:4], p), False, variant, reuse, stream)
        return out

    def _values_out(self, out):
        """The address of `out`, nnz values of this matrix's dtype and device (ValueError else)."""
        lib = _arrays.library_of(out)
        if lib is None:
            raise TypeError(f"out is a {type(out).__module__}.{type(out).__qualname__}: pass a PyTorch tensor or CuPy array")
        v = lib.vector(out, "out")
        if v.length != self.nnz:
            raise ValueError(f"out has {v.length} entries; the matrix has {self.nnz} nonzeros")
        _arrays.require_same(v, "out", self.dtype, self.device, "the sparse matrix")
        return v.ptr

    def _call(self, op, operands, transpose_a, variant, reuse, stream):
        """One product of the handle ("spmm" or "sddmm") on this matrix: `operands` are its
        pointers and shapes between the config and the stream."""
        getattr(self._handle, op)(self._ready(op, transpose_a, variant, reuse), *operands, stream)

    def _ready(self, op, transpose_a, variant, reuse):
        """Before a product: its config (made once per combination of the arguments; reuse
        None: the matrix's), after telling the handle when the values were rewritten in place
        since the last product (PyTorch counts in-place writes in _version; CuPy's are told with
        values_changed). InvalidInputError (a ValueError) for a variant or reuse it refuses."""
        return self._handle.ready(self.values, op, transpose_a, variant, reuse)

    def _pattern(self):
        """This matrix's pattern with every value 1 (made once): SDDMM over it gives the
        gradient of the values."""
        if self._ones is None:
            ones = self.lib.ones(self.nnz, self.values)
            self._ones = Matrix((self._indptr, self._indices, ones, self.shape), reuse=self.reuse)
        return self._ones
