"""On a GPU, against PyTorch's own results: SpMM against torch.sparse.mm, SDDMM against
torch.sparse.sampled_addmm, gradients against torch.autograd.gradcheck (f64), the caller's
stream, zero-copy operands, and CuPy. Skipped, saying why, without PyTorch or a GPU."""

import pytest

import sparsejit

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="PyTorch sees no CUDA GPU"),
    pytest.mark.skipif(not sparsejit.driver_available(), reason=sparsejit.driver_unavailable_reason() or "no driver"),
]

TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-12}


def random_csr(rows, cols, per_row, dtype=torch.float32, index_dtype=torch.int64, seed=0):
    """A torch.sparse_csr_tensor with about per_row entries a row, on the GPU."""
    g = torch.Generator().manual_seed(seed)
    dense = (torch.rand(rows, cols, generator=g) < per_row / cols).to(dtype) * torch.randn(rows, cols, generator=g, dtype=dtype)
    csr = dense.to_sparse_csr()
    crow, col = csr.crow_indices().to(index_dtype), csr.col_indices().to(index_dtype)
    return torch.sparse_csr_tensor(crow, col, csr.values(), (rows, cols)).cuda()


def relative_error(out, ref):
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("variant", [None, "rs", "csr_vector", "cusparse"])  # each computes A·B and Aᵀ·B
def test_spmm_matches_torch_sparse_mm(dtype, transpose_a, variant):
    a = random_csr(500, 300, 12, dtype)
    b = torch.randn(a.shape[0] if transpose_a else a.shape[1], 40, dtype=dtype, device="cuda")
    c = sparsejit.spmm(a, b, transpose_a=transpose_a, variant=variant)
    reference = torch.sparse.mm(a.to_dense().t().to_sparse_csr() if transpose_a else a, b)
    assert isinstance(c, torch.Tensor) and c.device == b.device and c.dtype == dtype
    assert relative_error(c, reference) < TOLERANCE[dtype]


def test_strided_operand_is_read_in_place():
    a = random_csr(200, 150, 9)
    wide = torch.randn(150, 96, device="cuda")
    b = wide[:, 12:44]  # leading dimension 96, not contiguous, starting on the 16-byte grid
    assert not b.is_contiguous()
    assert relative_error(sparsejit.spmm(a, b), torch.sparse.mm(a, b.contiguous())) < 1e-5
    with pytest.raises(ValueError, match="not a multiple of 16 bytes"):
        sparsejit.spmm(a, wide[:, 10:42])  # 40 bytes in: the kernels' vector loads would fault


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("variant", [None, "coo_flat", "cusparse"])
def test_sddmm_matches_torch_sampled_addmm(dtype, variant):
    s = random_csr(400, 350, 10, dtype)
    a = torch.randn(400, 64, dtype=dtype, device="cuda")
    b = torch.randn(350, 64, dtype=dtype, device="cuda")
    p = sparsejit.sddmm(s, a, b, variant=variant)
    # sampled_addmm samples A·B at S's pattern; sparsejit also scales by S's values.
    sampled = torch.sparse.sampled_addmm(s, a, b.t(), beta=0.0)
    assert p.layout == torch.sparse_csr and p.shape == s.shape
    assert torch.equal(p.crow_indices(), s.crow_indices()) and torch.equal(p.col_indices(), s.col_indices())
    assert relative_error(p.values(), sampled.values() * s.values()) < TOLERANCE[dtype]


def test_matrix_keeps_its_plans_and_follows_new_values():
    a = random_csr(300, 300, 20, index_dtype=torch.int32)
    values = a.values().clone()
    m = sparsejit.Matrix((a.crow_indices(), a.col_indices(), values, a.shape))
    b = torch.randn(300, 32, device="cuda")
    sparsejit.spmm(m, b, variant="rs")  # rs keeps a copy of the values in its split
    assert sparsejit.spmm(m, b, variant="rs") is not None and m.last_call.plan_reused
    assert m.last_decision["variant"] == "rs"
    values.mul_(-2.0)  # in place: PyTorch's version counter tells the matrix
    expected = torch.sparse.mm(torch.sparse_csr_tensor(a.crow_indices(), a.col_indices(), values, a.shape), b)
    assert relative_error(sparsejit.spmm(m, b, variant="rs"), expected) < 1e-5
    other = torch.randn_like(values)
    m.set_values(other)
    expected = torch.sparse.mm(torch.sparse_csr_tensor(a.crow_indices(), a.col_indices(), other, a.shape), b)
    assert relative_error(sparsejit.spmm(m, b, variant="rs"), expected) < 1e-5


