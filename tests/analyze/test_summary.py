"""Summaries from synthetic raw data: ratios, warnings, staged totals."""

from __future__ import annotations

import pytest

from perflab.analyze.run.groups import staged_rows
from perflab.analyze.run.ratios import summarize_group
from perflab.analyze.run.summary import summarize
from perflab.model import Sample
from tests.conftest import lognormal_groups, make_bench


def test_group_ratios_against_best_and_baseline() -> None:
    fast = make_bench("fast", lognormal_groups(1e-6, 6, 30, seed=1))
    slow = make_bench("slow", lognormal_groups(2e-6, 6, 30, seed=2), baseline=True)
    s_fast, s_slow = summarize_group([fast, slow], seed=0)
    assert s_fast.ratio_best.value == pytest.approx(1.0)
    assert s_slow.ratio_best.ci_low < 2.0 < s_slow.ratio_best.ci_high
    assert s_fast.ratio_baseline.ci_low < 0.5 < s_fast.ratio_baseline.ci_high


def test_quiet_data_has_no_warnings() -> None:
    s = summarize(make_bench("q", lognormal_groups(1e-6, 6, 30, sigma=0.005)))
    assert s.warnings == [] and s.processes == 6 and s.samples == 180


def test_unstable_data_is_called_unstable() -> None:
    s = summarize(make_bench("u", lognormal_groups(1e-6, 6, 30, sigma=0.3)))
    assert [c.kind for c in s.warnings] == ["unstable"]


def test_preempted_samples_of_cpu_bound_code_warn_of_a_busy_machine() -> None:
    bench = make_bench("b", lognormal_groups(1e-6, 4, 20, sigma=0.001))
    for proc in bench.processes:
        for s in proc.samples[:5]:  # a quarter of the samples lost half their time
            s.cpu_ns = s.wall_ns // 2
    summary = summarize(bench)
    assert summary.preempted == 20
    assert [(c.kind, c.figure) for c in summary.warnings] == [("busy machine", "25%")]


def test_a_machine_busy_most_of_the_time_still_warns() -> None:
    """When most samples are preempted (85% here, as on a loaded 2-core machine), the
    median CPU/wall is 0.5: the warning must not fall silent just when it matters most."""
    bench = make_bench("b", lognormal_groups(1e-6, 4, 20, sigma=0.001))
    for proc in bench.processes:
        for s in proc.samples[:17]:
            s.cpu_ns = s.wall_ns // 2
    summary = summarize(bench)
    assert summary.preempted == 68
    assert [(c.kind, c.figure) for c in summary.warnings] == [("busy machine", "85%")]


def test_waiting_code_is_not_mistaken_for_a_busy_machine() -> None:
    bench = make_bench("sleepy", lognormal_groups(1e-3, 4, 20, sigma=0.001))
    for proc in bench.processes:
        for s in proc.samples:
            s.cpu_ns = s.wall_ns // 10  # sleeps: low CPU/wall by nature
    assert summarize(bench).preempted == 0


def test_flagged_samples_are_excluded_and_counted() -> None:
    bench = make_bench("f", lognormal_groups(1e-6, 3, 10, sigma=0.001))
    bench.processes[0].samples.append(
        Sample(100, 10**9, 10**9, flagged="clock", clock_skew_ns=5 * 10**8)
    )
    s = summarize(bench)
    assert s.flagged == 1 and s.samples == 30 and s.median_s < 2e-6
    (caveat,) = s.warnings
    assert caveat.text == "1 sample excluded: the clocks disagreed during them", "grammar"


def test_staged_rows_total_the_stages() -> None:
    benches = [
        make_bench("a", [[1e-3] * 5] * 3, stage="ser"),
        make_bench("a", [[2e-3] * 5] * 3, stage="de"),
        make_bench("b", [[3e-3] * 5] * 3, stage="ser"),
        make_bench("b", [[3e-3] * 5] * 3, stage="de"),
    ]
    summaries = summarize_group(benches, seed=0)
    stages, rows = staged_rows(benches, summaries, seed=0)
    assert stages == ["ser", "de"]
    assert rows[0].total.value == pytest.approx(3e-3) and rows[1].total.value == pytest.approx(6e-3)
    assert rows[1].ratio_best.value == pytest.approx(2.0)


def test_precision_not_reached_says_how_much_the_processes_differ() -> None:
    """issue 11: the demo must say once why it did not reach the asked precision."""
    bench = make_bench("b", lognormal_groups(1e-3, 12, 8, sigma=0.01, between=0.2, seed=3))
    bench.stop_reason = "budget"
    s = summarize(bench, precision=0.02)
    (caveat,) = [c for c in s.warnings if c.kind == "precision not reached"]
    assert 0.1 < s.process_spread < 0.4  # 12 draws of a 0.2 SD
    assert f"processes ±{s.process_spread:.1%}" in caveat.figure
    assert "the processes' medians differ by" in caveat.text
    assert s.median.se == pytest.approx(s.median_s * s.process_spread / 12**0.5)
