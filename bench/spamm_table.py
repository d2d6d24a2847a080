#!/usr/bin/env python3
"""A markdown table of `sparsejit bench --op spamm --json-out` records, a row per (size, decay,
precision, operands, share): each path's speedup over cuBLAS of the same precision class timed
beside it, auto's variant and source, and auto with the share asked (the search inside).

The class's GEMM for f32 operands at fp16/bf16 is cuBLAS's own call on those operands
(FAST_16F/16BF, `baseline_f32_inputs_ms`): what a caller holding f32 data would run. The
16-bit rows (and f32, tf32) use the paired GEMM of the same operands (`baseline_ms`).

    bench/spamm_table.py RESULTS.jsonl... > table.md
"""

import json
import sys

PATHS = ("simt", "mma", "wgmma", "cublas")


def load(paths):
    rows = []
    for path in paths:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    sys.exit(f"{path}:{number}: not a JSON record ({e.msg})")
    return rows


def converted(r):
    """f32 operands computed in fp16/bf16: their class's GEMM is cuBLAS's call on f32 operands."""
    return r["operands"] == "value" and r["precision"] in ("fp16", "bf16")


def speedups(r):
    """(τ given, share asked) over the row's class GEMM."""
    if converted(r):
        base = r["baseline_f32_inputs_ms"]
        return base / r["ms"], base / r["with_search_ms"] if "with_search_ms" in r else None
    return r["speedup"], r.get("with_search_speedup")


def table(rows):
    key = lambda r: (r["n"], r["decay"], r["precision"], r["operands"], r["target_ratio"])
    by_path = {key(r) + (r["path"],): r for r in rows}
    shown = [p for p in PATHS if any(r["path"] == p for r in rows)]
    head = ["N", "decay", "precision", "operands", "share"] + [f"{p} (τ given)" for p in shown]
    head += ["auto (τ given)", "auto (share asked)", "search steps, ms"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        if r["path"] != "auto":
            continue
        cells = [str(r["n"]), r["decay"], r["precision"], r["operands"], f"{100 * r['target_ratio']:.0f}%"]
        for p in shown:
            other = by_path.get(key(r) + (p,))
            cells.append(f"{speedups(other)[0]:.2f}x" if other else "-")
        given, asked = speedups(r)
        cells.append(f"{r['variant']} ({r.get('source', '?')}) {given:.2f}x")
        cells.append(f"{r['with_search_variant']} {asked:.2f}x" if asked else "-")
        cells.append(f"{r['search_iterations']}, {r['search_ms']:.2f}")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    print(table(load(argv[1:])))


if __name__ == "__main__":
    main(sys.argv)
