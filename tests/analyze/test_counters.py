"""Per-sample counters through a seam: injected readings, the preemption rule and the
counts per op (no kernel, no timing)."""

from __future__ import annotations

from perflab.analyze.run.counters import (
    MIN_CLEAN_SAMPLES,
    PREEMPTED_FLAG,
    counter_figures,
    flag_preempted,
    is_preempted,
)
from perflab.model import Benchmark, Process, Sample

SOFT = {"task_clock_ns": 2_000_000, "page_faults": 0, "voluntary_switches": 0}


def sample(involuntary: int | None, wall_ns: int = 2_000_000, **extra: int) -> Sample:
    counters = None if involuntary is None else {**SOFT, "involuntary_switches": involuntary}
    if counters is not None:
        counters.update(extra)
    return Sample(iterations=10, wall_ns=wall_ns, cpu_ns=wall_ns, counters=counters)


def test_a_sample_is_preempted_only_by_an_involuntary_switch() -> None:
    assert is_preempted(sample(1)) is True
    assert is_preempted(sample(0)) is False
    assert is_preempted(sample(0, voluntary_switches=5)) is False  # blocking is its own doing
    assert is_preempted(sample(None)) is None  # an older file: unknown, not "clean"


def test_preempted_samples_are_flagged_when_enough_clean_ones_remain() -> None:
    proc = Process(0, 1, 0.0, samples=[sample(0) for _ in range(3)])
    proc.samples += [sample(2, wall_ns=20_000_000), sample(1, wall_ns=9_000_000)]
    assert flag_preempted(proc) == 2
    assert [s.flagged for s in proc.samples] == [None, None, None, PREEMPTED_FLAG, PREEMPTED_FLAG]
    assert flag_preempted(proc) == 0  # idempotent


def test_a_process_with_too_few_clean_samples_keeps_them_all() -> None:
    proc = Process(0, 1, 0.0, samples=[sample(0)] * (MIN_CLEAN_SAMPLES - 1) + [sample(1)] * 5)
    assert flag_preempted(proc) == 0
    assert not any(s.flagged for s in proc.samples)


def test_clock_flags_are_kept_and_not_counted_as_clean() -> None:
    proc = Process(0, 1, 0.0, samples=[sample(0) for _ in range(3)] + [sample(1)])
    proc.samples[0].flagged = "clock:tsc"
    assert flag_preempted(proc) == 0  # only 2 clean samples left
    assert proc.samples[0].flagged == "clock:tsc"


def test_figures_count_preempted_samples_and_leave_hardware_absent() -> None:
    proc = Process(0, 1, 0.0, samples=[sample(0) for _ in range(4)] + [sample(3)])
    proc.hardware_note = "hardware events unavailable: not supported"
    flag_preempted(proc)
    figures = counter_figures(Benchmark("b", "b", processes=[proc]))
    assert figures is not None
    assert (figures.preempted, figures.preempted_excluded) == (1, 1)
    assert figures.instructions_per_op is None and figures.ipc is None
    assert figures.hardware_note == "hardware events unavailable: not supported"


def test_figures_give_instructions_per_op_and_ipc_from_hardware_counts() -> None:
    samples = [sample(0, instructions=5_000 * k, cycles=2_500 * k) for k in (1, 2, 3)]
    samples.append(sample(1, instructions=10**9, cycles=1))  # preempted: excluded
    proc = Process(0, 1, 0.0, samples=samples)
    flag_preempted(proc)
    figures = counter_figures(Benchmark("b", "b", processes=[proc], ops_per_call=5))
    assert figures is not None
    assert figures.instructions_per_op == 5_000 * 2 / 10 / 5  # median sample, per op
    assert figures.ipc == 2.0


def test_no_figures_without_counters() -> None:
    proc = Process(0, 1, 0.0, samples=[sample(None) for _ in range(3)])
    assert counter_figures(Benchmark("b", "b", processes=[proc])) is None
