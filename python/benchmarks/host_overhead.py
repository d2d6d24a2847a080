"""Where the host time of one sparsejit call from Python goes: each step of sparsejit.spmm and
sparsejit.sddmm timed alone, next to the whole call and to PyTorch's own calls, on a matrix
small enough that the GPU never holds the host back (the launch queue stays short).

Each line is the median over `--batches` batches of the wall time of `--repeat` calls made
back to back without waiting for the GPU, divided by `--repeat`, in µs per call (the steps
take turns, batch by batch: per_call_us), and beside it the same calls' CPU time of the
calling thread (time.thread_time): what the host spends on them, without the time the
virtual machine's CPU was given to others (on the device machine one PyTorch op's wall time
moves by about half between spells of seconds):

    alloc      the result's allocation as the call makes it (PyTorch's caching allocator)
    c++        the C++ module's product on pointers and shapes alone (the handle's product
               with the Matrix's parsed config: plan lookup, argument checks, the launches)
    plain      the C++ module's product on the tensors, as the package makes it: their
               reading, the result's allocation and the product, no Python code between
    call       the whole call as a user makes it (sparsejit.spmm(m, b))
    call-out   the call into a kept result (sparsejit.spmm(m, b, out=c)): no allocation
    torch      torch.sparse.mm / torch.sparse.sampled_addmm on the same CSR tensor
    torch-op   one PyTorch elementwise op that allocates its result (torch.mul(b, 2.0)):
               what a single launched kernel costs from Python with PyTorch's own machinery
    call/op    call over torch-op: the call's host time in units of PyTorch's own
    device     the device time of one call (call-out's launches captured in a CUDA graph,
               replayed between events): a host time is the host's only where the device's
               is well below it (device/call under about 0.7); near or above it, the loop
               measures how fast the GPU retires the calls, not what the host spends

    python python/benchmarks/host_overhead.py gen:uniform:20000:8 -k 32
    python python/benchmarks/host_overhead.py cora.mtx.gz -k 128 --variant csr_merge
"""

import argparse
import statistics
import sys
import time

import torch

import sparsejit
from sparsejit import _sparsejit


def per_call_us(steps, repeat, batches):
    """{step: (median over batches of the wall time of `repeat` calls, per call; the same of
    their thread CPU time)}. The steps take turns batch by batch, so that each sees the same
    spells of a host whose speed drifts (the device's varies by about half between spells):
    their differences and ratios hold where steps timed one after the other would not."""
    for call in steps.values():
        for _ in range(20):
            call()
    torch.cuda.synchronize()
    wall = {name: [] for name in steps}
    cpu = {name: [] for name in steps}
    for _ in range(batches):
        for name, call in steps.items():
            begin, begin_cpu = time.perf_counter(), time.thread_time()
            for _ in range(repeat):
                call()
            wall[name].append((time.perf_counter() - begin) * 1e6 / repeat)
            cpu[name].append((time.thread_time() - begin_cpu) * 1e6 / repeat)
            torch.cuda.synchronize()
    return {name: (statistics.median(wall[name]), statistics.median(cpu[name])) for name in steps}


