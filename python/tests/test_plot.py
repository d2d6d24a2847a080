"""python -m sparsejit.plot: what it computes from result lines of both benchmarks, and the
pictures (drawn where matplotlib is installed)."""

import json

import pytest

from sparsejit import plot


def cpp_record(op, k, nnz, auto, cusparse, variants):
    return {"op": op, "k": k, "nnz": nnz, "rows": 100, "cols": 100, "dtype": "f32", "transpose": False,
            "auto": {"ms": auto}, "vendor": {"best": cusparse}, "variants": variants}  # fmt: skip


RECORDS = [
    cpp_record("spmm", 32, 1000, 1.0, 2.0, {"rs": 1.5, "dense": "unsupported"}),
    cpp_record("spmm", 32, 4000, 3.0, 1.0, {}),
    cpp_record("sddmm", 64, 2000, 0.5, 1.0, {}),
]


def test_times_of_reads_both_formats():
    assert plot.times_of(RECORDS[0]) == {"auto": 1.0, "cusparse": 2.0, "rs": 1.5}
    # The runtime's cusparse variant forced keeps its own name; the baseline stays the vendor's.
    forced = cpp_record("sddmm", 32, 1000, 1.0, 2.0, {"cusparse": 2.5, "row_gather": 1.2})
    assert plot.times_of(forced) == {"auto": 1.0, "cusparse": 2.0, "cusparse variant": 2.5, "row_gather": 1.2}
    python_line = {"sparsejit_ms": 0.2, "torch_ms": 0.5}
    assert plot.times_of(python_line) == {"sparsejit": 0.2, "torch": 0.5}


def test_profile_is_the_share_within_each_factor_of_the_fastest():
    shares = plot.profile(RECORDS[:2], [1.0, 1.5, 3.0])
    assert shares == {"auto": [0.5, 0.5, 1.0], "cusparse": [0.5, 0.5, 1.0], "rs": [0.0, 0.5, 0.5]}


def test_speedups_are_grouped_by_op_and_k():
    assert plot.speedups(RECORDS) == {("spmm", 32): [(1000, 2.0), (4000, 1 / 3)], ("sddmm", 64): [(2000, 2.0)]}


def test_roofline_point_counts_the_compulsory_bytes():
    intensity, gflops = plot.roofline_point(RECORDS[0])
    sparse = 1000 * (4 + 4) + 101 * 4
    dense = (100 + 100) * 32 * 4
    assert intensity == pytest.approx(2 * 1000 * 32 / (sparse + dense))
    assert gflops == pytest.approx(2 * 1000 * 32 / 1.0 / 1e6)


def step(feature, value, threshold):
    """One step of a Decision's tree path, as bench writes it in auto.path."""
    return {"feature": feature, "value": value, "comparison": "<=", "threshold": threshold, "taken": value <= threshold}


def with_path(record, *steps):
    record = json.loads(json.dumps(record))
    record["auto"]["path"] = list(steps)
    return record


# SDDMM lines split first on nnz at 124416 (then on more), over three decades of nnz, two K.
SPLIT_RECORDS = [
    with_path(cpp_record("sddmm", 32, 1000, 1.0, 2.0, {}), step("nnz", 1000, 124416), step("k", 32, 96)),
    with_path(cpp_record("sddmm", 32, 2000000, 2.0, 1.0, {}), step("nnz", 2000000, 124416), step("tile_fill", 0.3, 0.2)),
    with_path(cpp_record("sddmm", 128, 50000, 0.5, 2.0, {}), step("nnz", 50000, 124416)),
    with_path(cpp_record("spmm", 32, 4000, 4.0, 1.0, {}), step("accumulations_per_nnz", 0.5, 0.04)),
    cpp_record("spmm", 32, 8000, 1.0, 1.0, {}),  # an older line: no path
]


def test_split_point_takes_the_root_split_of_autos_path():
    assert [plot.split_point(r) for r in SPLIT_RECORDS] == [
        ("nnz", 1000, 124416, 2.0),
        ("nnz", 2000000, 124416, 0.5),
        ("nnz", 50000, 124416, 4.0),
        ("accumulations_per_nnz", 0.5, 0.04, 0.25),
        None,
    ]
    assert plot.split_point({"sparsejit_ms": 0.2, "torch_ms": 0.5}) is None  # python_bench.py's lines
    no_vendor = with_path(cpp_record("sddmm", 32, 1000, 1.0, None, {}), step("nnz", 1000, 124416))
    assert plot.split_point(no_vendor) is None


