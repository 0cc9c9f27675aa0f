"""perflab show and compare read trace files: one row per span, verdicts per percentile."""

from __future__ import annotations

import json

import pytest

import perflab.trace
from perflab import _core, model
from perflab.analyze.compare.suite import compare_results
from perflab.trace.results import build


def record(name: str, durations_ns: list[int]) -> None:
    """Record spans of fixed durations (through the bridge's entry: no clock involved)."""
    span_id = _core.trace_register(name)[0]
    for d in durations_ns:
        _core.trace_record(span_id, d, d // 2)


def dump_with(tmp_path, file, spans):
    perflab.trace.reset()
    for name, durations in spans.items():
        record(name, durations)
    return perflab.trace.dump(tmp_path / file)


def test_show_prints_one_row_per_span_by_total(tmp_path, perflab_cli):
    path = dump_with(
        tmp_path, "t.json", {"s.small": [1_000] * 10, "s.big\x1b[31m": [2_000_000] * 3}
    )
    out = perflab_cli("show", str(path), "--format", "markdown")
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("| s.")]
    assert rows[0].startswith("| s.big") and "\x1b" not in out.stdout  # escaped
    assert rows[1].split("|")[2].strip() == "10"
    assert "| 6.00 ms |" in rows[0] and "| 10.0 µs |" in rows[1]  # totals: 3 × 2 ms, 10 × 1 µs
    csv_out = perflab_cli("show", str(path), "--format", "csv").stdout.splitlines()
    header = csv_out[0].split(",")
    small = dict(zip(header, next(r for r in csv_out if r.startswith("s.small")).split(",")))
    assert float(small["total_s"]) == pytest.approx(1e-5)
    assert float(small["self_total_s"]) == pytest.approx(5e-6)


def test_compare_gives_per_span_percentile_verdicts():
    perflab.trace.reset()
    record("c.same", [10_000 + i % 50 for i in range(2000)])
    record("c.slow", [10_000 + i % 50 for i in range(2000)])
    a = build()
    perflab.trace.reset()
    record("c.same", [10_000 + i % 50 for i in range(2000)])
    record("c.slow", [15_000 + i % 50 for i in range(2000)])
    b = build()
    suite = compare_results(a, b, percentiles=(50, 99))
    verdicts = {r.id: r.verdict for r in suite.rows}
    assert verdicts == {
        "trace/c.same p50": "same",
        "trace/c.same p99": "same",
        "trace/c.slow p50": "slower",
        "trace/c.slow p99": "slower",
    }
    slow = next(r for r in suite.rows if r.id == "trace/c.slow p50")
    assert slow.ratio.value == pytest.approx(1.5, rel=0.01)
    assert slow.a.value == pytest.approx(10_025e-9, rel=0.01)  # seconds


def test_compare_cli_on_two_dumps_and_a_span_missing_on_one_side(tmp_path, perflab_cli):
    a = dump_with(tmp_path, "a.json", {"x": [5_000] * 100, "gone": [1] * 5})
    b = dump_with(tmp_path, "b.json", {"x": [5_000] * 100, "new": [1] * 5})
    out = perflab_cli("compare", str(a), str(b), "--json", str(tmp_path / "cmp.json"))
    assert out.returncode == 0, out.stderr
    doc = json.loads((tmp_path / "cmp.json").read_text())
    text = json.dumps(doc)
    assert "trace/gone" in text and "trace/new" in text
    assert "trace/x p50" in text


def test_a_trace_file_saved_and_loaded_keeps_every_figure(tmp_path):
    path = dump_with(tmp_path, "r.json", {"r": [100, 200, 300, 400_000]})
    (bench,) = model.load(path).benchmarks
    assert (bench.span.count, bench.span.total_ns, bench.span.self_total_ns) == (
        4,
        400_600,
        200_300,
    )
    assert bench.span.duration.min_ns == 100 and 398_000 <= bench.span.duration.max_ns <= 402_000
