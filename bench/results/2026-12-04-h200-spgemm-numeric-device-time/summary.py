"""Prints this record's table: the numeric phase per matrix on both clocks, and the geomeans."""
import json, math, sys
from pathlib import Path

geomean = lambda v: math.exp(sum(map(math.log, v)) / len(v))
here = Path(sys.argv[1] if len(sys.argv) > 1 else ".")
for dtype in ("f32", "f64"):
    rows = [json.loads(l) for l in open(here / f"auto_{dtype}.jsonl")]
    for r in rows:
        n = r["numeric"]
        print(f"{dtype} {r['matrix'][:28]:28s} {r['products']:>10d} products | events {n['ms'] * 1e3:7.1f} vs {n['vendor_ms'] * 1e3:7.1f} us"
              f" {n['speedup']:.2f}x | device {n['graph_ms'] * 1e3:7.1f} vs {n['vendor_graph_ms'] * 1e3:7.1f} us {n['graph_speedup']:.2f}x"
              f" | check {n['check']['ok']}")
    for field in ("speedup", "graph_speedup"):
        v = [r["numeric"][field] for r in rows]
        print(f"{dtype} {field}: geomean {geomean(v):.3f}, min {min(v):.2f}, over {len(v)}")
    small = [r["numeric"] for r in rows if r["products"] < 1_000_000]
    print(f"{dtype} under 1 M products ({len(small)}): events {geomean([n['speedup'] for n in small]):.2f}x, "
          f"device {geomean([n['graph_speedup'] for n in small]):.2f}x; ours on the device "
          f"{min(n['graph_ms'] for n in small) * 1e3:.1f}-{max(n['graph_ms'] for n in small) * 1e3:.1f} us")
