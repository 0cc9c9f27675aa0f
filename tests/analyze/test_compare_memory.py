"""Memory compared like time (issue 28 §4): allocations, RSS peak and growth rows of
``perflab compare``, their verdicts against the noise threshold and the absolute floors,
and the ``--fail-on memory`` gate. Synthetic processes and runs: no measuring."""

from __future__ import annotations

import math

import pytest

from perflab.analyze.compare import memory as cm
from perflab.analyze.compare import suite as cmp
from perflab.errors import UsageError
from perflab.model import Benchmark, CommandRun, Results
from perflab.model.comparison import SuiteComparison
from tests.conftest import lognormal_groups, make_bench

RESAMPLES = 500


def bench(
    allocated: list[float] | None = None,
    blocks: float = 10.0,
    peak: float = 4096.0,
    rss_peaks: list[float] | None = None,
    rss_growth: list[float] | None = None,
    heap_growth: list[float] | None = None,
    seed: int = 0,
) -> Benchmark:
    """A run benchmark of 6 processes with the given per-call allocation figures."""
    b = make_bench("f", lognormal_groups(1e-6, 6, 20, 0.01, 0.005, seed))
    for i, p in enumerate(b.processes):
        if allocated is not None and i < len(allocated):
            p.alloc_total_bytes, p.alloc_total_blocks = allocated[i], blocks
            p.alloc_peak_bytes, p.alloc_blocks = peak, 0.0
        if rss_peaks is not None:
            p.rss_peak_bytes = int(rss_peaks[i])
            p.rss_start_bytes = 30_000_000
            p.rss_end_bytes = 30_000_000 + int((rss_growth or [0.0] * 6)[i])
            p.rss_calls = 1_000_000
        if heap_growth is not None:
            grown = heap_growth[i]
            p.heap = {"calls": [0, 10_000], "traced_bytes": [0.0, grown], "t_s": [0, 1]}
    return b


def rows_of(a: Benchmark, b: Benchmark, threshold: float = 0.02) -> dict[str, cmp.Row]:
    rows = cmp.compare_benchmark(a, b, threshold, resamples=RESAMPLES)
    return {r.metric: r for r in rows if r.is_memory}


def results(*benches: Benchmark, kind: str = "run") -> Results:
    return Results(
        kind, ["perflab"], "2026-01-01T00:00:00+00:00", "0.1.0", benchmarks=list(benches)
    )


def test_allocations_that_grew_read_more_and_the_same_read_same() -> None:
    a = bench([1000.0, 1000.0, 1000.0])
    same = rows_of(a, bench([1000.0, 1000.0, 1000.0], seed=1))
    assert same["allocated/op"].verdict == "same"
    assert same["allocs/op"].verdict == "same"
    assert same["alloc peak/op"].verdict == "same"
    grew = rows_of(a, bench([2000.0, 2000.0, 2000.0], blocks=20.0, seed=1))
    row = grew["allocated/op"]
    assert row.verdict == "more"
    assert row.ratio is not None and row.ratio.value == pytest.approx(2.0)
    assert row.difference is not None and row.difference.value == pytest.approx(1000.0)
    assert grew["allocs/op"].verdict == "more"
    fell = rows_of(bench([2000.0, 2000.0, 2000.0]), a)
    assert fell["allocated/op"].verdict == "less"


def test_a_few_bytes_are_under_the_floor_whatever_the_ratio() -> None:
    """8 B → 12 B per op is +50% but under the 16 B floor (one small object): same."""
    rows = rows_of(bench([8.0, 8.0, 8.0]), bench([12.0, 12.0, 12.0], seed=1))
    assert rows["allocated/op"].ratio.value == pytest.approx(1.5)
    assert rows["allocated/op"].verdict == "same"


def test_nothing_allocated_on_both_sides_is_the_same_and_from_zero_is_more() -> None:
    rows = rows_of(bench([0.0, 0.0, 0.0]), bench([0.0, 0.0, 0.0], seed=1))
    assert rows["allocated/op"].verdict == "same"
    rows = rows_of(bench([0.0, 0.0, 0.0]), bench([512.0, 512.0, 512.0], seed=1))
    assert rows["allocated/op"].ratio is None
    assert rows["allocated/op"].verdict == "more"


def test_scattered_allocations_over_the_threshold_are_inconclusive() -> None:
    a = bench([1000.0, 1000.0, 1000.0])
    b = bench([900.0, 1100.0, 2000.0], seed=1)
    assert rows_of(a, b)["allocated/op"].verdict == "inconclusive"


def test_one_process_on_a_side_gives_no_ci() -> None:
    rows = rows_of(bench([1000.0]), bench([3000.0], seed=1))
    row = rows["allocated/op"]
    assert row.verdict == "inconclusive"
    assert any("one unit on a side" in n for n in row.notes)


