"""sparsejit against PyTorch from Python, call for call: SpMM against torch.sparse.mm on the
same CSR tensor, SDDMM against torch.sparse.sampled_addmm, at the same shapes, each call as a
user makes it (the result allocated, the Python layer included).

Per implementation and shape it measures
  device_ms  CUDA events around `repeat` back-to-back calls, divided by `repeat`: what a call
             costs in a stream of calls (GPU time, or host time where that is longer);
  host_us    wall time of submitting one call (the loop of `repeat` calls without waiting for
             the GPU, divided by `repeat`), after a synchronization: the Python and C++ host
             overhead of one call;
and checks sparsejit's result against PyTorch's. One JSON line per (matrix, op, K) goes to
--json-out (default: stdout), a table to stderr.

    python python/benchmarks/python_bench.py gen:uniform:100000:32 ../shared/matrices/*.mtx.gz -k 32,128
"""

import argparse
import json
import sys
import time

import torch

import sparsejit


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="+", help="matrix files (.mtx, .smtx, gzip or not) or gen: specs")
    p.add_argument("-k", default="32,128,512", help="dense columns, comma-separated (default 32,128,512)")
    p.add_argument("--ops", default="spmm,sddmm", help="spmm, sddmm or both (default)")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--repeat", type=int, default=50, help="calls per measurement (default 50)")
    p.add_argument("--json-out", help="file for the JSON lines (default stdout)")
    return p.parse_args(argv)


def timed(call, repeat):
    """(device ms per call, host µs per call) of `call` made `repeat` times back to back."""
    for _ in range(3):  # warm-up: plans made, measured selection settled, allocator primed
        call()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(repeat):
        call()
    end.record()
    end.synchronize()
    device_ms = start.elapsed_time(end) / repeat
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(repeat):
        call()
    host_us = (time.perf_counter() - begin) * 1e6 / repeat
    torch.cuda.synchronize()
    return device_ms, host_us


def relative_error(out, ref):
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def csr_tensor(source, dtype):
    h = sparsejit.load(source)
    return torch.sparse_csr_tensor(
        torch.from_numpy(h.indptr), torch.from_numpy(h.indices), torch.from_numpy(h.data).to(dtype), h.shape
    ).cuda()


def spmm_case(a, k):
    """(the Matrix, our call, PyTorch's call, None) for C = A·B."""
    m = sparsejit.Matrix(a)
    b = torch.randn(a.shape[1], k, dtype=a.dtype, device="cuda")
    return m, (lambda: sparsejit.spmm(m, b)), (lambda: torch.sparse.mm(a, b)), None


def sddmm_case(a, k):
    """(the Matrix, our call, PyTorch's call, S's values) for P = S ∘ (A·Bᵀ): sampled_addmm
    does not scale by S's values, so the check multiplies its values by them."""
    m = sparsejit.Matrix(a)
    x = torch.randn(a.shape[0], k, dtype=a.dtype, device="cuda")
    y = torch.randn(a.shape[1], k, dtype=a.dtype, device="cuda")
    bt = y.t()
    return m, (lambda: sparsejit.sddmm(m, x, y)), (lambda: torch.sparse.sampled_addmm(a, x, bt, beta=0.0)), a.values()


def measure(source, a, op, k, repeat):
    m, ours, theirs, scale = (spmm_case if op == "spmm" else sddmm_case)(a, k)
    ours_ms, ours_us = timed(ours, repeat)
    theirs_ms, theirs_us = timed(theirs, repeat)
    expected = theirs() if scale is None else theirs().values() * scale
    error = relative_error(ours(), expected)
    decision = m.last_decision
    nnz = a.values().numel()
    return {
        "matrix": source, "rows": a.shape[0], "cols": a.shape[1], "nnz": nnz, "op": op, "k": k,
        "dtype": str(a.dtype).rpartition(".")[2], "variant": decision["variant"], "source": decision["source"],
        "sparsejit_ms": ours_ms, "torch_ms": theirs_ms, "speedup": theirs_ms / ours_ms,
        "sparsejit_host_us": ours_us, "torch_host_us": theirs_us,
        "sparsejit_gflops": 2 * nnz * k / ours_ms / 1e6, "torch_gflops": 2 * nnz * k / theirs_ms / 1e6,
        "rel_error": error, "torch_version": torch.__version__, "device": torch.cuda.get_device_name(),
    }  # fmt: skip


def main(argv=None):
    args = parse_args(argv)
    out = open(args.json_out, "w") if args.json_out else sys.stdout
    dtype = getattr(torch, args.dtype)
    print(f"{'matrix':32} {'op':5} {'k':>4} {'ours ms':>9} {'torch ms':>9} {'speedup':>7} {'host us':>8} {'torch us':>8}", file=sys.stderr)
    for source in args.inputs:
        a = csr_tensor(source, dtype)
        for op in args.ops.split(","):
            for k in (int(v) for v in args.k.split(",")):
                r = measure(source, a, op, k, args.repeat)
                print(json.dumps(r), file=out, flush=True)
                print(f"{source[-32:]:32} {op:5} {k:4} {r['sparsejit_ms']:9.4f} {r['torch_ms']:9.4f} {r['speedup']:7.2f} "
                      f"{r['sparsejit_host_us']:8.1f} {r['torch_host_us']:8.1f}", file=sys.stderr)  # fmt: skip


if __name__ == "__main__":
    main()