def test_spmm_replays_its_launches_as_a_graph_with_each_calls_operands():
    a = random_csr(400, 300, 20, index_dtype=torch.int32)
    m = sparsejit.Matrix(a)
    for variant in ("csr_vector", "csr_merge", "cusparse"):
        for _ in range(3):  # new operands every call: the graph's arguments follow them
            b = torch.randn(300, 48, device="cuda")
            c = torch.full((400, 48), float("nan"), device="cuda")
            sparsejit.spmm(m, b, variant=variant, out=c)
            assert relative_error(c, torch.sparse.mm(a, b)) < 1e-5
            # cuSPARSE's calls are its own: launched as usual
            assert m.last_call.launched_as_graph == (variant != "cusparse")
        with torch.cuda.stream(torch.cuda.Stream()):
            b = torch.randn(300, 48, device="cuda")
            c = sparsejit.spmm(m, b, variant=variant)
        torch.cuda.synchronize()
        assert relative_error(c, torch.sparse.mm(a, b)) < 1e-5


def test_sddmm_replays_its_launches_as_a_graph_with_each_calls_operands():
    s = random_csr(400, 300, 20)
    m = sparsejit.Matrix(s)
    for variant in ("row_gather", "coo_flat", "cusparse"):
        for _ in range(3):
            a, b = torch.randn(400, 40, device="cuda"), torch.randn(300, 40, device="cuda")
            p = torch.full((m.nnz,), float("nan"), device="cuda")
            sparsejit.sddmm(m, a, b, variant=variant, out=p)
            expected = torch.sparse.sampled_addmm(s, a, b.t(), beta=0.0).values() * s.values()
            assert relative_error(p, expected) < 1e-5
            assert m.last_call.launched_as_graph == (variant != "cusparse")


def test_last_call_is_a_record_of_that_call_and_reuse_follows_the_matrix():
    a = random_csr(300, 300, 20, index_dtype=torch.int32)
    m = sparsejit.Matrix(a)
    assert m.last_call is None and m.last_decision is None
    b = torch.randn(300, 32, device="cuda")
    sparsejit.spmm(m, b, variant="csr_rowwarp")
    first = m.last_call
    assert not first.plan_reused
    sparsejit.spmm(m, b, variant="csr_rowwarp")
    assert m.last_call.plan_reused and not first.plan_reused  # a later call leaves a held record alone
    sparsejit.sddmm(m, torch.randn(300, 32, device="cuda"), b)
    assert m.last_decision["op"] == "sddmm"
    m.reuse = "twice"  # the default is read again after a change
    with pytest.raises(sparsejit.InvalidInputError, match="reuse 'twice'"):
        sparsejit.spmm(m, b)
    m.reuse = "once"
    assert torch.allclose(sparsejit.spmm(m, b), torch.sparse.mm(a, b), rtol=1e-4, atol=1e-4)


def test_out_receives_the_product_and_is_checked():
    a = random_csr(400, 300, 10, index_dtype=torch.int32)
    m = sparsejit.Matrix(a)
    b = torch.randn(300, 48, device="cuda")
    out = torch.full((400, 48), float("nan"), device="cuda")
    assert sparsejit.spmm(m, b, out=out) is out
    assert relative_error(out, torch.sparse.mm(a, b)) < 1e-5
    wide = torch.full((400, 64), float("nan"), device="cuda")
    strided_out = wide[:, :48]  # a row stride of 64: the general path
    assert sparsejit.spmm(m, b, out=strided_out) is strided_out
    assert relative_error(strided_out, torch.sparse.mm(a, b)) < 1e-5 and wide[:, 48:].isnan().all()
    with pytest.raises(ValueError, match="C is 300x48"):
        sparsejit.spmm(m, b, out=torch.empty(300, 48, device="cuda"))
    with pytest.raises(ValueError, match="out has dtype float64"):
        sparsejit.spmm(m, b, out=torch.empty(400, 48, device="cuda", dtype=torch.float64))
    with pytest.raises(ValueError, match="not differentiable"):
        sparsejit.spmm(m, b.requires_grad_(), out=out)
    x, y = torch.randn(400, 16, device="cuda"), torch.randn(300, 16, device="cuda")
    p = torch.full((m.nnz,), float("nan"), device="cuda")
    assert sparsejit.sddmm(m, x, y, out=p) is p
    sampled = torch.sparse.sampled_addmm(a, x, y.t(), beta=0.0)
    assert relative_error(p, sampled.values() * a.values()) < 1e-5
    with pytest.raises(ValueError, match="out has 7 entries"):
        sparsejit.sddmm(m, x, y, out=torch.empty(7, device="cuda"))


