"""Pictures of benchmark results, for people who would rather look than read:

    python -m sparsejit.plot RESULTS.jsonl... [--peak-gflops G] [--bandwidth-gbs B]

reads JSON lines of `sparsejit bench` (--op spmm, sddmm or spgemm: ours automatic, each
variant, cuSPARSE's best; the runtime's own cuSPARSE-backed variant, forced, is named
"cusparse variant") or of python/benchmarks/python_bench.py (sparsejit, PyTorch) and writes,
beside the first file, PNGs of at most 256 colours:
  NAME-profile.png   performance profile: for each implementation, the share of problems it
                     runs within a factor x of the fastest (Dolan and Moré, 2002);
  NAME-speedup.png   the baseline's time over ours against nnz, one series per op and K;
  NAME-roofline.png  ours in GFLOP/s against arithmetic intensity (2·nnz·K flops over the
                     compulsory bytes: A once, the dense operands once, the output once), under
                     the memory-bandwidth and compute ceilings given (H200 defaults);
  NAME-split.png     the baseline's time over ours against the feature the planner's decision
                     tree splits on first (the root of `auto.path` in a bench line: SpMM's rs
                     threshold tree, or a tuned SDDMM model's variant tree; the shipped SDDMM
                     model has none), one marker per K, the split's
                     threshold as a vertical line; a panel per (op, feature, threshold); log x
                     where the values span two decades or more. Written only when some line
                     carries a path (bench lines do; python_bench.py's do not).
matplotlib is needed for the drawing only (pip install matplotlib)."""

import argparse
import itertools
import json
import pathlib

# The baseline each format compares against, and the implementation that is "ours".
_OURS = ("auto", "sparsejit")
_BASELINES = ("cusparse", "torch")


def times_of(record):
    """{implementation: ms} of one result line, either format."""
    if "sparsejit_ms" in record:
        return {"sparsejit": record["sparsejit_ms"], "torch": record["torch_ms"]}
    times = {"auto": record["auto"]["ms"], "cusparse": record["vendor"]["best"]}
    # The runtime's own cusparse variant, forced (SDDMM's adds a scale kernel to the vendor's
    # call), is a variant of ours: it keeps a name of its own, and "cusparse" the vendor's best.
    times.update({("cusparse variant" if name == "cusparse" else name): ms for name, ms in record.get("variants", {}).items()})
    # A variant that did not run holds a word ("unsupported") instead of a time.
    return {name: ms for name, ms in times.items() if isinstance(ms, (int, float)) and ms > 0}


def profile(records, factors):
    """{implementation: [share of problems within each factor of the fastest]}; a problem an
    implementation did not run counts as never within."""
    table = [times_of(r) for r in records]
    names = sorted({name for times in table for name in times})
    shares = {}
    for name in names:
        ratios = [times[name] / min(times.values()) for times in table if name in times]
        shares[name] = [sum(ratio <= f for ratio in ratios) / len(table) for f in factors]
    return shares


def _ours_and_baseline(record):
    """(ours ms, the baseline's ms or None where it did not run: a cuSPARSE SpGEMM that failed)."""
    times = times_of(record)
    ours = next(times[n] for n in _OURS if n in times)
    baseline = next((times[n] for n in _BASELINES if n in times), None)
    return ours, baseline


def speedups(records):
    """{(op, k): [(nnz, baseline ms / ours ms)]} of the lines with a baseline time; k is None for
    SpGEMM's lines (C = A·A has no K)."""
    series = {}
    for r in records:
        ours, baseline = _ours_and_baseline(r)
        if baseline is not None:
            series.setdefault((r["op"], r.get("k")), []).append((r["nnz"], baseline / ours))
    return series


def split_point(record):
    """(feature, value, threshold, speedup) of one bench line: the feature the root of auto's
    tree path splits on, this problem's value of it, the split's threshold and the baseline's
    time over ours; None for a line without a path (python_bench.py, older bench lines, a model
    without a tree) or without a baseline time."""
    auto = record.get("auto")
    path = auto.get("path") if isinstance(auto, dict) else None
    times = times_of(record)
    ours = next((times[n] for n in _OURS if n in times), None)
    baseline = next((times[n] for n in _BASELINES if n in times), None)
    if not path or ours is None or baseline is None:
        return None
    root = path[0]
    return root["feature"], root["value"], root["threshold"], baseline / ours


def split_series(records):
    """{(op, feature, threshold): {k: [(value, speedup)]}}: the lines with a path, grouped by the
    split they share (one model's root is the same for every line of its op)."""
    series = {}
    for r in records:
        point = split_point(r)
        if point is None:
            continue
        feature, value, threshold, speedup = point
        series.setdefault((r["op"], feature, threshold), {}).setdefault(r["k"], []).append((value, speedup))
    return series


def _spans_decades(values):
    """Whether a log axis suits these values: all positive, the largest 100 times the smallest."""
    return min(values) > 0 and max(values) >= 100 * min(values)


def roofline_point(record):
    """(flops per byte, GFLOP/s) of ours on one problem. SpGEMM's C = A·A: 2 flops a product
    (NNZ(Ĉ)) over A read once and C written once, each as CSR."""
    value = 8 if record.get("dtype") in ("f64", "float64") else 4
    nnz, rows, cols = record["nnz"], record["rows"], record["cols"]
    sparse = nnz * (4 + value) + (rows + 1) * 4
    ours, _ = _ours_and_baseline(record)
    if record["op"] == "spgemm":
        flops = 2 * record["products"]
        return flops / (sparse + record["nnz_c"] * (4 + value) + (rows + 1) * 4), flops / ours / 1e6
    k = record["k"]
    if record["op"] == "spmm":
        inner, outer = (rows, cols) if record.get("transpose") else (cols, rows)
        dense = (inner + outer) * k * value
    else:  # sddmm: both dense operands read, nnz values written
        dense = (rows + cols) * k * value + nnz * value
    flops = 2 * nnz * k
    return flops / (sparse + dense), flops / ours / 1e6