def device_us(call, replays=50, captured=20):
    """µs of device time per call: `captured` calls captured in one CUDA graph (on a side
    stream, as PyTorch requires), the graph replayed `replays` times between two events."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(stream):
        call()  # what the first call on a stream prepares, outside the capture
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(captured):
                call()
    torch.cuda.current_stream().wait_stream(stream)
    graph.replay()
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return begin.elapsed_time(end) * 1e3 / (replays * captured)


def csr_tensor(source):
    h = sparsejit.load(source)
    return torch.sparse_csr_tensor(
        torch.from_numpy(h.indptr), torch.from_numpy(h.indices), torch.from_numpy(h.data).float(), h.shape
    ).cuda()


def spmm_steps(a, m, k, variant):
    b = torch.randn(a.shape[1], k, device="cuda")
    c = torch.empty(a.shape[0], k, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    rows, cols = a.shape[0], b.shape[1]
    config = _sparsejit.call_config("spmm", variant or "", m.reuse, False)

    def cxx():
        m._handle.spmm(config, b.data_ptr(), b.shape[0], cols, cols, c.data_ptr(), rows, cols, cols, stream)

    return {
        "alloc": lambda: b.new_empty(rows, cols),
        "c++": cxx,
        "plain": lambda: m._handle.spmm_plain(config, b, None),
        "call": lambda: sparsejit.spmm(m, b, variant=variant),
        "call-out": lambda: sparsejit.spmm(m, b, variant=variant, out=c),
        "torch": lambda: torch.sparse.mm(a, b),
        "torch-op": lambda: torch.mul(b, 2.0),
    }


def sddmm_steps(a, m, k, variant):
    x = torch.randn(a.shape[0], k, device="cuda")
    y = torch.randn(a.shape[1], k, device="cuda")
    p = torch.empty(m.nnz, device="cuda")
    stream = torch.cuda.current_stream().cuda_stream
    config = _sparsejit.call_config("sddmm", variant or "", m.reuse, False)

    def cxx():
        m._handle.sddmm(config, x.data_ptr(), x.shape[0], k, k, y.data_ptr(), y.shape[0], k, k, p.data_ptr(), stream)

    yt = y.t()
    return {
        "alloc": lambda: x.new_empty(m.nnz),
        "c++": cxx,
        "plain": lambda: m._handle.sddmm_plain(config, x, y, None),
        "call": lambda: sparsejit.sddmm(m, x, y, variant=variant),
        "call-out": lambda: sparsejit.sddmm(m, x, y, variant=variant, out=p),
        "torch": lambda: torch.sparse.sampled_addmm(a, x, yt, beta=0.0),
        "torch-op": lambda: torch.mul(x, 2.0),
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("matrix", help="a matrix file or gen: spec (small: the GPU must keep up with the host)")
    p.add_argument("-k", type=int, default=32)
    p.add_argument("--repeat", type=int, default=200)
    p.add_argument("--batches", type=int, default=15)
    p.add_argument("--ops", default="spmm,sddmm", help="the products timed, comma-separated")
    p.add_argument("--variant", help="a forced variant (as sparsejit.spmm's variant=) for the products timed")
    args = p.parse_args(argv)
    makers = {"spmm": spmm_steps, "sddmm": sddmm_steps}
    ops = args.ops.split(",")
    unknown = [op for op in ops if op not in makers]
    if unknown:
        p.error(f"--ops {args.ops}: {', '.join(unknown)} is not spmm or sddmm")
    a = csr_tensor(args.matrix)
    m = sparsejit.Matrix(a)
    print(f"sparsejit {sparsejit.__version__} ({sparsejit.__file__}), torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}, {args.matrix}, K = {args.k}; µs per call")  # fmt: skip
    for op in ops:
        steps = makers[op](a, m, args.k, args.variant)
        # An older package (compared against this one) has no plain product: that step is left out.
        steps = {name: call for name, call in steps.items() if name != "plain" or hasattr(m._handle, "spmm_plain")}
        times = per_call_us(steps, args.repeat, args.batches)
        print(f"{op:6} {'step':9} {'wall':>7} {'cpu':>7}", flush=True)
        for name, (us, cpu_us) in times.items():
            print(f"{op:6} {name:9} {us:7.2f} {cpu_us:7.2f}", flush=True)
        call, torch_op = times["call"], times["torch-op"]
        print(f"{op:6} call/op   {call[0] / torch_op[0]:7.2f} {call[1] / torch_op[1]:7.2f}", flush=True)
        device = device_us(steps["call-out"])
        print(f"{op:6} device    {device:7.2f}", flush=True)
        print(f"{op:6} dev/call  {device / call[0]:7.2f}", flush=True)
        print(f"{op:6} variant   {m.last_decision['variant']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