@pytest.mark.parametrize("transpose_a", [False, True])
def test_gradients_pass_gradcheck_in_f64(transpose_a):
    a = random_csr(30, 20, 4, torch.float64, index_dtype=torch.int32)
    values = a.values().clone().requires_grad_()
    m = sparsejit.Matrix((a.crow_indices(), a.col_indices(), values, a.shape))
    b = torch.randn(30 if transpose_a else 20, 6, dtype=torch.float64, device="cuda", requires_grad=True)

    from sparsejit import autograd  # imports torch: not part of `import sparsejit`

    def product(v, dense):
        return autograd.SpmmFunction.apply(v, dense, m, transpose_a, None, None)

    # nondet_tol: Aᵀ·B may add with atomics, so two backward passes can differ in the last bits.
    assert torch.autograd.gradcheck(product, (values, b), eps=1e-6, atol=1e-8, nondet_tol=1e-12)


def test_gradients_through_spmm_equal_the_dense_formulas():
    a = random_csr(120, 80, 6, index_dtype=torch.int32)
    values = a.values().clone().requires_grad_()
    m = sparsejit.Matrix((a.crow_indices(), a.col_indices(), values, a.shape))
    b = torch.randn(80, 16, device="cuda", requires_grad=True)
    c = sparsejit.spmm(m, b)
    c.square().sum().backward()
    grad_c = 2 * c.detach()
    dense_a = a.to_dense()
    rows = torch.repeat_interleave(torch.arange(120, device="cuda"), a.crow_indices().diff().long())
    cols = a.col_indices().long()
    assert relative_error(b.grad, dense_a.t() @ grad_c) < 1e-5
    assert relative_error(values.grad, (grad_c[rows] * b.detach()[cols]).sum(dim=1)) < 1e-5


def test_spmm_without_gradients_wanted_takes_none_and_stays_right():
    # Operands that require gradients go to autograd only where gradients are recorded: under
    # no_grad the product runs as any other, and its result takes no gradient.
    a = random_csr(200, 150, 8, index_dtype=torch.int32)
    values = a.values().clone().requires_grad_()
    m = sparsejit.Matrix((a.crow_indices(), a.col_indices(), values, a.shape))
    b = torch.randn(150, 24, device="cuda", requires_grad=True)
    expected = torch.sparse.mm(a, b.detach())
    with torch.no_grad():
        c = sparsejit.spmm(m, b)
    assert not c.requires_grad and relative_error(c, expected) < 1e-5
    c = sparsejit.spmm(m, b)
    assert c.requires_grad and relative_error(c.detach(), expected) < 1e-5
    with torch.no_grad():
        values.mul_(3.0)  # in place, after a product: the next one sees it
    with torch.no_grad():
        c = sparsejit.spmm(m, b, reuse="")  # "" is the matrix's own reuse, as None is
    assert relative_error(c, 3.0 * expected) < 1e-5


