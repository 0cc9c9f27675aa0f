"""The machine-speed reference (perflab.analyze.reference) on fake timings (no real timing).

Each fake process meets the machine at its own speed factor, which slows its samples and
its reference timings alike, as a shared host's load does; a run has a factor of its own
on top (the part no CI of one run can see from its benchmarks).
"""

from __future__ import annotations

import math

import numpy as np

from perflab.analyze import reference
from perflab.analyze.run.summary import summarize
from tests.conftest import make_bench

OP_S, REFERENCE_NS = 10e-3, 200_000


def fake_run(
    seed: int, run_factor: float = 1.0, processes: int = 12, machine_sd: float = 0.2
) -> tuple[list[list[float]], list[list[int]]]:
    """(per-process seconds per op, per-process reference timings in ns)."""
    rng = np.random.default_rng(seed)
    samples, refs = [], []
    for _ in range(processes):
        speed = run_factor * math.exp(rng.normal(0, machine_sd))
        samples.append(list(OP_S * speed * np.exp(rng.normal(0, 0.01, 8))))
        refs.append([int(REFERENCE_NS * speed * math.exp(e)) for e in rng.normal(0, 0.01, 4)])
    return samples, refs


def bench_with_reference(samples: list[list[float]], refs: list[list[int]]):
    bench = make_bench("f", samples, iterations=1)
    for proc, r in zip(bench.processes, refs):
        proc.reference_ns = r
    return bench


def test_dividing_out_the_machine_speed_narrows_the_ci_around_the_true_quotient() -> None:
    samples, refs = fake_run(1)
    s = summarize(bench_with_reference(samples, refs))
    true = OP_S / (REFERENCE_NS * 1e-9)  # 50 reference loops per op
    est = s.cpu_vs_reference
    value, low, high = est.value, est.ci_low, est.ci_high
    assert low <= true <= high
    assert (high - low) / 2 / value < 0.02  # the machine's 20% swings are gone
    assert (
        s.median.relative_half_width > 3 * (high - low) / 2 / value
    )  # while the seconds keep them
    assert math.isclose(s.reference_s, REFERENCE_NS * 1e-9, rel_tol=0.2)
    assert 0.05 < s.reference_spread < 0.4  # ≈ the 20% the fake machine swings by


def test_waiting_for_a_core_is_left_out_by_the_cpu_time() -> None:
    """A busy machine preempts long samples (their wall time includes other programs'
    turns on the core) but rarely the short reference: CPU time ÷ reference stays put."""
    rng = np.random.default_rng(9)
    quiet = summarize(bench_with_reference(*fake_run(10)))
    busy_bench = bench_with_reference(*fake_run(11))
    for proc in busy_bench.processes:
        share = rng.uniform(0.4, 0.7)  # of a core, as measured at load 8 on 2 cores
        for sample in proc.samples:
            sample.wall_ns = int(sample.wall_ns / share)
    busy = summarize(busy_bench)
    assert busy.median_s > 1.3 * quiet.ci_high_s  # the seconds disagree
    assert (
        quiet.cpu_vs_reference.ci_low
        <= busy.cpu_vs_reference.value
        <= quiet.cpu_vs_reference.ci_high
    )


def test_a_repeat_run_on_a_slower_machine_agrees_once_normalized() -> None:
    first = summarize(bench_with_reference(*fake_run(2)))
    slower = summarize(bench_with_reference(*fake_run(3, run_factor=1.3)))
    assert not first.ci_low_s <= slower.median_s <= first.ci_high_s  # seconds disagree
    assert (
        first.cpu_vs_reference.ci_low
        <= slower.cpu_vs_reference.value
        <= first.cpu_vs_reference.ci_high
    )


def test_processes_without_reference_timings_are_left_out() -> None:
    samples, refs = fake_run(4, processes=5)
    refs[0] = refs[3] = []
    pairs = [(np.asarray(s), r) for s, r in zip(samples, refs)]
    location = reference.normalized_location(pairs)
    expected = reference.normalized_location([p for i, p in enumerate(pairs) if i not in (0, 3)])
    assert location == expected and location.df == 2


def test_no_reference_timings_leave_the_figures_empty() -> None:
    samples, _ = fake_run(5)
    s = summarize(make_bench("f", samples, iterations=1))  # a file written before the reference
    assert s.cpu_vs_reference is None and math.isnan(s.reference_s)
    assert math.isnan(s.reference_spread)
    assert reference.normalized_location([(np.asarray(samples[0]), [REFERENCE_NS])]) is None


def test_one_process_gives_a_reference_time_but_no_normalized_ci() -> None:
    samples, refs = fake_run(6, processes=1)
    s = summarize(bench_with_reference(samples, refs))
    assert math.isclose(s.reference_s, np.median(refs[0]) * 1e-9)
    assert s.cpu_vs_reference is None


def test_the_run_table_footnote_names_the_reference_and_the_normalized_medians() -> None:
    from perflab.report.run_table import _reference_footnote

    with_ref = summarize(bench_with_reference(*fake_run(7)))
    without = summarize(make_bench("old", fake_run(8)[0], iterations=1))
    (line,) = _reference_footnote([with_ref, without])
    assert line.startswith("machine-speed reference (a fixed Python loop timed between samples)")
    assert "f 5" in line and "old" not in line  # f ≈ 50 reference loops per op
    assert _reference_footnote([without]) == []


def test_code_that_waits_gets_no_normalized_figure_but_keeps_the_reference() -> None:
    """A 0.5 s sleep's CPU time (the call's own overhead) is not its cost per op: it read
    "0.294 (0.15–0.578)" reference loops. Code preempted on a busy machine (CPU/wall
    0.4–0.7 in every sample) keeps its figure."""
    samples, refs = fake_run(12)
    sleeping = bench_with_reference(samples, refs)
    for proc in sleeping.processes:
        for sample in proc.samples:
            sample.cpu_ns = sample.wall_ns // 2000  # 0.05% of a core
    s = summarize(sleeping)
    assert s.cpu_vs_reference is None
    assert math.isclose(s.reference_s, REFERENCE_NS * 1e-9, rel_tol=0.2)
    busy = bench_with_reference(*fake_run(13))
    for i, proc in enumerate(busy.processes):
        for sample in proc.samples:
            sample.wall_ns = int(sample.wall_ns / (0.4 + 0.3 * i / len(busy.processes)))
    assert summarize(busy).cpu_vs_reference is not None
