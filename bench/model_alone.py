#!/usr/bin/env python3
"""The dispatch targets of issue 26 from `sparsejit bench` JSON lines, per op and K:

  model alone   the planner's choice without timing (Options::measure = false: the record's
                `model`, or `auto` when auto did not time its shortlist) against the oracle
                (bench_lines.oracle_ms: the fastest variant the bench forced, or vendor algorithm
                where its call computes the op, SpMM's and not SDDMM's): the share of matrices
                within 10% of it and the worst ratio (targets: >= 90%, <= 1.3x);
  measuring     what auto's timing of its shortlist cost: the median and largest number of
                calls of auto it took (`measure_calls`, 0 where auto did not time) and the
                largest time (targets: median <= 50 calls, never above 250 ms).

With --held-out FILE (fingerprints, one a line, from `sparsejit tune --from-records --held-out`)
the model-alone lines are also given over the held-out patterns alone: a retrained model is
judged on matrices its training did not see.

    python3 bench/model_alone.py RESULTS/spmm_f32.jsonl [--held-out held_out_spmm.txt]
"""

import argparse
import statistics
import sys
from collections import defaultdict

import bench_lines

WITHIN = 1.10


def model_ms(record):
    """The model-alone time of a record, or None when the record has no auto time."""
    if "model" in record:
        return record["model"]["ms"]
    auto = record.get("auto") or {}
    return auto.get("ms")


def model_line(records):
    ratios = [model_ms(r) / bench_lines.oracle_ms(r) for r in records if model_ms(r) and bench_lines.oracle_ms(r)]
    if not ratios:
        return "no records with an oracle"
    within = sum(ratio <= WITHIN for ratio in ratios)
    return f"{within}/{len(ratios)} = {100.0 * within / len(ratios):.0f}% within 10% of the oracle, worst {max(ratios):.2f}x"


def measuring_line(records):
    calls = [(r.get("auto") or {}).get("measure_calls", 0) or 0 for r in records]
    ms = [(r.get("auto") or {}).get("measure_ms", 0) or 0 for r in records]
    timed = sum(c > 0 for c in calls)
    return (f"timed on {timed}/{len(records)}; calls of auto median {statistics.median(calls):.0f}, "
            f"most {max(calls):.0f}; ms median {statistics.median(ms):.1f}, most {max(ms):.1f}")  # fmt: skip


def read_records(path):
    """The bench records of `path` (JSON objects with k, auto and variants)."""
    return bench_lines.read_records(path, ["k", "auto", "variants"], "model_alone", "a sparsejit bench record")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", help="bench JSON lines files")
    p.add_argument("--held-out", help="fingerprints of the held-out patterns, one a line")
    args = p.parse_args(argv)
    held = None
    if args.held_out:
        with open(args.held_out) as f:
            held = {line.strip() for line in f if line.strip()}
    for path in args.results:
        by_k = defaultdict(list)
        for r in read_records(path):
            by_k[r["k"]].append(r)
        for k in sorted(by_k):
            records = by_k[k]
            print(f"{path} K={k}: {len(records)} matrices")
            print(f"  model alone: {model_line(records)}")
            if held is not None:
                held_records = [r for r in records if r.get("fingerprint") in held]
                print(f"  model alone, held-out patterns: {model_line(held_records)}")
            print(f"  measuring: {measuring_line(records)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