def test_a_call_survives_python_code_that_changes_the_matrix_mid_call():
    # The handle reads B and allocates C through PyTorch, which may run Python code (here a
    # tensor subclass's __torch_function__) that changes the matrix's default reuse and so
    # drops its kept configs; the call in flight keeps its own.
    a = random_csr(200, 150, 8, index_dtype=torch.int32)
    m = sparsejit.Matrix(a)
    # PyTorch keeps the subclass in its caches for the process: it reaches the matrix only
    # through this list, emptied at the end, so that nothing of ours outlives the test.
    meddled = [m]

    class Meddler(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if func is torch.Tensor.new_empty and meddled:
                meddled[0].reuse = "once" if meddled[0].reuse == "many" else "many"
            return super().__torch_function__(func, types, args, kwargs or {})

    plain = torch.randn(150, 24, device="cuda")
    b = plain.as_subclass(Meddler)
    try:
        for _ in range(3):
            c = sparsejit.spmm(m, b)
            assert relative_error(c.as_subclass(torch.Tensor), torch.sparse.mm(a, plain)) < 1e-5
    finally:
        meddled.clear()


def test_calls_run_on_the_callers_stream():
    # B is written by a long chain of work on a side stream (PyTorch's are not ordered with the
    # legacy default stream); a call made on that stream must see it finished, with no
    # synchronization by the caller. The plan is made first, and forced, so that the call
    # neither reads the pattern nor times a shortlist (both synchronize the stream).
    a = random_csr(2000, 1000, 16)
    m = sparsejit.Matrix(a)
    expected_b = torch.randn(1000, 64, device="cuda")
    sparsejit.spmm(m, expected_b, variant="csr_rowwarp")
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.randn(4096, 4096, device="cuda")
        for _ in range(20):
            x = torch.tanh(x @ x)
        b = expected_b + 0.0 * x[:1000, :64]
        c = sparsejit.spmm(m, b, variant="csr_rowwarp")
    side.synchronize()
    assert relative_error(c, torch.sparse.mm(a, expected_b)) < 1e-5


def test_errors_are_python_exceptions_with_the_library_messages():
    a = random_csr(30, 20, 3)
    with pytest.raises(ValueError, match="spmm: A is 30x20 but B has 7 rows"):
        sparsejit.spmm(a, torch.randn(7, 4, device="cuda"))
    with pytest.raises(ValueError, match="b has dtype float64 but the sparse matrix has float32"):
        sparsejit.spmm(a, torch.randn(20, 4, dtype=torch.float64, device="cuda"))
    with pytest.raises(ValueError, match="b is on cpu, not a CUDA device"):
        sparsejit.spmm(a, torch.randn(20, 4))
    with pytest.raises(ValueError, match="b has strides"):
        sparsejit.spmm(a, torch.randn(4, 20, device="cuda").t())
    with pytest.raises(ValueError, match="sddmm: A has 8 columns but B has 9"):
        sparsejit.sddmm(a, torch.randn(30, 8, device="cuda"), torch.randn(20, 9, device="cuda"))


def test_operands_the_fast_reading_refuses_get_the_general_paths_messages():
    # The C++ reading takes contiguous 2-D tensors of the matrix's dtype and device; every
    # other operand must reach the general path and its message, not a crash or a wrong read.
    a = random_csr(30, 20, 3)
    m = sparsejit.Matrix(a)
    dense = torch.randn(20, 4, device="cuda")
    with pytest.raises(ValueError, match="b is a sparse tensor"):
        sparsejit.spmm(m, dense.to_sparse_csr())
    with pytest.raises(ValueError, match="b must be a 2-D array; it has shape \\(20,\\)"):
        sparsejit.spmm(m, dense[:, 0].contiguous())
    with pytest.raises(TypeError, match="b is a builtins.list, not an array"):
        sparsejit.spmm(m, dense.tolist())
    x, y = torch.randn(30, 8, device="cuda"), torch.randn(20, 8, device="cuda")
    with pytest.raises(ValueError, match="out has dtype float64"):
        sparsejit.sddmm(m, x, y, out=torch.empty(m.nnz, dtype=torch.float64, device="cuda"))
    with pytest.raises(ValueError, match="a has dtype float64"):
        sparsejit.sddmm(m, x.double(), y)
    assert relative_error(sparsejit.spmm(m, dense), torch.sparse.mm(a, dense)) < 1e-5  # and still takes plain ones


class ForeignArray:
    """A DLPack producer that is neither PyTorch nor CuPy (as JAX or Numba arrays are)."""

    def __init__(self, tensor):
        self.tensor = tensor

    def __dlpack__(self, stream=None):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_other_dlpack_arrays_are_operands():
    a = random_csr(100, 80, 5)
    b = torch.randn(80, 24, device="cuda")
    c = sparsejit.spmm(a, ForeignArray(b))
    assert isinstance(c, torch.Tensor)  # the matrix's library allocates the result
    assert relative_error(c, torch.sparse.mm(a, b)) < 1e-5


def test_explain_of_a_matrix_is_the_plan_of_its_pattern():
    a = random_csr(400, 400, 8, index_dtype=torch.int32)
    m = sparsejit.Matrix(a)
    host = (a.crow_indices().cpu().numpy(), a.col_indices().cpu().numpy(), a.shape)
    assert sparsejit.explain(m, k=32)["features"] == sparsejit.explain(host, k=32)["features"]


def test_cupy_arrays_in_cupy_arrays_out():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed")
    sparse = pytest.importorskip("cupyx.scipy.sparse", reason="CuPy has no cupyx.scipy.sparse")
    a = sparse.random(300, 200, density=0.05, format="csr", dtype=cupy.float32, random_state=3)
    b = cupy.random.standard_normal((200, 16), dtype=cupy.float32)
    c = sparsejit.spmm(a, b)
    assert isinstance(c, cupy.ndarray)
    assert float(cupy.linalg.norm(c - a @ b) / cupy.linalg.norm(a @ b)) < 1e-5
    x, y = cupy.random.standard_normal((300, 8), dtype=cupy.float32), cupy.random.standard_normal((200, 8), dtype=cupy.float32)
    p = sparsejit.sddmm(a, x, y)
    rows = cupy.repeat(cupy.arange(300), cupy.diff(a.indptr).get().tolist())
    expected = a.data * (x[rows] * y[a.indices]).sum(axis=1)
    assert isinstance(p, sparse.csr_matrix) and float(cupy.abs(p.data - expected).max()) < 1e-4


def decay_matrix(n, dtype, seed):
    """Entries that fall off as 1/(1 + |i - j|)^2 away from the diagonal (SpAMM's inputs)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    i = torch.arange(n, device="cuda")
    falloff = (1.0 + (i[:, None] - i[None, :]).abs().to(dtype)) ** -2
    return falloff * torch.randn(n, n, dtype=dtype, device="cuda", generator=g)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_spamm_matches_the_product_and_its_bound(dtype):
    a, b = decay_matrix(300, dtype, 1), decay_matrix(300, dtype, 2)
    exact = a @ b
    c, info = sparsejit.spamm(a, b)  # τ = 0: every tile product kept
    assert isinstance(c, torch.Tensor) and c.dtype == dtype
    assert info["tau"] == 0 and info["valid_ratio"] == 1.0
    assert relative_error(c, exact) < TOLERANCE[dtype] * 10
    c, info = sparsejit.spamm(a, b, valid_ratio=0.5, variant="simt")  # the tile kernel searches τ
    assert 0 < info["valid_ratio"] < 1 and info["decision"]["op"] == "spamm"
    assert (c - exact).norm().item() <= info["error_bound"] * (1 + 1e-3) + 1e-4 * exact.norm().item()
    # Asked for a share, auto takes cuBLAS at this size (the search alone costs more) and
    # reports what it computed: every product, bound 0.
    c, info = sparsejit.spamm(a, b, valid_ratio=0.5)
    assert info["decision"]["variant"] == "cublas" and info["valid_ratio"] == 1.0 and info["error_bound"] == 0
    assert relative_error(c, exact) < TOLERANCE[dtype] * 10


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_spgemm_matches_torch_and_owns_its_arrays(dtype):
    a = random_csr(200, 150, 6, dtype, seed=1)
    b = random_csr(150, 120, 5, dtype, seed=2)
    c = sparsejit.spgemm(a, b)
    assert c.layout == torch.sparse_csr and c.shape == (200, 120) and c.dtype == dtype
    assert c.crow_indices().dtype == torch.int32 and c.values().device == a.device
    assert relative_error(c.to_dense(), torch.sparse.mm(a, b).to_dense()) < TOLERANCE[dtype]
    gram = sparsejit.spgemm(a, a, transpose_b=True)  # A·Aᵀ
    dense = a.to_dense()
    assert gram.shape == (200, 200)
    assert relative_error(gram.to_dense(), dense @ dense.t()) < TOLERANCE[dtype]
    values = c.values()
    del c  # the runtime's arrays live as long as a tensor over them
    assert torch.isfinite(values).all() and values.numel() > 0


def test_spgemm_refuses_mismatched_operands():
    a = random_csr(20, 10, 3)
    with pytest.raises(ValueError, match="spgemm: A is 20x10 but B has 11"):
        sparsejit.spgemm(a, random_csr(11, 5, 2))
    with pytest.raises(ValueError, match="b has dtype float64 but a has float32"):
        sparsejit.spgemm(a, random_csr(10, 5, 2, torch.float64))
