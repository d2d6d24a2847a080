"""The package's functions: the products, explain, load and variants."""

import json
import sys
from typing import NamedTuple

import numpy as np

from . import _arrays, _sparsejit
from ._arrays import _Torch
from ._matrix import Matrix, runtime


def _matrix(a):
    # A matrix given as arrays serves this one call: its plans die with it.
    return a if isinstance(a, Matrix) else Matrix(a, reuse="once")


def spmm(a, b, *, transpose_a=False, variant=None, reuse=None, out=None):
    """C = A·B, or Aᵀ·B with transpose_a; A sparse (a Matrix, a torch.sparse_csr_tensor, a
    cupyx.scipy.sparse.csr_matrix), B a dense row-major GPU array (PyTorch, CuPy or DLPack).

    C is a new array of B's library (PyTorch in, PyTorch out), computed on that library's
    current stream; or `out`, a row-major array of C's shape, dtype and device that is
    overwritten and returned (a loop that keeps it skips the allocation). `variant` forces a
    kernel ("rs", "cusparse", "rs:threshold=8"; see sparsejit.variants("spmm")); `reuse` is
    "once" or "many" (default: the Matrix's). With PyTorch, gradients flow to B and to the
    Matrix's values (sparsejit.autograd), without `out`."""
    m = _matrix(a)
    # Nearly every call: contiguous PyTorch tensors of the matrix's dtype and device, no
    # gradients wanted. The handle reads them and runs the product without Python code.
    c = m._handle.spmm_call(m.values, b, transpose_a, variant, reuse, out)
    if c is not None:
        return c
    # Only PyTorch tensors have requires_grad; a CuPy or DLPack b takes no gradient.
    if m.lib is _Torch and (getattr(b, "requires_grad", False) or m.values.requires_grad) and sys.modules["torch"].is_grad_enabled():
        if out is not None:
            raise ValueError("spmm: out= is not differentiable (B or the values require gradients): leave out unset")
        from . import autograd

        return autograd.SpmmFunction.apply(m.values, b, m, transpose_a, variant, reuse)
    return m._spmm(b, transpose_a, variant, reuse, out)


def sddmm(s, a, b, *, variant=None, reuse=None, out=None):
    """P = S ∘ (A·Bᵀ): S sparse m×n, A m×k and B n×k dense; p_e = s_e · dot(A[row_e], B[col_e]).

    For a Matrix S the result is the nnz values of P (a 1-D array of A's library, or `out`, nnz
    values of S's dtype and device, overwritten); for a PyTorch or CuPy CSR matrix it is a CSR
    matrix of that library sharing S's pattern (its values `out` when given)."""
    m = _matrix(s)
    p = m._sddmm(a, b, variant, reuse, out)
    return p if s is m else m.lib.csr_like(s, p)


def spgemm(a, b, *, transpose_a=False, transpose_b=False, variant=None, memory_limit=None):
    """C = A·B for sparse A and B (Aᵀ and Bᵀ with the flags; A·Aᵀ is spgemm(a, a,
    transpose_b=True)): a new CSR matrix of A's library, int32 indices, every row's columns
    sorted, holding every column the patterns produce (products that cancel stay as explicit
    zeros). Its arrays are made by the runtime and lent to PyTorch or CuPy without a copy. The
    call synchronizes the stream once, to learn C's size. `variant`: "row_hash", "cusparse".
    `memory_limit`: the most device memory, in bytes, the call may take for its workspace and C
    (> 0; default: what the device has free); variants that would need more are passed over,
    row_hash works in row panels, and a call nothing fits raises ValueError naming the bytes."""
    ma, mb = _matrix(a), _matrix(b)
    _arrays.require_same(mb, "b", ma.dtype, ma.device, "a")
    lib = ma.lib
    rows, cols, indptr, indices, data = _sparsejit.spgemm(
        ma._rt, ma._handle, mb._handle, transpose_a, transpose_b, variant or "", lib.stream(ma.device), memory_limit
    )
    adopt = lib.adopt
    return lib.csr(adopt(indptr, ma.device), adopt(indices, ma.device), adopt(data, ma.device), (rows, cols))