def test_rss_peak_and_growth_rows_under_memory() -> None:
    peaks = [40e6, 40.1e6, 39.9e6, 40e6, 40.05e6, 39.95e6]
    a = bench(rss_peaks=peaks, rss_growth=[0.0] * 6, heap_growth=[0.0] * 6)
    leak = [8e6, 8.1e6, 7.9e6, 8e6, 8.05e6, 7.95e6]  # 8 kB per 1,000 calls
    b = bench(
        rss_peaks=[p * 1.5 for p in peaks],
        rss_growth=leak,
        heap_growth=[5000.0] * 6,  # 500 B per 1,000 calls
        seed=1,
    )
    rows = rows_of(a, b)
    assert rows["RSS peak"].verdict == "more"
    assert rows["RSS growth/1k ops"].verdict == "more"
    assert rows["RSS growth/1k ops"].difference.value == pytest.approx(8000.0, rel=0.02)
    assert rows["heap growth/1k ops"].verdict == "more"
    same = rows_of(a, bench(rss_peaks=peaks, rss_growth=[0.0] * 6, heap_growth=[0.0] * 6))
    assert {r.verdict for r in same.values()} == {"same"}


def test_rss_growth_within_the_leak_floor_is_same() -> None:
    """Pages settling (16 kB over a million calls: 0.016 B per 1,000) is no leak."""
    peaks = [40e6] * 6
    a = bench(rss_peaks=peaks, rss_growth=[0.0] * 6)
    b = bench(rss_peaks=peaks, rss_growth=[16384.0, 0.0, 16384.0, 0.0, 8192.0, 4096.0], seed=1)
    assert rows_of(a, b)["RSS growth/1k ops"].verdict == "same"


def command(rss: list[int], seed: int = 0) -> Benchmark:
    runs = [
        CommandRun(i, float(i), int(1e7 * (1 + 0.01 * ((i * 7 + seed) % 5))), max_rss_bytes=m)
        for i, m in enumerate(rss)
    ]
    return Benchmark(name="c", kind="command", runs=runs)


def test_commands_max_rss() -> None:
    a = command([20_000_000 + 4096 * (i % 3) for i in range(10)])
    b = command([30_000_000 + 4096 * (i % 3) for i in range(10)], seed=1)
    rows = {r.metric: r for r in cmp.compare_benchmark(a, b, resamples=RESAMPLES) if r.is_memory}
    assert rows["max RSS"].verdict == "more"
    assert "tree RSS peak" not in rows  # no --memory: no row


def test_the_suite_counts_memory_apart_and_the_gate_reads_memory() -> None:
    a = results(bench([1000.0, 1000.0, 1000.0]))
    b = results(bench([4000.0, 4000.0, 4000.0], seed=1))
    suite = cmp.compare_results(a, b, resamples=RESAMPLES)
    assert sum(suite.counts.values()) == 1  # the time row alone
    assert suite.memory_counts == {"more": 1, "less": 0, "inconclusive": 0, "same": 2, "failed": 0}
    assert suite.tripped(["slower", "inconclusive", "same"]) == [
        r.id for r in suite.rows if not r.is_memory and r.verdict in ("inconclusive", "same")
    ]
    assert suite.tripped(["memory"]) == ["g/f (allocated/op)"]
    assert suite.geomean_over == 1  # memory rows never enter the geometric mean
    assert all(r.kind == "python" for r in suite.rows)


def test_fail_on_memory_is_a_word() -> None:
    assert cmp.parse_fail_on("slower,memory") == ["slower", "memory"]
    with pytest.raises(UsageError, match="memory"):
        cmp.parse_fail_on("leaks")


def test_the_json_document_keeps_memory_rows() -> None:
    a = results(bench([1000.0, 1000.0, 1000.0]))
    b = results(bench([4000.0, 4000.0, 4000.0], seed=1))
    suite = cmp.compare_results(a, b, resamples=RESAMPLES)
    from perflab.model import json_document
    from perflab.schema import validate

    doc = suite.to_dict("A", "B", ["memory"], suite.tripped(["memory"]))
    import json

    assert validate(json.loads(json_document(doc)), "compare") is None
    back = SuiteComparison.from_dict(json.loads(json_document(doc)))
    row = next(r for r in back.rows if r.metric == "allocated/op")
    assert row.verdict == "more" and row.is_memory
    assert row.difference is not None and row.difference.value == pytest.approx(3000.0)
    assert back.memory_counts == suite.memory_counts
    assert back.tripped(["memory"]) == suite.tripped(["memory"])


def test_floors_are_stated() -> None:
    from perflab.report.compare_memory_table import floors_text

    text = floors_text()
    assert "16 B/op" in text and "block/op" in text and math.isfinite(cm.FLOORS["RSS peak"])
