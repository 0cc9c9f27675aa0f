"""Points for fits: CSVs, http sweeps, threads sweeps and parameter sweeps (no timing)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab import model
from perflab.analyze.fit import inputs as fi
from perflab.errors import UsageError
from perflab.model import Benchmark, Histogram, HttpStep, Results
from tests.conftest import make_bench

PROPERTY = settings(max_examples=25, deadline=None, derandomize=True)


def results(kind: str, benches: list[Benchmark]) -> Results:
    return Results(
        kind=kind,
        command_line=["perflab"],
        created="2026-01-01T00:00:00+00:00",
        perflab_version="0",
        benchmarks=benches,
    )


def write(tmp_path: Path, text: str, name: str = "points.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------
# CSV


def test_csv_headers_are_case_insensitive_and_comments_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, "# sweep of 2026-01-01\n Conc , x \n\n1,10\n2,19\n# note\n4,35\n")
    table = fi.read_source(path)
    assert isinstance(table, fi.CsvTable)
    assert list(table.columns) == ["conc", "x"]
    np.testing.assert_array_equal(table.numbers("x"), [10, 19, 35])
    assert table.lines == [4, 5, 7]


def test_usl_csv_gives_one_series_per_name(tmp_path: Path) -> None:
    path = write(tmp_path, "name,N,X\na,1,10\nb,1,20\na,2,18\nb,2,30\n")
    series = fi.usl_series(fi.read_source(path))
    assert [s.name for s in series] == ["a", "b"]
    np.testing.assert_array_equal(series[1].x, [1, 2])
    np.testing.assert_array_equal(series[1].y, [20, 30])


@pytest.mark.parametrize(
    "text, message",
    [
        ("threads,rate\n1,2\n", "no column n, x (columns: threads, rate)"),
        ("N\n1\n", "no column x (columns: n)"),
        ("N,X\n1,fast\n", "points.csv:2: x 'fast' is not a number"),
        ("N,X\n", "no usable data"),
        ("", "no usable data"),
    ],
)
def test_bad_csv_says_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fi.usl_series(fi.read_source(write(tmp_path, text)))


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such file"):
        fi.read_source(tmp_path / "nope.csv")


@PROPERTY
@given(
    st.lists(st.tuples(st.floats(0.5, 1e4), st.floats(1e-3, 1e9)), min_size=1, max_size=30),
    st.sampled_from(["N,X", "n,x", "N , X"]),
)
def test_csv_points_round_trip(points: list[tuple[float, float]], header: str) -> None:
    import tempfile

    text = header + "\n" + "".join(f"{n!r},{x!r}\n" for n, x in points)
    with tempfile.TemporaryDirectory() as tmp:
        (series,) = fi.usl_series(fi.read_source(write(Path(tmp), text)))
    np.testing.assert_array_equal(series.x, [p[0] for p in points])
    np.testing.assert_array_equal(series.y, [p[1] for p in points])


def test_cost_csv_reads_optional_cold_column(tmp_path: Path) -> None:
    path = write(tmp_path, "name,n,cost,cold\nA,10,1e-6,0.01\nA,100,1e-5,0.01\nB,10,2e-6,0\n")
    a, b = fi.cost_series(fi.read_source(path))
    assert (a.name, a.cold, a.param) == ("A", 0.01, "n")
    np.testing.assert_array_equal(a.y, [1e-6, 1e-5])
    assert b.cold == 0.0


# ---------------------------------------------------------------------------
# http sweeps


def step(
    mode: str,
    connections: int,
    ok: int,
    elapsed: float,
    mean_ms: float,
    service_ms: float | None = None,
    lag_ms: float = 0.0,
    rate: float | None = None,
) -> HttpStep:
    return HttpStep(
        offered_rate=rate,
        connections=connections,
        mode=mode,
        duration_s=elapsed,
        warmup_s=0.0,
        elapsed_s=elapsed,
        ok_responses=ok,
        latency=Histogram(count=ok, mean_us=mean_ms * 1e3),
        service_time=Histogram(count=ok, mean_us=(service_ms or mean_ms) * 1e3),
        send_lag=Histogram(count=ok, mean_us=lag_ms * 1e3),
    )


def test_closed_loop_steps_use_the_connection_count() -> None:
    bench = Benchmark(
        name="http://127.0.0.1:1/",
        kind="http",
        steps=[step("closed", c, ok, 2.0, 1.0) for c, ok in [(1, 2000), (4, 6000)]],
    )
    (series,) = fi.usl_series(results("http", [bench]))
    np.testing.assert_array_equal(series.x, [1, 4])
    np.testing.assert_array_equal(series.y, [1000, 3000])
    assert series.x_label.startswith("connections") and series.y_unit == "/s"


def test_open_loop_steps_use_littles_law_with_the_chosen_time() -> None:
    steps = [step("open", 8, 1000, 1.0, mean_ms=4.0, service_ms=2.0, rate=1000.0)]
    bench = Benchmark(name="u", kind="http", steps=steps)
    (by_latency,) = fi.usl_series(results("http", [bench]))
    (by_service,) = fi.usl_series(results("http", [bench]), little="service")
    assert by_latency.x[0] == pytest.approx(4.0)  # 1000/s × 4 ms
    assert by_service.x[0] == pytest.approx(2.0)
    assert "Little" in by_latency.x_label


def test_unusable_steps_are_left_out_with_a_note_and_lag_is_flagged() -> None:
    steps = [
        step("open", 8, 0, 1.0, 1.0, rate=10.0),
        step("open", 8, 500, 1.0, 2.0, lag_ms=1.0, rate=500.0),
        step("open", 8, 100, 1.0, 2.0, rate=100.0),
    ]
    (series,) = fi.usl_series(results("http", [Benchmark(name="u", kind="http", steps=steps)]))
    assert len(series.x) == 2
    assert any("10/s left out: no successful responses" in n for n in series.notes)
    assert any("500/s: the load generator fell behind" in n for n in series.notes)


def test_a_sweep_without_successes_is_no_usable_data() -> None:
    bench = Benchmark(name="u", kind="http", steps=[step("closed", 1, 0, 1.0, 1.0)])
    with pytest.raises(UsageError, match="no usable data for a USL fit"):
        fi.usl_series(results("http", [bench]))


def test_command_results_are_no_usable_data() -> None:
    with pytest.raises(UsageError, match="no usable data"):
        fi.usl_series(results("cmd", [Benchmark(name="sleep 1", kind="command")]))


# ---------------------------------------------------------------------------
# threads sweeps


def test_threads_sweep_gives_total_ops_per_second_per_thread_count() -> None:
    benches = [make_bench("lock", [[1e-6 / n] * 5] * 3, threads=n) for n in (1, 2, 4)]
    benches.append(make_bench("plain", [[1e-6] * 5] * 3))
    (series,) = fi.usl_series(results("run", benches))
    assert series.name == "g/lock" and series.short == "lock"
    np.testing.assert_array_equal(series.x, [1, 2, 4])
    np.testing.assert_allclose(series.y, [1e6, 2e6, 4e6], rtol=1e-6)


def test_run_without_threads_is_no_usable_data_for_usl() -> None:
    with pytest.raises(UsageError, match="threads sweep"):
        fi.usl_series(results("run", [make_bench("plain", [[1e-6] * 5] * 3)]))


# ---------------------------------------------------------------------------
# parameter sweeps


def sweep(
    name: str, cost, sizes=(10, 100, 1000, 10000), cold_extra: float = 0.0, **params: object
) -> list[Benchmark]:
    """Benchmarks of ``name`` at each size n, warm cost cost(n), cold = warm + cold_extra."""
    out = []
    for n in sizes:
        c = cost(n)
        bench = make_bench(
            name, [[c * (1 + 0.001 * k) for k in range(5)]] * 3, params={"n": n, **params}
        )
        for p in bench.processes:
            p.cold_ns = int(round((c + cold_extra) * 1e9))
        out.append(bench)
    return out


def test_cost_series_sorts_sizes_and_keeps_other_params_apart() -> None:
    benches = sweep("s", lambda n: 1e-6 * n, sizes=(1000, 10), mode="a")
    benches += sweep("s", lambda n: 2e-6 * n, sizes=(10, 1000), mode="b")
    a, b = fi.cost_series(results("run", benches))
    assert (a.name, b.name, a.short, a.param) == ("g/s mode=a", "g/s mode=b", "s", "n")
    np.testing.assert_array_equal(a.x, [10, 1000])
    np.testing.assert_allclose(b.y, [2.004e-5, 2.004e-3], rtol=1e-3)
    assert a.weights is not None and np.all(a.weights > 0)


def test_one_off_cost_is_cold_minus_warm() -> None:
    (series,) = fi.cost_series(results("run", sweep("gen", lambda n: 1e-6 * n, cold_extra=0.02)))
    assert series.cold == pytest.approx(0.02, rel=1e-3)
    assert 0 <= series.cold_se < 1e-4


def test_param_choice() -> None:
    two = [make_bench("x", [[1e-6] * 5], params={"n": 1, "k": 2.5, "fast": True, "s": "a"})]
    assert fi.numeric_params(two) == ["n", "k"]
    with pytest.raises(UsageError, match="several numeric parameters \\(n, k\\)"):
        fi.choose_param(two, None)
    assert fi.choose_param(two, "k") == "k"
    with pytest.raises(UsageError, match="--param size: no benchmark"):
        fi.choose_param(two, "size")
    none = [make_bench("x", [[1e-6] * 5])]
    with pytest.raises(UsageError, match="no benchmark has a numeric parameter"):
        fi.choose_param(none, None)
    assert fi.choose_param(none, None, required=False) is None


def test_without_the_parameter_a_benchmark_is_a_per_call_series() -> None:
    bench = make_bench("once", [[2e-6] * 5] * 3)
    (series,) = fi.cost_series(results("run", [bench]), required=False)
    assert series.param is None and series.x_label == "calls n"
    assert series.y[0] == pytest.approx(2e-6)
    assert series.cold == pytest.approx(5e-6 - 2e-6)  # make_bench sets cold_ns = 5000


def test_failed_benchmarks_give_no_usable_data() -> None:
    failed = Benchmark(
        name="x", params={"n": 1}, error="boom", processes=[model.Process(0, 1, 0.0)]
    )
    with pytest.raises(UsageError, match="every benchmark failed"):
        fi.cost_series(results("run", [failed]))


def test_pick_by_full_or_unique_bare_name() -> None:
    series = fi.cost_series(
        results("run", sweep("a", lambda n: n * 1e-9) + sweep("b", lambda n: n * 1e-9))
    )
    assert fi.pick(series, "g/a").name == "g/a"
    assert fi.pick(series, "a").name == "g/a"
    with pytest.raises(UsageError, match="unknown benchmark 'c'; the file has 'g/a'"):
        fi.pick(series, "c")
    dup = [
        fi.Series("g/a x=1", "a", np.ones(1), np.ones(1), "", ""),
        fi.Series("g/a x=2", "a", np.ones(1), np.ones(1), "", ""),
    ]
    with pytest.raises(UsageError, match="matches several"):
        fi.pick(dup, "a")


def test_results_files_are_detected_by_their_json(tmp_path: Path) -> None:
    path = tmp_path / "run.data"  # any suffix: the content decides
    model.save(results("run", [make_bench("x", [[1e-6] * 5])]), path)
    assert isinstance(fi.read_source(path), Results)
    assert math.isclose(fi.Z95, 1.96, rel_tol=1e-3)


def test_x_is_the_achieved_rate_of_the_window_never_the_drained_responses() -> None:
    # Issue 11's repro: 1,450 responses inside the 1.6 s window, 1,455 more while the
    # step drained for 1.7 s. X is 1,450 / 1.6 s, and the step is named as not steady.
    saturated = replace(
        step("open", 1024, 1450, 1.6, 800.0, rate=1500.0),
        drained=1455,
        drain_s=1.7,
        ok_from_warmup=250,
    )
    bench = Benchmark(name="u", kind="http", steps=[saturated])
    (series,) = fi.usl_series(results("http", [bench]))
    assert series.y[0] == pytest.approx(1450 / 1.6)
    assert series.x[0] == pytest.approx(1450 / 1.6 * 0.8)
    assert any("1500/s ended behind (drained for 1.70 s after the step)" in n for n in series.notes)
    # A file from before the split is used as it was, with a note saying so.
    old = replace(saturated, drained=None, ok_from_warmup=None)
    (series,) = fi.usl_series(results("http", [Benchmark(name="u", kind="http", steps=[old])]))
    assert any("predates" in n for n in series.notes)


def test_merge_series_pools_points_by_name_sorted_by_x() -> None:
    def series(name: str, x: list[float], se: list[float] | None, note: str) -> fi.Series:
        return fi.Series(
            name,
            name,
            np.array(x),
            np.array(x) * 10,
            "N",
            "X",
            y_se=None if se is None else np.array(se),
            notes=(note,),
        )

    first = [series("a", [4, 1], [0.4, 0.1], "first"), series("b", [2], None, "b")]
    merged = fi.merge_series([first, [series("a", [2], [0.2], "second")]])
    assert [s.name for s in merged] == ["a", "b"]
    a = merged[0]
    assert a.x.tolist() == [1, 2, 4] and a.y.tolist() == [10, 20, 40]
    assert a.y_se is not None and a.y_se.tolist() == [0.1, 0.2, 0.4]
    assert a.notes == ("first", "second")
    again = fi.merge_series([[series("a", [1], [0.1], "x")], [series("a", [2], None, "y")]])
    assert again[0].y_se is None  # an SE known for only some points is not kept
