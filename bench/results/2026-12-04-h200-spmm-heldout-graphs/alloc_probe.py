"""Host cost of making a CUDA result tensor in PyTorch, ways side by side (issue 28 probe)."""
import time, statistics, sys
import torch, cupy
dev = torch.device("cuda", 0)
b = torch.empty(20000, 32, device=dev)
torch.cuda.synchronize()
N = 2000
def per_call(fn, n=N):
    t0 = time.perf_counter(); 
    for _ in range(n): fn()
    return (time.perf_counter() - t0) / n * 1e6
def bench(name, setup_fn, fn):
    rounds = []
    for _ in range(9):
        setup_fn()
        rounds.append(per_call(fn))
    print(f"{name:44s} median {statistics.median(rounds):6.2f} us  min {min(rounds):6.2f}")
keep = []
def noop(): pass
bench("new_empty(20000, 32)", noop, lambda: b.new_empty(20000, 32))
bench("torch.empty((20000,32), dtype, device)", noop, lambda: torch.empty((20000, 32), dtype=torch.float32, device=dev))
bench("torch.empty(20000, 32, device=dev)", noop, lambda: torch.empty(20000, 32, device=dev))
pool = cupy.cuda.alloc(20000 * 32 * 4 * 1)
caps = []
arrs = []
def make_caps():
    caps.clear()
    base = cupy.ndarray((20000, 32), dtype=cupy.float32, memptr=pool)
    for _ in range(N): caps.append(base.__dlpack__())
it = None
def consume():
    torch._C._from_dlpack(caps.pop())
bench("torch._C._from_dlpack(capsule)", make_caps, consume)
def consume2():
    torch.from_dlpack(caps.pop())
bench("torch.from_dlpack(capsule)", make_caps, consume2)
base = cupy.ndarray((20000, 32), dtype=cupy.float32, memptr=pool)
bench("cupy __dlpack__() (producer)", noop, lambda: base.__dlpack__())
x = torch.empty(20000, 32, device=dev)
bench("torch elementwise op x.mul_(1.0)", noop, lambda: x.mul_(1.0))
torch.cuda.synchronize()
