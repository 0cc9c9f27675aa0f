"""Memory rows of two http results files (issue 28 §4): each step's watched server RSS
peak (``http --watch``) compared like run's memory rows, the same verdict rule on one
reading per side, and the ``--fail-on memory`` gate through the real entry point.
Synthetic steps and timelines: no measuring."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from perflab import model
from perflab.analyze.compare import memory as cm
from perflab.analyze.compare import suite as cmp
from perflab.model import Benchmark, Results
from tests.analyze.test_compare_http import http_bench, step

MB = 1_000_000


def watched(rss_bytes: list[int], rate: float = 1000.0) -> object:
    """An open-loop step at ``rate`` whose one watched process read ``rss_bytes`` every
    100 ms (the peak is their highest)."""
    s = step([1000 + i % 50 for i in range(2000)], rate=rate)
    times = [round(0.1 * i, 1) for i in range(len(rss_bytes))]
    s.watched = [{"pid": 7, "name": "server", "t_s": times, "cpu_s": times, "rss_bytes": rss_bytes}]
    return s


def rows(a: Benchmark, b: Benchmark, threshold: float = 0.02) -> list[cmp.Row]:
    return [r for r in cmp.compare_benchmark(a, b, threshold, resamples=200) if r.is_memory]


@pytest.mark.parametrize(
    "peak_a, peak_b, expected",
    [
        (50 * MB, 80 * MB, "more"),  # +30 MB, 1.6×: beyond both thresholds
        (80 * MB, 50 * MB, "less"),
        (50 * MB, 50 * MB + 500_000, "same"),  # +0.5 MB: within the 1 MiB floor
        (500 * MB, 505 * MB, "same"),  # +5 MB but +1%: within the 2% threshold
    ],
)
def test_server_rss_peak_verdicts(peak_a: int, peak_b: int, expected: str) -> None:
    a = http_bench(watched([30 * MB, peak_a, 40 * MB]))
    b = http_bench(watched([30 * MB, peak_b, 40 * MB]))
    [row] = rows(a, b)
    assert row.metric == "server RSS peak" and row.unit == "B"
    assert row.id == f"{a.id} open 1,000/s"
    assert (row.a.value, row.b.value) == (peak_a, peak_b)
    assert row.difference.value == peak_b - peak_a
    assert row.verdict == expected
    assert row.notes == [cm.ONE_READING]


def test_only_steps_watched_on_both_sides_get_a_row() -> None:
    a = http_bench(watched([10 * MB, 20 * MB]), watched([10 * MB, 30 * MB], rate=2000))
    b = http_bench(step([1000] * 100), watched([10 * MB, 90 * MB], rate=2000))
    [row] = rows(a, b)
    assert row.id.endswith("open 2,000/s") and row.verdict == "more"
    assert rows(http_bench(step([1000] * 100)), http_bench(step([1000] * 100))) == []


def test_the_floor_is_the_watched_one() -> None:
    assert cm.FLOORS["server RSS peak"] == 1024 * 1024


def _save(path: Path, *benches: Benchmark) -> Path:
    results = Results(
        "http",
        ["perflab", "http", "http://127.0.0.1:8080/"],
        "2026-01-01T00:00:00+00:00",
        "0.1.0",
        environment={"hostname": "ci", "cpu_count": 2},
        benchmarks=list(benches),
    )
    return model.save(results, path)


def test_compare_of_two_http_files_prints_and_gates_memory(tmp_path: Path, perflab_cli) -> None:  # type: ignore[no-untyped-def]
    a = _save(tmp_path / "a.json", http_bench(watched([30 * MB, 50 * MB])))
    b = _save(tmp_path / "b.json", http_bench(watched([30 * MB, 80 * MB])))
    proc = perflab_cli(
        "compare", str(a), str(b), "--fail-on", "memory", env={**os.environ, "COLUMNS": "200"}
    )
    assert proc.returncode == 1, proc.stderr
    assert "server RSS peak" in proc.stdout and "±1 MiB server RSS" in proc.stdout
    assert "+30.0 MB" in proc.stdout and "1.60×" in proc.stdout
    assert "gate: --fail-on memory tripped by 1" in proc.stderr
    assert "(server RSS peak)" in proc.stderr
    out = tmp_path / "c.json"
    same = perflab_cli("compare", str(a), str(a), "--fail-on", "memory", "--json", str(out))
    assert same.returncode == 0, same.stderr
    [row] = [r for r in json.loads(out.read_text())["rows"] if r["metric"] == "server RSS peak"]
    assert row["verdict"] == "same"
