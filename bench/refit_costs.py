#!/usr/bin/env python3
"""Refits a model's cost coefficients from `sparsejit bench --variants all` JSON lines and
judges the refit on matrices it did not see.

For every (matrix, K) of the bench lines, `sparsejit explain --json` gives each candidate's cost
terms (what the planner prices); the bench gives each variant's measured time (the vendor: its
best algorithm). Per variant the coefficients are fitted as the runtime's tuner fits them
(tuner/train.cpp calibrate_costs): non-negative least squares in weighted relative error,
sum w ((predicted - t) / t)^2 with w = min(1, WEIGHT_SPAN * fastest / t) (the tuner's
kFitWeightSpan: times near the case's fastest decide choices and count whole), here with
`launch` held at the model's value (a constant per call that the timings cannot tell from the
other intercepts) unless --fit-launch fits it too, as the tuner does (needed when the held
value is wrong: the SDDMM dense variants held v6's 6.8 us while their small calls take 3-4 us
on the H100). --hold keeps more terms: a bench times each variant at one setting per case, so
the terms that only choose a setting (csr_merge's critical_loads against its atomic_bytes,
which pick nnz_per_group) cannot be fitted from it. The pick is then the cheapest
candidate, and the report gives, per K, the share of cases within 10% of the oracle (the fastest
variant the bench forced, or vendor algorithm where its call computes the op: bench_lines.oracle_ms)
and the worst ratio:

  model     the planner's own choice in the model as given (explain's variant)
  refit     the cheapest under coefficients fitted on the other folds' matrices (k-fold
            cross-validation by matrix: a matrix is never judged by a fit that saw it)

With --neighbours N the picks are also judged with a neighbour correction (the model's
"neighbours" section, models/neighbour_correction.hpp): each candidate's price times the
distance-weighted mean ratio of measured over predicted time of the N nearest training cases
that timed its variant (in logs of rows, cols, row_mean, row_max, K and density, and for SDDMM
tile_fill, each divided by its spread over the training cases), the section made from the
training folds only.
--regret-weight W also multiplies it by exp(W x the same neighbours' mean regret of the variant,
the log of its time over the oracle's capped at log 2): a variant that lost clearly near the
case needs a clear price lead to be picked. --fold-seeds S-T judges the folds of each seed S..T
(each shuffles the matrices into other folds).
--keep-costs keeps the model's coefficients instead of refitting them (then only the
correction is new); --refit VARIANT refits that variant's alone. --new VARIANT=SOURCE prices a
variant the model does not price yet, starting from SOURCE's coefficients (its held terms stay
at SOURCE's; the terms its cases never carry are left out), to be fitted with --refit VARIANT.

With --out, the coefficients fitted on every case (the model's with --keep-costs) replace the
model's, with --neighbours the section made from every case is added, and the result is
written there (with --drop-tree, without the model's variant tree, so the cheapest candidate is
the choice). Needs numpy.

    python3 bench/refit_costs.py RESULTS/sddmm_f32.jsonl --model models/sddmm.json \\
        --matrices ../shared/matrices [--out new.json --drop-tree]
"""

import argparse
import json
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import bench_lines

WITHIN = 1.10
HELD = "launch"
WEIGHT_SPAN = 2.0
# The neighbour correction's features, the floor under a feature before its log and the
# softening of the distance weights (models/neighbour_correction.hpp reads the same).
NEIGHBOUR_FEATURES = ["rows", "cols", "row_mean", "row_max", "k", "density"]
FEATURE_FLOOR = 1e-6
SOFTENING = 0.3
# A point's regret of a variant (the log of its time over the oracle's) is capped at a 2x loss:
# one pathological neighbour should weigh like a clear loss, not veto the variant.
REGRET_CAP = float(np.log(2.0))
# The problem's features a regret depends on beyond the pattern: the section's "regret_when"
# holds those its cases share, and the runtime adds no regret term to a problem that differs.
REGRET_WHEN = ["value_bytes", "transpose_a"]
# An op's own neighbour features beside NEIGHBOUR_FEATURES. SDDMM's tile_fill (the share of a
# dense tile's dot products S keeps) tells a band from a uniform pattern of the same rows and
# density: without it, a held-out 200000-row band's nearest points were uniform graphs and
# dense_wgmma was picked at 1.36x the fastest (bench/results/2026-12-02-h200-sddmm-model-v11/).
OP_NEIGHBOUR_FEATURES = {"sddmm": ["tile_fill"]}


