#!/usr/bin/env python3
"""A markdown table of `sparsejit bench --op spamm --devices ...` records: per (size,
precision, operands, share, GPUs) our call on one GPU, the call spread over the GPUs with the
operands on rank 0 (`sent`: B broadcast and rows of A sent every call, C gathered back) and
with the operands replicated beforehand (`resident`: C left on the GPUs), each as time, speedup
over our one GPU and parallel efficiency (that speedup over the GPU count), and the resident
call over cuBLAS on one GPU (the class's GEMM of each row, as bench/spamm_table.py takes it).

    bench/spamm_devices_table.py RESULTS.jsonl... > table.md
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lines import read_records  # noqa: E402

REQUIRED = ["n", "precision", "operands", "target_ratio", "ms", "devices", "devices_ms", "resident_ms", "resident_speedup"]


def gemm_ms(r):
    """cuBLAS on one GPU for the row's class: its own call on f32 operands at fp16/bf16."""
    if r["operands"] == "value" and r["precision"] in ("fp16", "bf16"):
        return r["baseline_f32_inputs_ms"]
    return r["baseline_ms"]


def table(rows):
    head = ["N", "precision", "operands", "share", "GPUs", "1 GPU ms", "sent ms", "sent x1", "sent eff.", "resident ms",
            "resident x1", "resident eff.", "resident over cuBLAS", "rel. error 1 GPU / resident"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in sorted(rows, key=lambda r: (r["n"], r["precision"], r["operands"], r["target_ratio"], r["devices"])):
        gpus = r["devices"]
        sent, resident = r["ms"] / r["devices_ms"], r["ms"] / r["resident_ms"]
        cells = [str(r["n"]), r["precision"], r["operands"], f"{100 * r['target_ratio']:.0f}%", str(gpus), f"{r['ms']:.2f}",
                 f"{r['devices_ms']:.2f}", f"{sent:.2f}x", f"{100 * sent / gpus:.0f}%", f"{r['resident_ms']:.2f}", f"{resident:.2f}x",
                 f"{100 * resident / gpus:.0f}%", f"{gemm_ms(r) / r['resident_ms']:.2f}x",
                 f"{r.get('relative_error', float('nan')):.3g} / {r.get('resident_relative_error', float('nan')):.3g}"]
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    rows = []
    for path in argv[1:]:
        rows += read_records(path, REQUIRED, "spamm_devices_table", "a spread spamm record")
    print(table(rows))


if __name__ == "__main__":
    main(sys.argv)