def spamm(a, b, *, tau=None, valid_ratio=None, max_error=None, precision="full", tile=0, variant=None):
    """SpAMM C ≈ A·B for dense A and B whose entries decay away from the diagonal: the tile
    products whose norms multiply to less than τ are skipped. τ is given (`tau`), searched for
    a share of tile products kept (`valid_ratio`) or for an error bound (`max_error`), or 0 (the
    exact product). `precision`: "full", or for float32 "tf32", "fp16", "bf16"; `tile`: 32, 64,
    128 or 0 (the planner's). Returns (C, info): C of A's library (B's for other DLPack arrays),
    info a dict with tau, tile, valid_ratio, error_bound, the search and the decision. The call
    synchronizes the stream once (τ and the kept share are read back), more during a search."""
    lib = _arrays.library_of(a) or _arrays.library_of(b)
    if lib is None:
        raise TypeError("spamm needs a PyTorch tensor or CuPy array among its operands to allocate C with")
    like = a if lib.owns(a) else b
    device = lib.dense(like, "a" if like is a else "b").device
    stream = lib.stream(device)
    ad, bd = _arrays.dense(a, "a", stream), _arrays.dense(b, "b", stream)
    _arrays.require_same(bd, "b", ad.dtype, ad.device, "a")
    options = _sparsejit.spamm_options(tau, valid_ratio, max_error, precision, tile, variant or "", stream)
    c = lib.empty((ad.rows, bd.cols), like)
    info = _sparsejit.spamm(
        runtime(device), ad.dtype, ad.ptr, ad.rows, ad.cols, ad.ld, bd.ptr, bd.rows, bd.cols, bd.ld,
        lib.address(c), ad.rows, bd.cols, bd.cols, options,
    )  # fmt: skip
    return c, json.loads(info)


def _host_pattern(a):
    """(rows, cols, indptr, indices) as int32 NumPy arrays, from a host or device matrix."""
    if isinstance(a, str):
        rows, cols, indptr, indices, _ = _sparsejit.load(a, 1)
        return rows, cols, indptr, indices
    parts = None
    for lib in _arrays._LIBRARIES:
        parts = lib.csr_parts(a)
        if parts is not None:
            indptr, indices, shape = lib.to_host(parts[0]), lib.to_host(parts[1]), parts[3]
            break
    else:
        if hasattr(a, "indptr") and hasattr(a, "indices"):  # scipy.sparse, sparsejit.load
            indptr, indices, shape = a.indptr, a.indices, a.shape
        elif isinstance(a, tuple) and len(a) in (3, 4):
            indptr, indices, shape = a[0], a[1], a[-1]
        else:
            raise TypeError(
                f"explain takes a Matrix, a CSR matrix (PyTorch, CuPy, SciPy), (indptr, indices, shape), "
                f"a matrix file or a 'gen:' spec, not a {type(a).__module__}.{type(a).__qualname__}"
            )
    rows, cols = (int(n) for n in shape)
    return rows, cols, np.ascontiguousarray(indptr, dtype=np.int32), np.ascontiguousarray(indices, dtype=np.int32)


def _dtype_name(dtype):
    """NumPy's name of a dtype given as a string, a NumPy dtype or type, or a PyTorch dtype."""
    try:
        return np.dtype(dtype).name
    except TypeError:  # PyTorch's dtypes print as "torch.float32"
        return str(dtype).rpartition(".")[2]


def explain(a, *, op="spmm", k=128, dtype=None, transpose_a=False, variant=None, reuse=None, device=0, memory_limit=None):
    """The Decision the planner makes for `op` ("spmm", "sddmm", or "spgemm" for C = A·A) on
    A's pattern with K = k columns, as a dict (the fields of `sparsejit explain --json`,
    docs/JSON.md). Nothing runs and no GPU is needed: without one the plan is for a nominal
    sm_90 part. `a` is a Matrix, a CSR matrix of PyTorch, CuPy or SciPy, a tuple
    (indptr, indices, shape), a matrix file or a generator spec ("gen:uniform:10000:16").
    `memory_limit` (spgemm only): the bytes the plan may take, as spgemm's; the Decision's
    `memory` feature shows each candidate's peak against it."""
    options = (k, _dtype_name(dtype or getattr(a, "dtype", None) or "float32"), transpose_a, variant or "", reuse or "", device,
               memory_limit)  # fmt: skip
    if isinstance(a, Matrix):
        text = _sparsejit.explain_matrix(op, a._handle, *options)
    else:
        text = _sparsejit.explain_arrays(op, *_host_pattern(a), *options)
    return json.loads(text)


class HostCsr(NamedTuple):
    """A CSR matrix in NumPy arrays (SciPy's field names)."""

    indptr: np.ndarray  # int32, rows + 1
    indices: np.ndarray  # int32, nnz
    data: np.ndarray  # float64, nnz
    shape: tuple


def load(source, *, seed=1):
    """A matrix file (.mtx, .smtx, plain or gzip; a pattern file gets random values of `seed`)
    or a generator spec ("gen:rmat:100000:1000000", see `sparsejit demo --help`) as a HostCsr."""
    rows, cols, indptr, indices, data = _sparsejit.load(str(source), seed)
    return HostCsr(indptr, indices, data, (rows, cols))


def variants(op):
    """The variants of `op` that `variant=` may force, as {name: what it is}."""
    return dict(_sparsejit.variants(op))