def spgemm_record(nnz, products, nnz_c, auto, cusparse):
    return {"op": "spgemm", "nnz": nnz, "rows": 100, "cols": 100, "dtype": "f32", "products": products,
            "nnz_c": nnz_c, "auto": {"ms": auto}, "vendor": {"best": cusparse}, "variants": {}}  # fmt: skip


def test_spgemm_lines_have_no_k_and_count_products():
    records = [spgemm_record(1000, 50000, 8000, 0.01, 0.04), spgemm_record(2000, 90000, 9000, 0.02, None)]
    # The line whose cuSPARSE call failed has no speedup, only a place on the roofline.
    assert plot.speedups(records) == {("spgemm", None): [(1000, 4.0)]}
    intensity, gflops = plot.roofline_point(records[0])
    # 2 x 50000 flops over A (1000 x 8 bytes + 101 x 4) and C (8000 x 8 + 101 x 4) in 0.01 ms.
    assert intensity == pytest.approx(100000 / (8404 + 64404))
    assert gflops == pytest.approx(10.0)


def test_split_series_groups_by_split_and_k():
    assert plot.split_series(SPLIT_RECORDS) == {
        ("sddmm", "nnz", 124416): {32: [(1000, 2.0), (2000000, 0.5)], 128: [(50000, 4.0)]},
        ("spmm", "accumulations_per_nnz", 0.04): {32: [(0.5, 0.25)]},
    }


def test_pictures_are_written_beside_the_results(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    results = tmp_path / "spmm.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    plot.main([str(results)])
    for kind in ("profile", "speedup", "roofline"):
        png = tmp_path / f"spmm-{kind}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert png.read_bytes()[25] == 3  # the IHDR's colour type: a palette of at most 256 colours
    assert not (tmp_path / "spmm-split.png").exists()  # no line carries a path


def test_spgemm_pictures_are_written(tmp_path):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    results = tmp_path / "spgemm.jsonl"
    lines = [spgemm_record(1000, 50000, 8000, 0.01, 0.04), spgemm_record(3000, 90000, 9000, 0.02, 0.03)]
    results.write_text("".join(json.dumps(r) + "\n" for r in lines))
    plot.main([str(results)])
    for kind in ("profile", "speedup", "roofline"):
        assert (tmp_path / f"spgemm-{kind}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_split_picture_is_written_when_lines_carry_a_path(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    results = tmp_path / "mixed.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in SPLIT_RECORDS))
    plot.main([str(results)])
    png = tmp_path / "mixed-split.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert str(png) in capsys.readouterr().out.split()


def test_a_bad_line_is_named_by_file_and_line(tmp_path):
    results = tmp_path / "bad.jsonl"
    good = json.dumps(RECORDS[0])
    results.write_text(good + "\n{not json\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not a JSON line"):
        plot.read([str(results)])
    spgemm = {k: v for k, v in spgemm_record(1000, 50000, 8000, 0.01, 0.04).items() if k != "nnz_c"}
    results.write_text(good + "\n\n" + json.dumps(spgemm) + "\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:3: .*: no nnz_c"):
        plot.read([str(results)])
    results.write_text("[1, 2]\n")
    with pytest.raises(ValueError, match=r"bad.jsonl:1: not a JSON object"):
        plot.read([str(results)])


def test_the_command_line_says_what_is_wrong(tmp_path, capsys):
    results = tmp_path / "bad.jsonl"
    results.write_text(json.dumps({"op": "spmm"}) + "\n")
    with pytest.raises(SystemExit) as stop:
        plot.main([str(results)])
    assert stop.value.code == 2
    assert "bad.jsonl:1: not a result line of sparsejit bench or python_bench.py: no auto, vendor" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        plot.main([str(tmp_path / "absent.jsonl")])
    assert "absent.jsonl" in capsys.readouterr().err
