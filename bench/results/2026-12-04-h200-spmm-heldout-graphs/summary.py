"""Prints this record's table: auto over cuSPARSE per held-out graph and K, and the geomeans
without the anchor (cit-HepPh, a shared graph, for comparison with the earlier records)."""
import json, math, sys
from pathlib import Path

ANCHOR = "cit-HepPh"
rows = [json.loads(l) for l in open(Path(sys.argv[1] if len(sys.argv) > 1 else ".") / "heldout.jsonl")]
for r in rows:
    print(f"K={r['k']:4d} {r['matrix']:26s} {r['auto']['variant']:10s} {r['auto']['ms'] * 1e3:7.1f} us, "
          f"cuSPARSE {r['vendor']['best'] * 1e3:7.1f} us ({r['vendor']['best_alg']}): {r['speedup']:.3f}x")
for k in sorted({r["k"] for r in rows}):
    held = [r["speedup"] for r in rows if r["k"] == k and r["matrix"] != ANCHOR]
    g = math.exp(sum(map(math.log, held)) / len(held))
    print(f"K={k}: held-out {len(held)}, geomean {g:.3f}, lowest {min(held):.3f}")
