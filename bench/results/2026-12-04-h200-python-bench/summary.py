"""Prints this record's geomeans: sparsejit from Python over PyTorch, per op and K, and the host
time of submitting one call (python_bench.py's sparsejit_host_us and torch_host_us)."""
import json, math, sys
from pathlib import Path

geomean = lambda v: math.exp(sum(map(math.log, v)) / len(v))
rows = [json.loads(l) for l in open(Path(sys.argv[1] if len(sys.argv) > 1 else ".") / "python_bench.jsonl")]
for op in ("spmm", "sddmm"):
    for k in sorted({r["k"] for r in rows}):
        sel = [r for r in rows if r["op"] == op and r["k"] == k]
        print(f"{op} K={k}: {len(sel)} inputs, over PyTorch geomean {geomean([r['speedup'] for r in sel]):.2f}x "
              f"(min {min(r['speedup'] for r in sel):.2f}x), host us a call ours {min(r['sparsejit_host_us'] for r in sel):.1f}-"
              f"{max(r['sparsejit_host_us'] for r in sel):.1f}, PyTorch's {min(r['torch_host_us'] for r in sel):.1f}-{max(r['torch_host_us'] for r in sel):.1f}")
