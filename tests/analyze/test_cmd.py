"""Statistics of command runs, from synthetic runs (no timing)."""

from __future__ import annotations

import math

import pytest

from perflab.analyze.cmd import spawn_overhead, summarize_commands
from perflab.model import Benchmark, CommandRun

MS = 1_000_000


def bench(
    name: str,
    walls_ms: list[float],
    user_ms: float = 4,
    sys_ms: float = 1,
    rss: int = 20_000_000,
    **kw,
) -> Benchmark:  # type: ignore[no-untyped-def]
    runs = [
        CommandRun(
            index=i,
            started_s=i * 0.1,
            wall_ns=int(w * MS),
            user_ns=int(user_ms * MS),
            sys_ns=int(sys_ms * MS),
            max_rss_bytes=rss,
        )
        for i, w in enumerate(walls_ms)
    ]
    return Benchmark(name=name, kind="command", runs=runs, **kw)


def test_summary_figures_are_those_of_the_successful_timed_runs() -> None:
    b = bench("A", [10, 11, 12, 13, 100])
    b.runs.append(CommandRun(index=9, started_s=1, wall_ns=5000 * MS, ok=False, timed_out=True))
    b.runs.insert(0, CommandRun(index=10, started_s=0, wall_ns=999 * MS, warmup=True))
    (s,) = summarize_commands([b])
    assert (s.runs, s.failed, s.warmup) == (5, 1, 1)
    assert s.median_s == pytest.approx(0.012) and s.mean_s == pytest.approx(0.0292)
    assert s.max_s == pytest.approx(0.1) and s.outliers == 1
    assert s.user_s == pytest.approx(0.004) and s.total_s == pytest.approx(0.005)
    assert s.real_s == s.mean_s and s.cpu_wall == pytest.approx(0.005 / 0.0292)
    assert s.max_rss_bytes == 20_000_000 and s.reference
    assert (s.ratio.value, s.ratio.ci_low, s.ratio.ci_high) == (1.0, 1.0, 1.0)


def test_ratios_against_the_fastest_or_the_reference() -> None:
    fast, slow = bench("fast", [10, 10.1, 9.9] * 5), bench("slow", [20, 20.2, 19.8] * 5)
    s_fast, s_slow = summarize_commands([fast, slow])
    assert s_fast.reference and s_slow.ratio.value == pytest.approx(2.0)
    assert s_slow.ratio.ci_low <= 2.0 <= s_slow.ratio.ci_high
    s_fast, s_slow = summarize_commands([fast, slow], reference=1)
    assert s_slow.reference and s_fast.ratio.value == pytest.approx(0.5)


def failed_bench() -> Benchmark:
    """A command whose one run exited with status 1."""
    return Benchmark(
        name="bad",
        kind="command",
        error="'bad': run exited with status 1",
        stop_reason="failed",
        runs=[CommandRun(index=0, started_s=0, wall_ns=MS, exit_code=1, ok=False)],
    )


def test_a_command_without_successful_runs_has_no_numbers() -> None:
    s_bad, s_ok = summarize_commands([failed_bench(), bench("ok", [5, 5, 5])])
    assert not s_bad.ok and math.isnan(s_bad.median_s) and s_bad.failed == 1
    assert s_ok.ok and s_ok.reference


def test_spawn_overhead_percentiles() -> None:
    found = spawn_overhead([MS * k for k in range(1, 102)])
    assert found is not None and found.runs == 101
    assert (found.p5_s, found.p50_s, found.p95_s) == pytest.approx((0.006, 0.051, 0.096))
    assert spawn_overhead([]) is None


def test_tree_rss_figures_are_each_taken_over_the_runs_that_recorded_them() -> None:
    """A file may hold a tree peak without its growth (found by the property test on mutated
    files: a TypeError inside `perflab show`)."""
    b = bench("A", [10, 11, 12])
    for run, peak in zip(b.runs, (30_000_000, 32_000_000, None)):
        run.tree_rss_peak_bytes = peak
    b.runs[0].tree_rss_growth_bytes = 1_000
    (s,) = summarize_commands([b])
    assert s.tree_rss_peak_bytes == 31_000_000 and s.tree_rss_growth_bytes == 1_000