def nonnegative_least_squares(a, b, iterations=500):
    """argmin ||a x - b|| with x >= 0 (Lawson and Hanson's active-set method)."""
    n = a.shape[1]
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    for _ in range(iterations):
        gradient = a.T @ (b - a @ x)
        candidates = np.where(~passive & (gradient > 1e-12))[0]
        if candidates.size == 0:
            break
        passive[candidates[np.argmax(gradient[candidates])]] = True
        while True:
            z = np.zeros(n)
            z[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if np.all(z[passive] > 0):
                x = z
                break
            negative = passive & (z <= 0)
            step = np.min(x[negative] / (x[negative] - z[negative]))
            x = x + step * (z - x)
            passive &= x > 1e-15
            x[~passive] = 0
    return x


def predicted(coefficients, terms):
    return sum(c * terms.get(name, 0.0) for name, c in coefficients.items())


def held_terms(held, variant, coefficients):
    """The terms of `variant` kept at the model's values: `held` names terms of every variant
    ("launch") or of one ("csr_merge.critical_loads"); a single name may be given as a string."""
    names = {held} if isinstance(held, str) else set(held or ())
    return {n for n in coefficients if n in names or f"{variant}.{n}" in names}


def fit_variant(coefficients, cases, variant, min_cases, held=HELD):
    """`variant`'s coefficients refitted on the cases that timed it, the `held` terms kept; the
    model's own where the cases are fewer than `min_cases` or than the terms they exercise plus
    three (the tuner's rule): a handful of patterns of one shape fits terms it cannot tell apart."""
    rows = [c for c in cases if variant in c["terms"]]
    kept = held_terms(held, variant, coefficients)
    names = [n for n in sorted(coefficients) if n not in kept and any(c["terms"][variant].get(n, 0) for c in rows)]
    if len(rows) < max(min_cases, len(names) + 3) or not names:
        return dict(coefficients)
    root_w = np.sqrt([min(1.0, WEIGHT_SPAN * c["oracle"] / c["times"][variant]) for c in rows])
    a = np.array([[c["terms"][variant].get(n, 0.0) / c["times"][variant] for n in names] for c in rows]) * root_w[:, None]
    b = np.array([1.0 - sum(coefficients[n] * c["terms"][variant].get(n, 0.0) for n in kept) / c["times"][variant]
                  for c in rows]) * root_w  # fmt: skip
    fitted = dict(coefficients)
    for name, value in zip(names, nonnegative_least_squares(a, b)):
        fitted[name] = float(value)
    return fitted


def fit_costs(cost, cases, min_cases, held=HELD, only=None):
    """Every variant's coefficients refitted (with `only`, those variants' alone: the others keep
    the model's)."""
    return {variant: fit_variant(coefficients, cases, variant, min_cases, held) if only is None or variant in only
            else dict(coefficients) for variant, coefficients in cost.items()}  # fmt: skip


def with_new_variants(cost, new):
    """`cost` plus, for each (variant, source) of `new`, the variant priced with a copy of the
    source's coefficients: the start of a variant the model does not price yet (its held terms,
    `launch` by default, stay at the source's: one kernel launch costs the same whichever kernel)."""
    out = dict(cost)
    for variant, source in new:
        if variant in out:
            sys.exit(f"refit_costs: --new {variant}={source}: the model already prices {variant}")
        if source not in cost:
            sys.exit(f"refit_costs: --new {variant}={source}: the model does not price {source}")
        out[variant] = dict(cost[source])
    return out


def without_unused_terms(cost, cases, variants):
    """`cost` with each of `variants` priced by the terms its cases carry alone: a new variant's
    copy of its source keeps none of the source's terms it never has (csr_vector's atomic_bytes
    in an A·B-only variant)."""
    out = dict(cost)
    for variant in variants:
        used = {n for c in cases for n, v in c["terms"].get(variant, {}).items() if v}
        out[variant] = {n: c for n, c in cost[variant].items() if n in used}
    return out


def neighbour_features(op):
    """The features an `op` model's neighbour section places its points by."""
    return NEIGHBOUR_FEATURES + OP_NEIGHBOUR_FEATURES.get(op, [])


def log_position(features, names=NEIGHBOUR_FEATURES):
    return [float(np.log(max(float(features[name]), FEATURE_FLOOR))) for name in names]


def neighbour_section(cost, cases, count, regret_weight=0.0, features=NEIGHBOUR_FEATURES):
    """The model's "neighbours" section from `cases`: where each lies (in logs of `features`)
    and, per variant it timed and `cost` prices, the log of measured over predicted time; with a
    `regret_weight`, also the log of the variant's time over the case's oracle (capped at
    REGRET_CAP)."""
    points = []
    for c in cases:
        ratios, regrets = {}, {}
        for variant, terms in c["terms"].items():
            price = predicted(cost[variant], terms) if variant in cost else 0.0
            if price > 0:
                ratios[variant] = float(np.log(c["times"][variant] / price))
                regrets[variant] = float(min(REGRET_CAP, max(0.0, np.log(c["times"][variant] / c["oracle"]))))
        if ratios:
            point = {"at": log_position(c["features"], features), "log_ratio": ratios}
            if regret_weight:
                point["log_regret"] = regrets
            points.append(point)
    spread = np.std([p["at"] for p in points], axis=0) if points else np.ones(len(features))
    section = {"features": list(features), "scale": [float(s) if s > 0 else 1.0 for s in spread], "count": count,
               "softening": SOFTENING, "points": points}  # fmt: skip
    if regret_weight:
        section["regret_weight"] = float(regret_weight)
        section["regret_when"] = shared_features(cases, REGRET_WHEN)
    return section


def shared_features(cases, names):
    """Those of `names` that every case has, with one value for all, and that value."""
    out = {}
    for name in names:
        values = {json.dumps(c["features"].get(name)) for c in cases}
        if len(values) == 1 and cases and name in cases[0]["features"]:
            out[name] = cases[0]["features"][name]
    return out


def regret_applies(section, features):
    """Whether the section's regret term holds for a problem of `features` (its "regret_when")."""
    return "regret_weight" in section and all(
        name in features and float(features[name]) == float(value) for name, value in section["regret_when"].items())


def rounded(section, digits=4):
    """`section` with its positions, scales, ratios and regrets rounded to `digits` decimals (what
    --out writes: 1e-4 in a log is 0.01% of a price, and the shipped model stays small)."""
    out = dict(section, scale=[round(s, digits) for s in section["scale"]])
    out["points"] = [{key: [round(x, digits) for x in value] if key == "at" else {v: round(x, digits) for v, x in value.items()}
                      for key, value in p.items()} for p in section["points"]]  # fmt: skip
    return out


def neighbour_factor(section, variant, features):
    """The correction of `variant`'s price at `features` (models/neighbour_correction.cpp's)."""
    scale = np.array(section["scale"])
    at = np.array(log_position(features, section["features"])) / scale
    weight = section["regret_weight"] if regret_applies(section, features) else 0.0
    timed = sorted((float(np.linalg.norm(at - np.array(p["at"]) / scale)), p["log_ratio"][variant],
                    p["log_regret"][variant] if weight else 0.0)
                   for p in section["points"] if variant in p["log_ratio"])  # fmt: skip
    nearest = timed[: section["count"]]
    if not nearest:
        return 1.0
    weights = [1.0 / (d + section["softening"]) for d, _, _ in nearest]
    mean = sum(w * (r + weight * g) for w, (_, r, g) in zip(weights, nearest)) / sum(weights)
    return float(np.exp(mean))


def cheapest(cost, case, section=None):
    """The variant `cost` prices lowest for the case (times the section's correction, if any)."""
    priced = {v: predicted(cost[v], t) * (neighbour_factor(section, v, case["features"]) if section else 1.0)
              for v, t in case["terms"].items() if v in cost}  # fmt: skip
    return min(priced, key=priced.get)


def cross_validated_picks(cost, cases, folds, min_cases, held=HELD, seed=1, neighbours=0, refit=True, only=None,
                          regret_weight=0.0, features=NEIGHBOUR_FEATURES):  # fmt: skip
    """Each case's pick under coefficients fitted without its matrix (the model's with refit
    False; with `only`, those variants' alone) and, with `neighbours`, a neighbour correction
    over `features` (with `regret_weight`, its regret term) made without it."""
    matrices = sorted({c["matrix"] for c in cases})
    random.Random(seed).shuffle(matrices)
    picks = {}
    for fold in range(folds):
        held_out = set(matrices[fold::folds])
        training = [c for c in cases if c["matrix"] not in held_out]
        fitted = fit_costs(cost, training, min_cases, held, only) if refit else cost
        section = neighbour_section(fitted, training, neighbours, regret_weight, features) if neighbours else None
        for i, c in enumerate(cases):
            if c["matrix"] in held_out:
                picks[i] = cheapest(fitted, c, section)
    return [picks[i] for i in range(len(cases))]


def report(name, cases, picks):
    lines = [name]
    for k in sorted({c["k"] for c in cases}):
        ratios = [c["times"][p] / c["oracle"] for c, p in zip(cases, picks) if c["k"] == k and p in c["times"]]
        within = sum(r <= WITHIN for r in ratios)
        geomean = float(np.exp(np.mean(np.log(ratios))))
        lines.append(f"  K={k}: {within}/{len(ratios)} = {100.0 * within / len(ratios):.0f}% within 10% of the oracle, "
                     f"worst {max(ratios):.2f}x, geomean over the oracle {geomean:.3f}")  # fmt: skip
    return "\n".join(lines)


def worst_cases(cases, picks, count):
    """The `count` cases furthest from the oracle: matrix, K, the pick and the fastest, the ratio."""
    judged = [(c["times"][p] / c["oracle"], c, p) for c, p in zip(cases, picks) if p in c["times"]]
    judged.sort(key=lambda x: -x[0])
    lines = [f"  worst {count}:"]
    for ratio, c, p in judged[:count]:
        fastest = min(c["times"], key=c["times"].get)
        lines.append(f"    {c['matrix']} K={c['k']}: {p} {ratio:.2f}x the fastest, {fastest}")
    return "\n".join(lines)


def matrix_input(name, matrices):
    if name.startswith("gen:"):
        return name
    for suffix in (".mtx.gz", ".smtx.gz", ".mtx", ".smtx"):
        path = Path(matrices) / (name + suffix)
        if path.exists():
            return str(path)
    sys.exit(f"refit_costs: no file for matrix '{name}' under {matrices}")


def explain(cli, op, matrix, k):
    out = subprocess.run([cli, "explain", "--json", "--op", op, "-k", str(k), matrix], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"refit_costs: explain of {matrix} at K = {k} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def case_of(record, decision, vendor, vendor_time="best"):
    """Terms and times of the candidates both the bench timed and the planner priced; the
    vendor variant's time is its own forced time where the record has one (benches since
    2026-11-28 force it: SDDMM's adds a scale kernel to cuSPARSE's call), else the record's
    `vendor_time` entry (its best algorithm, or the one the runtime's vendor variant runs)."""
    times = {v: t for v, t in record["variants"].items() if isinstance(t, (int, float))}
    vendor_ms = (record.get("vendor") or {}).get(vendor_time)
    if vendor not in times and isinstance(vendor_ms, (int, float)):
        times[vendor] = vendor_ms
    terms = {c["variant"]: c["terms"] for c in decision["candidates"]
             if not c.get("rejected_because") and c["variant"] in times and c.get("terms")}  # fmt: skip
    return {"matrix": record["matrix"], "k": record["k"], "terms": terms, "times": {v: times[v] for v in terms},
            "oracle": bench_lines.oracle_ms(record), "model_pick": decision["variant"], "features": decision.get("features", {})}  # fmt: skip


def model_text(model):
    """`model` as JSON, indented, with the neighbour section's points one compact line each (a
    thousand points stay a thousand lines)."""
    section = model.get("neighbours")
    if not section:
        return json.dumps(model, indent=2, sort_keys=True) + "\n"
    marker = "@points@"
    text = json.dumps(dict(model, neighbours=dict(section, points=marker)), indent=2, sort_keys=True)
    lines = ",\n".join("        " + json.dumps(p, sort_keys=True, separators=(",", ":")) for p in section["points"])
    return text.replace(json.dumps(marker), "[\n" + lines + "\n    ]") + "\n"


def read_model(path):
    """The model JSON of `path`; SystemExit naming the file when it is not JSON or lacks "op"
    or a "cost" object."""
    try:
        with open(path) as f:
            model = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        sys.exit(f"refit_costs: {path}: cannot read the model ({e})")
    if not isinstance(model, dict) or "op" not in model or not isinstance(model.get("cost"), dict):
        sys.exit(f"refit_costs: {path}: not a sparsejit model (needs \"op\" and a \"cost\" object)")
    return model


def read_records(path):
    """The `bench --variants all` records of `path`."""
    return bench_lines.read_records(path, ["matrix", "k", "variants", "oracle"], "refit_costs", "a `bench --variants all` record")


def fold_seeds(text):
    """--fold-seeds: S or S-T (S <= T), the seeds S..T."""
    first, _, last = text.partition("-")
    try:
        seeds = list(range(int(first), int(last or first) + 1))
    except ValueError:
        seeds = []
    if not seeds:
        raise argparse.ArgumentTypeError(f"'{text}' is not a seed or a range S-T of seeds")
    return seeds


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", help="bench JSON lines of one op, run with --variants all")
    p.add_argument("--model", required=True, help="the model JSON whose costs are refitted: the one the CLI plans with (its shipped model, unless a tuned one is in its cache)")
    p.add_argument("--matrices", default=".", help="folder the records' matrix names are relative to")
    p.add_argument("--cli", default=os.environ.get("SPARSEJIT_CLI", "build/sparsejit"), help="the sparsejit binary")
    p.add_argument("--vendor", default="cusparse", help="the op's vendor variant")
    p.add_argument("--vendor-time", default="best",
                   help="for records without the vendor variant's forced time, the vendor entry that times it: `best` (of the "
                        "algorithms the bench ran) or the one the variant runs, e.g. csr_alg3 for SpMM A·B")  # fmt: skip
    p.add_argument("--folds", type=int, default=5, help="cross-validation folds (by matrix), at least 2")
    p.add_argument("--min-cases", type=int, default=20, help="a variant timed on fewer cases keeps its coefficients")
    p.add_argument("--out", help="write the model with the coefficients fitted on every case here")
    p.add_argument("--drop-tree", action="store_true", help="leave the model's variant tree out of --out")
    p.add_argument("--fit-launch", action="store_true", help="fit `launch` too instead of holding the model's value")
    p.add_argument("--worst", type=int, default=0, metavar="N", help="list the N cross-validated picks furthest from the oracle")
    p.add_argument("--neighbours", type=int, default=0, metavar="N",
                   help="also judge (and with --out, write) a neighbour correction over the N nearest training cases")
    p.add_argument("--regret-weight", type=float, default=0.0, metavar="W",
                   help="with --neighbours: add W x the neighbours' mean regret (log of a variant's time over the oracle's, "
                        "capped at log 2) to each candidate's log price, and write it into the section")  # fmt: skip
    p.add_argument("--fold-seeds", type=fold_seeds, default=[1], metavar="S[-T]",
                   help="the seed of the folds' shuffle of the matrices, or a range of them, each judged in turn (default 1)")
    p.add_argument("--keep-costs", action="store_true", help="keep the model's coefficients instead of refitting them")
    p.add_argument("--refit", action="append", default=None, metavar="VARIANT",
                   help="refit only this variant's coefficients, the others keep the model's; repeatable")
    p.add_argument("--new", action="append", default=[], metavar="VARIANT=SOURCE",
                   help="price VARIANT, which the model does not, starting from SOURCE's coefficients; repeatable")
    p.add_argument("--hold", action="append", default=[], metavar="[VARIANT.]TERM",
                   help="keep this term at the model's value (every variant's, or one variant's: csr_merge.critical_loads); "
                        "repeatable. For terms that choose a variant's parameters, which a bench's one setting per case cannot fit")  # fmt: skip
    args = p.parse_args(argv)
    if args.folds < 2:
        sys.exit(f"refit_costs: --folds {args.folds} must be at least 2")
    if args.worst < 0:
        sys.exit(f"refit_costs: --worst {args.worst} must be at least 0")
    if args.min_cases < 1:
        sys.exit(f"refit_costs: --min-cases {args.min_cases} must be at least 1")
    if args.neighbours < 0:
        sys.exit(f"refit_costs: --neighbours {args.neighbours} must be at least 0")
    if not (args.regret_weight >= 0 and np.isfinite(args.regret_weight)):
        sys.exit(f"refit_costs: --regret-weight {args.regret_weight} must be a number at least 0")
    if args.regret_weight and not args.neighbours:
        sys.exit("refit_costs: --regret-weight needs --neighbours (it is a term of the neighbour correction)")
    if args.keep_costs and args.refit:
        sys.exit("refit_costs: --keep-costs and --refit exclude each other")
    new = []
    for item in args.new:
        variant, _, source = item.partition("=")
        if not variant or not source:
            sys.exit(f"refit_costs: --new '{item}' must be VARIANT=SOURCE")
        new.append((variant, source))
    model = read_model(args.model)
    model["cost"] = with_new_variants(model["cost"], new)
    only = set(args.refit) if args.refit else None
    for variant in sorted(only or ()):
        if variant not in model["cost"]:
            sys.exit(f"refit_costs: --refit {variant}: the model does not price {variant} (add it with --new {variant}=SOURCE)")
    records = read_records(args.results)
    ops = {r.get("op", model["op"]) for r in records}
    if ops != {model["op"]}:
        sys.exit(f"refit_costs: {args.results} holds op {', '.join(sorted(ops))}, the model is for {model['op']}")
    inputs = [(matrix_input(r["matrix"], args.matrices), r["k"]) for r in records]
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        decisions = list(pool.map(lambda mk: explain(args.cli, model["op"], *mk), inputs))
    cases = [case_of(r, d, args.vendor, args.vendor_time) for r, d in zip(records, decisions)]
    model["cost"] = without_unused_terms(model["cost"], cases, [variant for variant, _ in new])
    print(report("model as given (the planner's choice)", cases, [c["model_pick"] for c in cases]))
    held = set(args.hold) | (set() if args.fit_launch else {HELD})
    located_by = neighbour_features(model["op"])
    costs = "the model's costs" if args.keep_costs else "refit" if only is None else f"refit of {', '.join(sorted(only))}"
    for seed in args.fold_seeds:
        folds = f"{args.folds}-fold cross-validation by matrix" + (f", fold seed {seed}" if args.fold_seeds != [1] else "")
        picks = cross_validated_picks(model["cost"], cases, args.folds, args.min_cases, held, seed, refit=not args.keep_costs,
                                      only=only)  # fmt: skip
        print(report(f"{costs}, the cheapest candidate ({folds})", cases, picks))
        if args.neighbours:
            picks = cross_validated_picks(model["cost"], cases, args.folds, args.min_cases, held, seed, args.neighbours,
                                          not args.keep_costs, only, args.regret_weight, located_by)  # fmt: skip
            regret = f", regret weight {args.regret_weight:g}" if args.regret_weight else ""
            print(report(f"{costs} with the neighbour correction of {args.neighbours}{regret} ({folds})", cases, picks))
        if args.worst:
            print(worst_cases(cases, picks, args.worst))
    if args.out:
        refit = dict(model)
        refit["cost"] = model["cost"] if args.keep_costs else fit_costs(model["cost"], cases, args.min_cases, held, only)
        refit.pop("neighbours", None)
        if args.neighbours:
            refit["neighbours"] = rounded(neighbour_section(refit["cost"], cases, args.neighbours, args.regret_weight,
                                                            located_by))  # fmt: skip
        if args.drop_tree:
            refit.pop("tree", None)
        with open(args.out, "w") as f:
            f.write(model_text(refit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
