"""``@perflab.bench(ops=...)``: a call that performs N operations is reported per operation."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from perflab import model
from perflab.analyze.run.groups import thread_rows
from perflab.analyze.run.summary import summarize
from perflab.engines.run import suite
from perflab.errors import UsageError
from perflab.report.run_table import group_table, summary_records, threads_table
from tests.conftest import make_bench


@pytest.fixture(autouse=True)
def _clean_registry():
    suite._BENCHES.clear()
    yield
    suite._BENCHES.clear()


def _cases(**kwargs):
    suite.bench(lambda n=1: None, name="f", **kwargs)
    return suite.expand(suite.BenchFile(Path("x.py"), list(suite._BENCHES), []))


def test_ops_number_and_param_name_give_the_ops_per_call() -> None:
    (case,) = _cases(ops=100)
    assert case.ops_per_call == 100 and case.to_benchmark().ops_per_call == 100
    suite._BENCHES.clear()
    cases = _cases(ops="n", params={"n": [10, 1000]})
    assert [c.to_benchmark().ops_per_call for c in cases] == [10, 1000]
    suite._BENCHES.clear()
    (case,) = _cases()
    assert case.ops_per_call == 1


@pytest.mark.parametrize(
    "ops,params,words",
    [
        (0, {}, "whole number ≥ 1"),
        (2.5, {}, "whole number ≥ 1"),
        (True, {}, "whole number"),
        ("batch", {"n": [1]}, "params: ['n']"),
        ("n", {"n": [10, "x"]}, "got ['x']"),
        ("n", {"n": [0]}, "got [0]"),
    ],
)
def test_bad_ops_is_one_clear_usage_error(ops, params, words) -> None:
    with pytest.raises(UsageError, match="ops=") as info:
        suite.bench(lambda n=1: None, name="f", ops=ops, params=params)
    assert words in str(info.value)


def test_summary_times_rates_and_allocations_are_per_operation() -> None:
    per_call = [[2e-6, 2.1e-6, 1.9e-6], [2e-6, 2.05e-6, 1.95e-6]]
    plain = summarize(make_bench("a", per_call))
    batched_bench = make_bench("a", per_call, ops_per_call=100)
    for proc in batched_bench.processes:
        proc.alloc_peak_bytes, proc.alloc_blocks = 5600.0, 200.0
    batched = summarize(batched_bench)
    assert batched.median_s == pytest.approx(plain.median_s / 100)
    assert batched.ci_low_s == pytest.approx(plain.ci_low_s / 100, rel=0.05)  # bootstrap
    assert batched.loop_overhead_s == pytest.approx(plain.loop_overhead_s / 100)
    assert batched.timer_error_fraction == pytest.approx(plain.timer_error_fraction)
    assert (batched.alloc_peak_bytes, batched.alloc_blocks) == (56.0, 2.0)
    table = group_table("g", [batched])
    assert table.rows[0][3] == "50.0 M/s"  # 1 / 20 ns, not 1 / 2 µs
    assert any("does 100 per call" in line for line in table.footnotes)
    assert summary_records({"g": [batched]})[0]["ops_per_call"] == 100


def test_threads_latencies_are_per_operation() -> None:
    bench = make_bench("a", [[4e-6] * 3, [4e-6] * 3], threads=2, ops_per_call=4)
    for proc in bench.processes:
        proc.thread_ops = [500, 500]
        proc.latency_ns = {"p50": 8000.0, "p99": 16000.0, "p99.9": 20000.0}
    summaries = [summarize(bench)]
    table = threads_table("t", thread_rows([bench], summaries), summaries)
    row = table.rows[0]
    assert row[5:8] == ["2.00 µs", "4.00 µs", "5.00 µs"]


def test_run_records_ops_and_prints_per_operation(tmp_path: Path, perflab_cli) -> None:
    bench = tmp_path / "batch.py"
    bench.write_text(
        textwrap.dedent("""
        import collections
        import perflab

        @perflab.bench(params={"n": [50]}, ops="n", setup=lambda: collections.deque())
        def append_pop(q, n):
            for i in range(n):
                q.append(i)
            for i in range(n):
                q.popleft()
    """)
    )
    out = tmp_path / "r.json"
    result = perflab_cli(
        "run",
        str(bench),
        "--json",
        str(out),
        "--min-processes",
        "2",
        "--max-processes",
        "2",
        "--budget",
        "1s",
        "--process-time",
        "20ms",
    )
    assert result.returncode == 0, result.stderr
    assert "does 50 per call" in result.stdout
    (data,) = json.loads(out.read_text())["benchmarks"]
    assert data["ops_per_call"] == 50
    # Per op is per call / 50, computed from the recorded samples: the same samples read
    # back and summarised as one op per call give exactly 50x the figure the run wrote
    # (the median estimator is scale-equivariant). No speed of the machine enters.
    (loaded,) = model.load(out).benchmarks
    assert loaded.ops_per_call == 50 and sum(len(p.samples) for p in loaded.processes) > 0
    per_op_s = summarize(loaded).median_s
    per_call_s = summarize(dataclasses.replace(loaded, ops_per_call=1)).median_s
    assert data["summary"]["median_s"] == pytest.approx(per_op_s, rel=1e-9)
    assert per_op_s == pytest.approx(per_call_s / 50, rel=1e-9)
