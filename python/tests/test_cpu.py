"""What needs no GPU: the import, explain on host patterns, loading matrices, and the argument
errors (Python exceptions of matching kinds with the C++ library's messages)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import sparsejit
from sparsejit import _arrays

BAND = "gen:band:300:7:5"


def test_import_reports_the_version_and_the_driver():
    assert re.fullmatch(r"\d+\.\d+\.\d+", sparsejit.__version__)
    assert sparsejit.driver_available() == (sparsejit.device_count() > 0)
    assert sparsejit.driver_available() or "driver" in sparsejit.driver_unavailable_reason()


def test_runtime_without_a_gpu_raises_unsupported():
    if sparsejit.driver_available():
        pytest.skip("a GPU is present")
    with pytest.raises(sparsejit.UnsupportedError, match="no CUDA driver"):
        sparsejit._sparsejit.Runtime(0)


def test_load_generates_the_spec_as_int32_csr():
    m = sparsejit.load(BAND)
    assert m.shape == (300, 300)
    assert m.indptr.dtype == np.int32 and m.indices.dtype == np.int32 and m.data.dtype == np.float64
    assert len(m.indptr) == 301 and m.indptr[-1] == len(m.indices) == len(m.data)
    assert np.all(np.diff(m.indptr) <= 7)
    assert np.array_equal(sparsejit.load(BAND).indices, m.indices)  # deterministic for a seed


def test_load_reads_a_matrix_file(shared_matrix):
    m = sparsejit.load(shared_matrix)
    assert m.shape == (2003, 2003)
    assert m.indptr[-1] == len(m.indices) > 0


def test_explain_returns_the_decision_as_a_dict():
    d = sparsejit.explain(BAND, k=64)
    assert d["op"] == "spmm"
    assert d["variant"] in sparsejit.variants("spmm")
    assert d["features"]["rows"] == 300 and d["features"]["k"] == 64
    assert d["features"]["nnz"] == sparsejit.load(BAND).indptr[-1]
    chosen = [c for c in d["candidates"] if c["variant"] == d["variant"]]
    assert chosen and not chosen[0].get("rejected_because")
    if not sparsejit.driver_available():
        assert d["device"] == "sm_90 (no GPU)"


def test_explain_of_host_arrays_matches_the_spec_it_came_from():
    m = sparsejit.load(BAND)
    from_spec = sparsejit.explain(BAND, op="sddmm", k=32, dtype="float64")
    for pattern in (m, (m.indptr, m.indices, m.shape), (m.indptr.astype(np.int64), m.indices, m.data, m.shape)):
        d = sparsejit.explain(pattern, op="sddmm", k=32, dtype=np.float64)
        assert (d["variant"], d["params"], d["features"]) == (from_spec["variant"], from_spec["params"], from_spec["features"])
        assert d["features"]["value_bytes"] == 8


def test_explain_options_reach_the_planner():
    forced = sparsejit.explain(BAND, k=16, variant="rs:threshold=8")
    assert (forced["variant"], forced["source"], forced["params"]["threshold"]) == ("rs", "forced", 8)
    assert sparsejit.explain(BAND, k=16, transpose_a=True)["features"]["transpose_a"] is True
    assert sparsejit.explain(BAND, op="spgemm")["op"] == "spgemm"


def test_explain_is_the_cli_json(cli):
    out = subprocess.run([cli, "explain", BAND, "--op", "spmm", "-k", "48", "--json"], check=True, capture_output=True, text=True)
    from_cli = json.loads(out.stdout)
    ours = sparsejit.explain(BAND, k=48)
    timing = {"compile_ms", "load_ms", "kernel_origin", "measure_ms"}
    assert set(from_cli) - set(ours) == {"matrix", "format_version"}
    assert {k: v for k, v in ours.items() if k not in timing} == {k: from_cli[k] for k in ours if k not in timing}


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"dtype": "float16"}, ValueError, "dtype float16 is not supported: sparsejit multiplies float32 or float64 values"),
        ({"variant": "nope"}, ValueError, "unknown spmm variant 'nope'"),
        ({"variant": "rs:threshold=0"}, ValueError, "threshold"),
        ({"reuse": "twice"}, ValueError, "reuse 'twice': expected 'once' or 'many'"),
        ({"op": "spmv"}, ValueError, "unknown operation 'spmv'"),
        ({"op": "sddmm", "transpose_a": True}, ValueError, "transpose_a (C = Aᵀ·B) applies to spmm only, not sddmm"),
        ({"k": 0}, ValueError, "spmm: k = 0 must be >= 1"),
    ],
)
def test_explain_argument_errors(kwargs, error, message):
    with pytest.raises(error) as caught:
        sparsejit.explain(BAND, **kwargs)
    assert isinstance(caught.value, sparsejit.InvalidInputError)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    "args, message",
    [
        (("spmm", "rs:threshold", "", False), "variant 'rs:threshold': parameter 'threshold' is not key=value"),
        (("sddmm", ":a=1", "", False), "variant ':a=1': empty variant name"),
        (("spmm", "", "twice", False), "reuse 'twice': expected 'once' or 'many'"),
        (("spgemm", "", "", False), "a call config is spmm's or sddmm's, not spgemm's"),
    ],
)
def test_call_configs_refuse_what_the_products_would(args, message):
    # A Matrix parses a product's settings once into a config: the errors are the call's
    # (a variant name the op lacks is the planner's to refuse, at the product).
    with pytest.raises(sparsejit.InvalidInputError) as caught:
        sparsejit._sparsejit.call_config(*args)
    assert isinstance(caught.value, ValueError) and message in str(caught.value)


def test_call_configs_take_every_spelling_of_auto():
    for op in ("spmm", "sddmm"):
        for reuse in ("", "once", "many"):
            assert isinstance(sparsejit._sparsejit.call_config(op, "", reuse, False), sparsejit._sparsejit.CallConfig)
    assert isinstance(sparsejit._sparsejit.call_config("spmm", "rs:threshold=8", "many", True), sparsejit._sparsejit.CallConfig)


def test_bad_patterns_name_the_bad_value():
    indptr = np.array([0, 1, 2], np.int32)
    with pytest.raises(sparsejit.InvalidInputError, match=re.escape("row 1: column index 5 out of range [0, 3)")):
        sparsejit.explain((indptr, np.array([0, 5], np.int32), (2, 3)))
    with pytest.raises(ValueError, match="indptr has 3 entries, a matrix of 4 rows needs rows \\+ 1"):
        sparsejit.explain((indptr, np.array([0, 1], np.int32), (4, 3)))
    with pytest.raises(ValueError, match="indptr ends at 2 but indices has 3 entries"):
        sparsejit.explain((indptr, np.array([0, 1, 2], np.int32), (2, 3)))
    with pytest.raises(ValueError, match="spgemm explains C = A·A, so A must be square; it is 2x3"):
        sparsejit.explain((indptr, np.array([0, 1], np.int32), (2, 3)), op="spgemm")


def test_sources_that_cannot_be_read():
    with pytest.raises(OSError, match="cannot open /nonexistent.mtx") as caught:
        sparsejit.load("/nonexistent.mtx")
    assert isinstance(caught.value, sparsejit.IoError)
    with pytest.raises(ValueError, match="uniformly"):
        sparsejit.load("gen:uniformly:10:2")
    with pytest.raises(TypeError, match="explain takes a Matrix"):
        sparsejit.explain(42)


def test_operands_that_are_not_gpu_arrays():
    with pytest.raises(ValueError, match="b is on DLPack device type 1 .numpy.ndarray., not a CUDA device"):
        _arrays.dense(np.ones((3, 3), np.float32), "b")
    with pytest.raises(TypeError, match="b is a builtins.list, not an array"):
        _arrays.dense([[1.0]], "b")
    with pytest.raises(TypeError, match="a numpy.ndarray is not a sparse matrix sparsejit takes"):
        sparsejit.spmm(np.ones((3, 3)), np.ones((3, 3)))
    host = sparsejit.load(BAND)
    with pytest.raises(TypeError, match="must be PyTorch tensors or CuPy arrays"):
        sparsejit.Matrix(tuple(host))


@pytest.mark.parametrize(
    "shape, strides, message",
    [
        ((4, 3, 2), (6, 2, 1), "b must be a 2-D array; it has shape \\(4, 3, 2\\)"),
        ((4, 3), (1, 4), "b has strides \\(1, 4\\) \\(in elements\\) for shape \\(4, 3\\)"),
        ((4, 3), (2, 1), "b has strides \\(2, 1\\)"),
        ((2**31, 3), (3, 1), "at most 2\\^31-1 rows"),
    ],
)
def test_layouts_the_kernels_cannot_read(shape, strides, message):
    with pytest.raises(ValueError, match=message):
        _arrays._row_major("b", shape, strides, "b.contiguous()")


def test_layouts_the_kernels_read():
    assert _arrays._row_major("b", (4, 3), (3, 1), "") == (4, 3, 3)
    assert _arrays._row_major("b", (4, 3), (8, 1), "") == (4, 3, 8)  # a column slice: ld 8
    assert _arrays._row_major("b", (1, 3), (0, 1), "") == (1, 3, 3)  # one row: any row stride
    assert _arrays._row_major("b", (4, 1), (1, 7), "") == (4, 1, 1)  # one column: any column stride


def test_spamm_argument_errors():
    with pytest.raises(ValueError, match="fp8"):
        sparsejit._sparsejit.spamm_options(None, None, None, "fp8", 0, "", 0)
    with pytest.raises(TypeError, match="spamm needs a PyTorch tensor or CuPy array"):
        sparsejit.spamm(np.ones((4, 4)), np.ones((4, 4)))


def test_model_alone_report_counts_and_names_malformed_lines(tmp_path):
    script = Path(__file__).resolve().parents[2] / "bench" / "model_alone.py"
    # SDDMM's oracle is its fastest forced variant: cuSPARSE's bare call (0.5 ms) skips the
    # scaling by S's values, so it is no choice auto has.
    good = {"op": "sddmm", "k": 128, "fingerprint": "0xab", "auto": {"ms": 1.0, "measure_ms": 4.0, "measure_calls": 4.0},
            "model": {"ms": 1.2}, "variants": {"coo_flat": 1.0, "dense_tile": "unsupported"}, "vendor": {"best": 0.5}}  # fmt: skip
    results = tmp_path / "r.jsonl"
    results.write_text(json.dumps(good) + "\n" + json.dumps({**good, "model": {"ms": 1.05}}) + "\n")
    held = tmp_path / "held.txt"
    held.write_text("0xab\n")
    out = subprocess.run([sys.executable, str(script), str(results), "--held-out", str(held)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "model alone: 1/2 = 50% within 10% of the oracle, worst 1.20x" in out.stdout
    assert "held-out patterns: 1/2 = 50%" in out.stdout
    assert "calls of auto median 4, most 4" in out.stdout
    # SpMM's vendor call computes the op, so its 0.8 ms is the oracle: 1.2 / 0.8 = 1.5x.
    spmm = {**good, "op": "spmm", "vendor": {"best": 0.8}}
    results.write_text(json.dumps(spmm) + "\n")
    out = subprocess.run([sys.executable, str(script), str(results)], capture_output=True, text=True)
    assert "model alone: 0/1 = 0% within 10% of the oracle, worst 1.50x" in out.stdout, out.stdout + out.stderr
    results.write_text(json.dumps(good) + "\n{not json\n")
    bad = subprocess.run([sys.executable, str(script), str(results)], capture_output=True, text=True)
    assert bad.returncode == 1 and f"{results}:2: not JSON" in bad.stderr
    results.write_text('{"k": 32}\n')
    bad = subprocess.run([sys.executable, str(script), str(results)], capture_output=True, text=True)
    assert bad.returncode == 1 and f"{results}:1: not a sparsejit bench record" in bad.stderr


def test_spamm_table_takes_the_class_gemm_of_each_row_and_names_malformed_lines(tmp_path):
    script = Path(__file__).resolve().parents[2] / "bench" / "spamm_table.py"
    row = {"n": 4096, "decay": "algebraic", "precision": "fp16", "operands": "value", "target_ratio": 0.05,
           "search_iterations": 9, "search_ms": 0.12, "ms": 0.2, "baseline_ms": 0.16, "speedup": 0.8,
           "baseline_f32_inputs_ms": 0.4}  # fmt: skip
    auto = {**row, "path": "auto", "variant": "wgmma", "source": "measured", "with_search_variant": "cublas",
            "with_search_ms": 0.25, "with_search_speedup": 0.64}  # fmt: skip
    sixteen = {**auto, "operands": "16bit"}
    forced = {**row, "path": "wgmma", "variant": "wgmma", "ms": 0.1, "speedup": 1.6}
    results = tmp_path / "r.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in (auto, forced, sixteen)) + "\n")
    out = subprocess.run([sys.executable, str(script), str(results)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("| N | decay |") and "wgmma (τ given)" in lines[0]
    # f32 operands at fp16: over cuBLAS's call on the f32 operands (0.4 ms); 16-bit: the paired GEMM
    assert lines[2] == "| 4096 | algebraic | fp16 | value | 5% | 4.00x | wgmma (measured) 2.00x | cublas 1.60x | 9, 0.12 |"
    assert lines[3] == "| 4096 | algebraic | fp16 | 16bit | 5% | - | wgmma (measured) 0.80x | cublas 0.64x | 9, 0.12 |"
    results.write_text(json.dumps(auto) + "\n{not json\n")
    bad = subprocess.run([sys.executable, str(script), str(results)], capture_output=True, text=True)
    assert bad.returncode == 1 and f"{results}:2: not a JSON record" in bad.stderr


def test_spamm_devices_table_gives_each_mode_its_efficiency_and_names_malformed_lines(tmp_path):
    script = Path(__file__).resolve().parents[2] / "bench" / "spamm_devices_table.py"
    row = {"n": 32768, "precision": "full", "operands": "value", "target_ratio": 0.1, "ms": 120.0, "baseline_ms": 1400.0,
           "devices": 4, "devices_ms": 60.0, "resident_ms": 37.5, "resident_speedup": 37.3, "relative_error": 0.5,
           "resident_relative_error": 0.5}  # fmt: skip
    converted = {**row, "precision": "fp16", "baseline_f32_inputs_ms": 300.0, "ms": 40.0, "devices_ms": 40.0, "resident_ms": 12.5}
    results = tmp_path / "r.jsonl"
    results.write_text("\n".join(json.dumps(r) for r in (converted, row)) + "\n")
    out = subprocess.run([sys.executable, str(script), str(results)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("| N | precision |") and "resident eff." in lines[0]
    # f32 operands at fp16 (sorted first): over cuBLAS's own call on them (300 ms)
    assert lines[2].split(" | ")[12] == "24.00x"
    # 120/60 = 2x on 4 GPUs is 50%, 120/37.5 = 3.2x is 80%, 1400/37.5 over cuBLAS
    assert lines[3] == "| 32768 | full | value | 10% | 4 | 120.00 | 60.00 | 2.00x | 50% | 37.50 | 3.20x | 80% | 37.33x | 0.5 / 0.5 |"
    results.write_text(json.dumps({"n": 1}) + "\n")
    bad = subprocess.run([sys.executable, str(script), str(results)], capture_output=True, text=True)
    assert bad.returncode == 1 and f"{results}:1: not a spread spamm record" in bad.stderr


def test_spgemm_memory_limit_reaches_the_plan_and_bad_limits_are_value_errors():
    d = sparsejit.explain("gen:uniform:2000:8", op="spgemm", memory_limit=1 << 30)
    assert d["features"]["memory"]["limit_bytes"] == 1 << 30
    assert d["features"]["memory"]["budget_bytes"] == 1 << 30
    with pytest.raises(ValueError, match="memory_limit_bytes = 0"):
        sparsejit.explain("gen:uniform:2000:8", op="spgemm", memory_limit=0)
    with pytest.raises(ValueError, match="memory_limit applies to spgemm only, not spmm"):
        sparsejit.explain("gen:uniform:2000:8", op="spmm", memory_limit=1 << 30)


def _refit_costs_module():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "bench" / "refit_costs.py"
    sys.path.insert(0, str(path.parent))  # its shared reader, bench/bench_lines.py
    spec = importlib.util.spec_from_file_location("refit_costs", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def test_refit_costs_recovers_coefficients_and_judges_held_out_matrices(tmp_path):
    refit, script = _refit_costs_module()
    # Non-negative least squares: the unconstrained solution has a negative second entry.
    a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    x = refit.nonnegative_least_squares(a, np.array([3.0, 2.0, 1.0]))
    assert x[1] == 0.0 and x[0] == pytest.approx(2.0)
    # Two variants timed as their true coefficients say; the model prices "slow_start" too low.
    truth = {"gather": {"launch": 0.001, "bytes": 2e-9}, "slow_start": {"launch": 0.05, "bytes": 1e-9}}
    model = {"gather": {"launch": 0.001, "bytes": 1e-9}, "slow_start": {"launch": 0.05, "bytes": 1e-10}}
    cases = []
    for i, nbytes in enumerate([1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8, 3e8]):
        terms = {v: {"launch": 1.0, "bytes": nbytes} for v in truth}
        times = {v: refit.predicted(truth[v], terms[v]) for v in truth}
        cases.append({"matrix": f"m{i}", "k": 32, "terms": terms, "times": times, "oracle": min(times.values())})
    fitted = refit.fit_costs(model, cases, min_cases=4)
    assert fitted["gather"]["bytes"] == pytest.approx(2e-9, rel=1e-6)
    assert fitted["slow_start"]["launch"] == 0.05  # held
    # --fit-launch: a wrongly held launch is fitted too (the model's 0.2 ms back to the true 0.05).
    wrong_launch = {**model, "slow_start": {"launch": 0.2, "bytes": 1e-10}}
    freed = refit.fit_costs(wrong_launch, cases, min_cases=4, held=None)
    assert freed["slow_start"]["launch"] == pytest.approx(0.05, rel=1e-6)
    assert freed["slow_start"]["bytes"] == pytest.approx(1e-9, rel=1e-6)
    assert refit.fit_costs(wrong_launch, cases, min_cases=4)["slow_start"]["launch"] == 0.2
    # --hold VARIANT.TERM keeps one variant's term: slow_start's launch stays, gather's is fitted.
    one_held = refit.fit_costs(wrong_launch, cases, min_cases=4, held={"slow_start.launch"})
    assert one_held["slow_start"]["launch"] == 0.2
    assert one_held["gather"]["launch"] == pytest.approx(0.001, rel=1e-6)
    assert refit.fit_costs(model, cases, min_cases=20) == model  # too few cases: kept
    # The weight: "gather" at 1e-9 per byte where it is the fastest, at 3e-9 on four cases where
    # the oracle is ten times faster (weight 0.2): c = sum w r / sum w r^2 (the tuner's test).
    weighted_cases = []
    for i in range(8):
        slow = i >= 4
        terms = {"gather": {"bytes": 1e6 * (1 + i)}}
        t = (3e-9 if slow else 1e-9) * terms["gather"]["bytes"]
        weighted_cases.append({"matrix": f"w{i}", "k": 32, "terms": terms, "times": {"gather": t}, "oracle": t / 10 if slow else t})
    weighted = refit.fit_costs({"gather": {"bytes": 1e-9}}, weighted_cases, min_cases=4)["gather"]["bytes"]
    assert weighted == pytest.approx((4 + 0.2 * 4 / 3) / (4 + 0.2 * 4 / 9) * 1e-9, rel=1e-9)
    picks = refit.cross_validated_picks(model, cases, folds=4, min_cases=4)
    assert picks == [min(c["times"], key=c["times"].get) for c in cases]
    assert "8/8 = 100% within 10% of the oracle" in refit.report("refit", cases, picks)
    assert "within 10%" in refit.report("model", cases, [refit.cheapest(model, c) for c in cases])
    # --worst: the picks furthest from the oracle first, with the fastest named.
    wrong = ["slow_start" if c["times"]["slow_start"] > c["oracle"] else "gather" for c in cases]
    worst = refit.worst_cases(cases, wrong, 2).splitlines()
    ratios = sorted((c["times"][p] / c["oracle"] for c, p in zip(cases, wrong)), reverse=True)
    assert worst[0] == "  worst 2:" and len(worst) == 3
    assert worst[1].endswith(f"slow_start {ratios[0]:.2f}x the fastest, gather")
    # Bad input is named: a line that is not a bench record, and too few folds.
    results = tmp_path / "r.jsonl"
    results.write_text('{"k": 32}\n')
    model_file = tmp_path / "m.json"
    model_file.write_text(json.dumps({"op": "sddmm", "cost": model}))
    bad = subprocess.run([sys.executable, str(script), str(results), "--model", str(model_file)], capture_output=True, text=True)
    assert bad.returncode == 1 and f"{results}:1: not a `bench --variants all` record" in bad.stderr
    folds = subprocess.run([sys.executable, str(script), str(results), "--model", str(model_file), "--folds", "1"],
                           capture_output=True, text=True)  # fmt: skip
    assert folds.returncode == 1 and "--folds 1 must be at least 2" in folds.stderr
    cases_arg = subprocess.run([sys.executable, str(script), str(results), "--model", str(model_file), "--min-cases", "0"],
                               capture_output=True, text=True)  # fmt: skip
    assert cases_arg.returncode == 1 and "--min-cases 0 must be at least 1" in cases_arg.stderr
    worst_arg = subprocess.run([sys.executable, str(script), str(results), "--model", str(model_file), "--worst", "-1"],
                               capture_output=True, text=True)  # fmt: skip
    assert worst_arg.returncode == 1 and "--worst -1 must be at least 0" in worst_arg.stderr
    not_a_model = tmp_path / "bad.json"
    not_a_model.write_text('{"op": "sddmm"}')
    bad_model = subprocess.run([sys.executable, str(script), str(results), "--model", str(not_a_model)], capture_output=True, text=True)
    assert bad_model.returncode == 1 and f"{not_a_model}: not a sparsejit model" in bad_model.stderr
    record = {"matrix": "missing", "k": 32, "variants": {}, "oracle": {"ms": 1.0}}
    results.write_text(json.dumps(record) + "\n")
    missing = subprocess.run([sys.executable, str(script), str(results), "--model", str(model_file), "--matrices", str(tmp_path)],
                             capture_output=True, text=True)  # fmt: skip
    assert missing.returncode == 1 and "no file for matrix 'missing'" in missing.stderr


def test_refit_costs_prices_a_new_variant_and_refits_only_the_named_ones(tmp_path):
    refit, script = _refit_costs_module()
    # "gather" is priced at twice its true bytes coefficient; "piped", new, runs as "gather" would
    # with half the bytes cost and its own launch.
    truth = {"gather": {"launch": 0.001, "bytes": 1e-9}, "piped": {"launch": 0.001, "bytes": 5e-10}}
    model = {"gather": {"launch": 0.001, "bytes": 2e-9}}
    cases = []
    for i, nbytes in enumerate([1e5, 3e5, 1e6, 3e6, 1e7, 3e7, 1e8, 3e8]):
        terms = {v: {"launch": 1.0, "bytes": nbytes} for v in truth}
        times = {v: refit.predicted(truth[v], terms[v]) for v in truth}
        cases.append({"matrix": f"m{i}", "k": 32, "terms": terms, "times": times, "oracle": min(times.values())})
    cost = refit.with_new_variants(model, [("piped", "gather")])
    assert cost["piped"] == model["gather"] and cost["piped"] is not model["gather"]
    only = refit.fit_costs(cost, cases, min_cases=4, only={"piped"})
    assert only["gather"] == model["gather"]  # not named: kept
    assert only["piped"]["bytes"] == pytest.approx(5e-10, rel=1e-6)
    assert only["piped"]["launch"] == 0.001  # held at the source's
    assert refit.fit_costs(cost, cases, min_cases=4)["gather"]["bytes"] == pytest.approx(1e-9, rel=1e-6)
    # A term the new variant's cases never carry is not copied from its source.
    atomics = {**model, "gather": {**model["gather"], "atomic_bytes": 3e-10}}
    trimmed = refit.without_unused_terms(refit.with_new_variants(atomics, [("piped", "gather")]), cases, ["piped"])
    assert trimmed["piped"] == model["gather"] and trimmed["gather"] == atomics["gather"]
    # Bad --new and --refit arguments are named before anything is read.
    model_file = tmp_path / "m.json"
    model_file.write_text(json.dumps({"op": "spmm", "cost": model}))
    results = tmp_path / "r.jsonl"
    results.write_text("")
    run = lambda *extra: subprocess.run([sys.executable, str(script), str(results), "--model", str(model_file), *extra],
                                        capture_output=True, text=True)  # fmt: skip
    for extra, message in [(["--new", "piped"], "--new 'piped' must be VARIANT=SOURCE"),
                           (["--new", "piped=dense"], "--new piped=dense: the model does not price dense"),
                           (["--new", "gather=gather"], "--new gather=gather: the model already prices gather"),
                           (["--keep-costs", "--refit", "gather"], "--keep-costs and --refit exclude each other"),
                           (["--refit", "piped"], "--refit piped: the model does not price piped")]:
        bad = run(*extra)
        assert bad.returncode == 1 and message in bad.stderr, (extra, bad.stderr)


def test_refit_costs_times_the_vendor_variant_by_its_forced_run_where_the_record_has_one():
    refit, _ = _refit_costs_module()
    decision = {"variant": "row_gather", "candidates": [
        {"variant": "row_gather", "terms": {"launch": 1.0}},
        {"variant": "cusparse", "terms": {"launch": 1.0}},
        {"variant": "coo_flat", "rejected_because": "too few rows", "terms": {"launch": 1.0}}]}  # fmt: skip
    vendor = {"sddmm_alg_default": 0.020, "best": 0.020}
    # A record with the runtime's cusparse forced (the bare call plus the scale kernel): that time.
    forced = {"matrix": "m", "k": 32, "variants": {"row_gather": 0.030, "cusparse": 0.026, "coo_flat": 0.05},
              "vendor": vendor, "oracle": {"ms": 0.020}}  # fmt: skip
    case = refit.case_of(forced, decision, "cusparse")
    assert case["times"] == {"row_gather": 0.030, "cusparse": 0.026}
    # An older record without it: the vendor entry named by --vendor-time.
    older = {**forced, "variants": {"row_gather": 0.030}}
    assert refit.case_of(older, decision, "cusparse")["times"]["cusparse"] == 0.020
    assert "cusparse" not in refit.case_of(older, decision, "cusparse", "csr_alg3")["times"]


def test_from_records_script_refuses_bad_arguments_naming_them(tmp_path):
    script = Path(__file__).resolve().parents[2] / "bench" / "from_records.sh"
    env = {k: v for k, v in os.environ.items() if k != "SPARSEJIT_CACHE_DIR"}

    def run(*args, **extra):
        return subprocess.run(["bash", str(script), *args], capture_output=True, text=True, env={**env, **extra})

    usage = run("sddmm")
    assert usage.returncode == 1 and "usage:" in usage.stderr
    bad_op = run("spgemm", str(tmp_path), str(tmp_path / "out"))
    assert bad_op.returncode == 1 and "OP 'spgemm' is not spmm or sddmm" in bad_op.stderr
    bad_phase = run("sddmm", str(tmp_path), str(tmp_path / "out"), "sparsejit", "during", SPARSEJIT_CACHE_DIR=str(tmp_path))
    assert bad_phase.returncode == 1 and "PHASE 'during' is not both, before or after" in bad_phase.stderr
    no_cache = run("sddmm", str(tmp_path), str(tmp_path / "out"))
    assert no_cache.returncode == 1 and "set SPARSEJIT_CACHE_DIR" in no_cache.stderr
    assert not (tmp_path / "out").exists()  # nothing written before the arguments hold


def test_refit_costs_neighbour_correction_matches_the_runtime_and_repairs_a_region(tmp_path):
    refit, _ = _refit_costs_module()
    # The section of tests/neighbour_correction_test.cpp: the same factors as the C++ reader.
    section = {"features": ["rows", "k"], "scale": [1.0, 1.0], "count": 2, "softening": 1.0,
               "points": [{"at": [0.0, 0.0], "log_ratio": {"csr_vector": np.log(2.0), "dense": 0.5}},
                          {"at": [1.0, 0.0], "log_ratio": {"csr_vector": np.log(4.0)}},
                          {"at": [5.0, 0.0], "log_ratio": {"csr_vector": 3.0, "cusparse": -1.0}}]}  # fmt: skip
    assert refit.neighbour_factor(section, "csr_vector", {"rows": 1.0, "k": 1.0}) == pytest.approx(4.0 ** (2.0 / 3.0))
    assert refit.neighbour_factor(section, "csr_vector", {"rows": np.e, "k": 1.0}) == pytest.approx(2.0 ** (5.0 / 3.0))
    assert refit.neighbour_factor(section, "dense", {"rows": 1.0, "k": 1.0}) == pytest.approx(np.exp(0.5))
    assert refit.neighbour_factor(section, "rs", {"rows": 1.0, "k": 1.0}) == 1.0
    # Two variants; the formulas price "long_rows" 3x too low on matrices of few rows, so it is
    # picked there and loses. The correction, made from the other folds' matrices, repairs it.
    cost = {"gather": {"launch": 1.0}, "long_rows": {"launch": 0.8}}
    cases = []
    for i, rows in enumerate([64, 80, 96, 128, 160, 192, 20000, 30000, 40000, 50000, 60000, 70000]):
        few = rows < 1000
        times = {"gather": 1.0, "long_rows": 2.4 if few else 0.8}
        features = {"rows": rows, "cols": 1000, "row_mean": 10.0, "row_max": 20.0, "k": 128, "density": 0.01}
        cases.append({"matrix": f"m{i}", "k": 128, "terms": {v: {"launch": 1.0} for v in cost}, "times": times,
                      "oracle": min(times.values()), "features": features})  # fmt: skip
    plain = refit.cross_validated_picks(cost, cases, 3, 1, refit=False)
    assert plain == ["long_rows"] * len(cases)
    corrected = refit.cross_validated_picks(cost, cases, 3, 1, neighbours=3, refit=False)
    assert corrected == ["gather" if c["features"]["rows"] < 1000 else "long_rows" for c in cases]
    # The section written with --out has the shape the runtime reads: one point per case, its
    # log position and the log of measured over predicted time per variant.
    written = refit.neighbour_section(cost, cases, 6)
    assert written["features"] == refit.NEIGHBOUR_FEATURES and written["count"] == 6
    assert len(written["scale"]) == 6 and all(s > 0 for s in written["scale"])
    # An SDDMM section also places its points by tile_fill: two cases alike in every other
    # feature lie apart.
    assert refit.neighbour_features("spmm") == refit.NEIGHBOUR_FEATURES
    assert refit.neighbour_features("sddmm") == refit.NEIGHBOUR_FEATURES + ["tile_fill"]
    banded = [dict(c, features=dict(c["features"], tile_fill=fill)) for c, fill in zip(cases[:2], [0.1, 0.001])]
    by_fill = refit.neighbour_section(cost, banded, 6, features=refit.neighbour_features("sddmm"))
    assert by_fill["features"][-1] == "tile_fill" and len(by_fill["points"][0]["at"]) == 7
    assert by_fill["points"][0]["at"][-1] - by_fill["points"][1]["at"][-1] == pytest.approx(np.log(100.0))
    assert len(written["points"]) == len(cases)
    assert written["points"][0]["log_ratio"]["long_rows"] == pytest.approx(np.log(2.4 / 0.8))


def test_refit_costs_regret_term_matches_the_runtime_and_is_written_for_the_timed_problems(tmp_path):
    refit, script = _refit_costs_module()
    # The section of tests/neighbour_correction_test.cpp with its regrets: the same factors.
    section = {"features": ["rows", "k"], "scale": [1.0, 1.0], "count": 2, "softening": 1.0,
               "regret_weight": 0.5, "regret_when": {"value_bytes": 4},
               "points": [{"at": [0.0, 0.0], "log_ratio": {"csr_vector": np.log(2.0), "dense": 0.5},
                           "log_regret": {"csr_vector": np.log(1.5), "dense": 0.2}},
                          {"at": [1.0, 0.0], "log_ratio": {"csr_vector": np.log(4.0)}, "log_regret": {"csr_vector": 0.0}},
                          {"at": [5.0, 0.0], "log_ratio": {"csr_vector": 3.0, "cusparse": -1.0},
                           "log_regret": {"csr_vector": 0.7, "cusparse": 0.0}}]}  # fmt: skip
    f32 = {"rows": 1.0, "k": 1.0, "value_bytes": 4}
    assert refit.neighbour_factor(section, "csr_vector", f32) == pytest.approx(4.0 ** (2.0 / 3.0) * 1.5 ** (1.0 / 3.0))
    assert refit.neighbour_factor(section, "dense", f32) == pytest.approx(np.exp(0.5 + 0.5 * 0.2))
    # Another precision gets the ratio correction alone.
    assert refit.neighbour_factor(section, "csr_vector", {**f32, "value_bytes": 8}) == pytest.approx(4.0 ** (2.0 / 3.0))
    # Written: each point's regret per variant it timed, the log of its time over the oracle's,
    # capped at a 2x loss; "regret_when" the features every case shares.
    cost = {"fast": {"launch": 1.0}, "slow": {"launch": 1.0}}
    cases = [{"matrix": f"m{i}", "k": 32, "terms": {v: {"launch": 1.0} for v in cost}, "times": {"fast": 1.0, "slow": slow},
              "oracle": 1.0, "features": {"rows": 100 + i, "cols": 100, "row_mean": 4.0, "row_max": 8.0, "k": 32,
                                          "density": 0.04, "value_bytes": 4, "transpose_a": i > 0}}
             for i, slow in enumerate([1.5, 5.0])]  # fmt: skip
    written = refit.neighbour_section(cost, cases, 3, 0.5)
    assert written["regret_weight"] == 0.5 and written["regret_when"] == {"value_bytes": 4}
    assert written["points"][0]["log_regret"] == pytest.approx({"fast": 0.0, "slow": np.log(1.5)})
    assert written["points"][1]["log_regret"]["slow"] == pytest.approx(np.log(2.0))
    assert "regret_weight" not in refit.neighbour_section(cost, cases, 3)
    assert "log_regret" not in refit.neighbour_section(cost, cases, 3)["points"][0]
    # The model text keeps every value and puts each point on one line.
    model = {"op": "spmm", "cost": cost, "neighbours": refit.rounded(written)}
    text = refit.model_text(model)
    assert json.loads(text) == model
    assert sum(line.strip().startswith('{"at"') for line in text.splitlines()) == len(cases)
    # Bad weights are refused by name before anything is read.
    results, model_file = tmp_path / "none.jsonl", tmp_path / "model.json"
    results.write_text("")
    model_file.write_text(json.dumps({"op": "spmm", "cost": cost}))
    for args, message in [(["--regret-weight", "-1", "--neighbours", "9"], "--regret-weight -1.0 must be a number at least 0"),
                          (["--regret-weight", "nan", "--neighbours", "9"], "--regret-weight nan must be a number at least 0"),
                          (["--regret-weight", "0.5"], "--regret-weight needs --neighbours")]:  # fmt: skip
        bad = subprocess.run([sys.executable, str(script), str(results), "--model", str(model_file), *args],
                             capture_output=True, text=True)  # fmt: skip
        assert bad.returncode == 1 and message in bad.stderr, bad.stderr