def _missing(record):
    """The fields a result line lacks for the pictures, by its kind (python_bench.py's, or a
    bench line of SpMM/SDDMM, which have K, or of SpGEMM, which counts products and C's entries)."""
    if "sparsejit_ms" in record:
        needed = ["torch_ms", "op", "k", "nnz", "rows", "cols"]
    else:
        needed = ["auto", "vendor", "op", "nnz", "rows", "cols"]
        needed += ["products", "nnz_c"] if record.get("op") == "spgemm" else ["k"]
    return [name for name in needed if name not in record]


def read(paths):
    """Every result line of the files; ValueError naming the file and line of one that is not
    JSON or lacks what the pictures read."""
    records = []
    for path in paths:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as e:
                    raise ValueError(f"{path}:{number}: not a JSON line ({e.msg})") from None
                if not isinstance(record, dict):
                    raise ValueError(f"{path}:{number}: not a JSON object")
                missing = _missing(record)
                if missing:
                    raise ValueError(f"{path}:{number}: not a result line of sparsejit bench or python_bench.py: "
                                     f"no {', '.join(missing)}")
                records.append(record)
    return records


def _save(fig, path):
    """Writes `fig` to `path` as a PNG of at most 256 colours (a plot has few: a third of the
    bytes of a true-colour one, which matters to records kept in the repository) and closes it."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image  # matplotlib's own dependency

    drawn = io.BytesIO()
    fig.savefig(drawn, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    Image.open(drawn).convert("RGB").quantize(colors=256).save(path, optimize=True)


def _draw(records, stem, peak_gflops, bandwidth_gbs):
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    factors = [1 + i * 0.05 for i in range(181)]  # 1x to 10x
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, shares in profile(records, factors).items():
        ax.plot(factors, shares, label=name, linewidth=2.5 if name in _OURS or name in _BASELINES else 1)
    ax.set(xscale="log", xlabel="within this factor of the fastest", ylabel="share of problems", ylim=(0, 1.02))
    ax.set_title(f"Performance profile, {len(records)} problems")
    ax.legend(fontsize=8)
    _save(fig, f"{stem}-profile.png")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (op, k), points in sorted(speedups(records).items()):
        ax.scatter(*zip(*points), label=op if k is None else f"{op} K={k}", s=14)
    ax.axhline(1, color="gray", linewidth=1)
    ax.set(xscale="log", yscale="log", xlabel="nnz", ylabel="baseline time / ours")
    ax.set_title("Speedup over the baseline (cuSPARSE or PyTorch)")
    ax.legend(fontsize=8)
    _save(fig, f"{stem}-speedup.png")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    points = [roofline_point(r) for r in records]
    intensity = [p[0] for p in points]
    span = [min(intensity) / 2, max(intensity) * 2]
    ax.plot(span, [min(peak_gflops, bandwidth_gbs * x) for x in span], color="black", linewidth=1)
    ax.axhline(peak_gflops, color="black", linestyle=":", linewidth=1)
    if all("k" in r for r in records):
        dots = ax.scatter(intensity, [p[1] for p in points], s=14, c=[r["k"] for r in records], cmap="viridis")
        fig.colorbar(dots, label="K")
    else:  # SpGEMM's lines have no K
        ax.scatter(intensity, [p[1] for p in points], s=14)
    ax.set(xscale="log", yscale="log", xlabel="flops per compulsory byte", ylabel="GFLOP/s (ours)")
    ax.set_title(f"Roofline: {bandwidth_gbs:g} GB/s, {peak_gflops:g} GFLOP/s")
    _save(fig, f"{stem}-roofline.png")
    written = [f"{stem}-{kind}.png" for kind in ("profile", "speedup", "roofline")]

    splits = split_series(records)
    if splits:
        fig, axes = plt.subplots(1, len(splits), figsize=(7 * len(splits), 4.5), squeeze=False)
        for ax, ((op, feature, threshold), by_k) in zip(axes[0], sorted(splits.items())):
            for (k, points), marker in zip(sorted(by_k.items()), itertools.cycle("os^Dv<>P")):
                ax.scatter(*zip(*points), label=f"K={k}", s=18, marker=marker)
            ax.axvline(threshold, color="black", linestyle="--", linewidth=1, label=f"split at {threshold:g}")
            ax.axhline(1, color="gray", linewidth=1)
            values = [v for points in by_k.values() for v, _ in points] + [threshold]
            xscale = "log" if _spans_decades(values) else "linear"
            ax.set(xscale=xscale, yscale="log", xlabel=feature, ylabel="baseline time / ours")
            ax.set_title(f"{op}: speedup against the tree's first split, {feature}")
            ax.legend(fontsize=8)
        _save(fig, f"{stem}-split.png")
        written.append(f"{stem}-split.png")
    return written


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m sparsejit.plot", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("results", nargs="+", help="JSON lines files")
    p.add_argument("--peak-gflops", type=float, default=67000, help="compute ceiling (default: H200 FP32, 67 TFLOP/s)")
    p.add_argument("--bandwidth-gbs", type=float, default=4300, help="memory ceiling (default: 4300 GB/s, measured on an H200)")
    args = p.parse_args(argv)
    first = pathlib.Path(args.results[0])
    try:
        records = read(args.results)
    except (OSError, ValueError) as e:
        p.error(str(e))
    for png in _draw(records, str(first.with_suffix("")), args.peak_gflops, args.bandwidth_gbs):
        print(png)


if __name__ == "__main__":
    main()
