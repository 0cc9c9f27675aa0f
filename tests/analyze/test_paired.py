"""The paired ratio on synthetic machines that switch between speed states (no clock)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.analyze import paired
from perflab.analyze.decisions import FAILED, INCONCLUSIVE, SAME, SLOWER
from tests.speed_states import SpeedStates

WORK_S = 100e-6  # one sample's work at full speed: 100 µs


def _balanced(pairs: int, rng: np.random.Generator) -> list[bool]:
    return [
        bool(x) for block in range(pairs // 2) for x in ((1, 0) if rng.random() < 0.5 else (0, 1))
    ]


def _paired_processes(
    seed: int, ratio: float, slow_share: float, processes: int = 10, layout_sd: float = 0.003
):
    """P processes of 200 pairs each on one timeline, with per-process layout effects."""
    rng = np.random.default_rng(seed)
    machine = SpeedStates(rng, slow_share, horizon_s=processes * 0.2)
    out, t = [], 0.0
    for _ in range(processes):
        layout = rng.lognormal(0, layout_sd)  # a process's own layout effect on B/A
        a, b, t = machine.paired(t, WORK_S, WORK_S * ratio * layout, _balanced(200, rng))
        out.append((a, b))
    return out


def _alone(seed: int, slow_share: float, work_s: float, processes: int = 10):
    rng = np.random.default_rng(seed)
    machine = SpeedStates(rng, slow_share, horizon_s=processes * 0.1)
    out, t = [], 0.0
    for _ in range(processes):
        walls, t = machine.alone(t, work_s, 400)
        out.append(walls)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_paired_ratio_is_tight_and_right_where_states_switch(seed: int) -> None:
    result = paired.paired_ratio(_paired_processes(seed, 1.03, slow_share=0.4))
    assert result is not None and not result.batched and result.units == 10
    assert result.pairs == 2000
    assert result.ratio.value == pytest.approx(1.03, rel=0.01)
    assert result.ratio.contains(1.03)
    assert result.ratio.relative_half_width < 0.01
    assert paired.paired_verdict(result, 0.02) == SLOWER


@pytest.mark.parametrize("seed", range(5))
def test_unpaired_ratio_of_runs_minutes_apart_is_wrong(seed: int) -> None:
    # the same 3% slowdown, A and B measured in separate runs: 5% and 75% of the time slow
    a = _alone(seed, 0.05, WORK_S)
    b = _alone(seed + 100, 0.75, WORK_S * 1.03)
    unpaired = paired.unpaired_ratio(a, b)
    assert unpaired is not None and not unpaired.contains(1.03)
    assert abs(unpaired.value / 1.03 - 1) > 0.1  # off by more than 10%
    # paired on a machine as bad as either run: right
    result = paired.paired_ratio(_paired_processes(seed, 1.03, slow_share=0.75))
    assert result is not None and result.ratio.contains(1.03)


def test_identical_code_is_the_same_not_slower_or_faster() -> None:
    verdicts = [
        paired.paired_verdict(paired.paired_ratio(_paired_processes(s, 1.0, 0.5)), 0.02)
        for s in range(20)
    ]
    assert verdicts == [SAME] * 20


def test_a_single_series_is_cut_into_batches() -> None:
    (a, b), *_ = _paired_processes(7, 1.05, 0.3, processes=1, layout_sd=0)
    result = paired.paired_ratio([(a, b)])
    assert result is not None and result.batched and result.units == paired.BATCHES
    assert result.ratio.contains(1.05) and result.ratio.value == pytest.approx(1.05, rel=0.01)


def test_batches_sizes() -> None:
    assert paired.batches(np.zeros(1)) == []
    assert [len(x) for x in paired.batches(np.zeros(5))] == [1] * 5  # too few for 3 a batch
    assert [len(x) for x in paired.batches(np.zeros(7))] == [4, 3]
    assert [len(x) for x in paired.batches(np.zeros(100))] == [13] * 4 + [12] * 4


def test_a_switch_inside_a_pair_does_not_move_the_median() -> None:
    a = np.full(41, 100.0)
    b = np.full(41, 103.0)
    b[::5] *= 2  # a fifth of the pairs split by a switch: B ran slow, A fast
    a[1::7] *= 2
    result = paired.paired_ratio([(a[:20], b[:20]), (a[20:], b[20:])])
    assert result is not None and result.ratio.value == pytest.approx(1.03, rel=1e-9)


def test_equal_units_give_a_point_interval() -> None:
    result = paired.paired_ratio([([1.0, 2.0], [1.0, 2.0]), ([3.0, 3.0], [3.0, 3.0])])
    assert result is not None
    assert (result.ratio.value, result.ratio.ci_low, result.ratio.ci_high) == (1.0, 1.0, 1.0)
    assert result.spread == 0.0


def test_degenerate_input() -> None:
    assert paired.paired_ratio([]) is None
    assert paired.paired_ratio([([1.0], [1.0])]) is None
    assert paired.paired_ratio([([0.0, -1.0, math.nan], [1.0, 1.0, 1.0])]) is None
    assert paired.paired_verdict(None, 0.02) == FAILED
    with pytest.raises(ValueError, match="as many"):
        paired.paired_ratio([([1.0, 2.0], [1.0])])


def test_wide_interval_is_inconclusive_and_to_dict_is_json() -> None:
    rng = np.random.default_rng(3)
    pairs = [(np.ones(10), rng.lognormal(0, 0.2, 10)) for _ in range(3)]
    result = paired.paired_ratio(pairs)
    assert result is not None and paired.paired_verdict(result, 0.02) == INCONCLUSIVE
    form = result.to_dict()
    assert form["pairs"] == 30 and form["units"] == 3 and len(form["ratio"]) == 3


def _ratio(value: float, half: float) -> paired.PairedRatio:
    """A paired ratio of ``value`` with a CI of relative half-width ``half``."""
    from perflab.model.estimate import Estimate

    ci = Estimate(value, value * (1 - half), value * (1 + half), 0.95, value * half / 2)
    return paired.PairedRatio(ci, 1000, 10, False)


@pytest.mark.parametrize(
    ("value", "half", "settled"),
    [
        (1.031, 0.005, True),  # wholly beyond +2%: slower, settled
        (0.960, 0.008, True),  # wholly beyond −2%: faster
        (1.000, 0.009, True),  # wholly within ±2%: same
        (1.028, 0.009, False),  # precise enough, but straddles 1.02: inconclusive, go on
        (1.031, 0.015, False),  # beyond +2% but wider than the 1% precision asked
        (1.020, 0.002, True),  # on the threshold's edge, ±0.2%: no budget would resolve it
    ],
)
def test_a_pair_settles_on_its_verdict_not_on_its_precision(
    value: float, half: float, settled: bool
) -> None:
    assert paired.settles(_ratio(value, half), 0.02, 0.01) is settled


def test_an_automatic_threshold_settles_on_the_precision_alone() -> None:
    assert paired.settles(_ratio(1.028, 0.009), math.nan, 0.01)
    assert not paired.settles(_ratio(1.028, 0.011), math.nan, 0.01)
    assert not paired.settles(None, 0.02, 0.01)


def test_a_stray_process_is_outvoted_by_more_processes() -> None:
    # a 3% slowdown; one process in which B ran as fast as A (its layout, say): with
    # the 10 processes a pair starts with, its CI reaches the 1% precision but straddles
    # 1.02 (the old stopping rule stopped there: inconclusive); with more processes the
    # stray one's weight falls and the CI clears the threshold
    procs = _paired_processes(11, 1.03, slow_share=0.4, processes=30, layout_sd=0.001)
    a0, b0 = procs[0]
    procs[0] = (a0, b0 / 1.03)
    first = paired.paired_ratio(procs[:10])
    assert first is not None and first.ratio.relative_half_width <= 0.01
    assert paired.paired_verdict(first, 0.02) == INCONCLUSIVE
    assert not paired.settles(first, 0.02, 0.01)
    stops = [p for p in range(10, 31) if paired.settles(paired.paired_ratio(procs[:p]), 0.02, 0.01)]
    assert stops, "never settled"
    final = paired.paired_ratio(procs[: stops[0]])
    assert paired.paired_verdict(final, 0.02) == SLOWER and final.ratio.contains(1.03)


def test_lockstep_pairs_that_swapped_cpus_cancel_a_slow_cpu() -> None:
    # lock-step: A and B on two CPUs at once, swapping CPUs every pair; in each process
    # one CPU is slower than the other by its own amount (another program on it), up to
    # 30%: the two slots' medians average it away; the plain median of the pairs, which
    # mix +c and −c, falls anywhere between them
    rng = np.random.default_rng(4)
    true = np.log(1.05)
    with_slots, plain = [], []
    for _ in range(12):
        c = rng.uniform(-0.3, 0.3)  # log of how much slower CPU 0 is than CPU 1
        slots = np.arange(301) % 2
        logs = true + np.where(slots == 0, c, -c) + rng.normal(0, 0.03, slots.size)
        a = np.full(slots.size, 100e-6)
        b = a * np.exp(logs)
        with_slots.append((a, b, slots))
        plain.append((a, b))
    swapped = paired.paired_ratio(with_slots)
    assert swapped is not None and swapped.ratio.contains(1.05)
    assert swapped.ratio.relative_half_width < 0.01
    assert paired.paired_verdict(swapped, 0.02) == SLOWER
    mixed = paired.paired_ratio(plain)
    assert mixed is not None and mixed.ratio.relative_half_width > 5 * (
        swapped.ratio.relative_half_width
    )


def test_slots_in_a_single_series_and_unit_log_ratio() -> None:
    logs = np.log(np.array([1.1, 1 / 1.1, 1.1, 1 / 1.1, 1.1, 1 / 1.1])) + np.log(1.02)
    assert paired.unit_log_ratio(logs, np.arange(6) % 2) == pytest.approx(np.log(1.02))
    assert paired.unit_log_ratio(logs[:1], np.zeros(1, int)) == pytest.approx(np.log(1.1 * 1.02))
    slots = np.arange(60) % 2
    a = np.full(60, 1.0)
    b = np.where(slots == 0, 1.5, 1 / 1.5) * 1.02  # CPU 0 50% slower, B 2% slower
    single = paired.paired_ratio([(a, b, slots)])
    assert single is not None and single.batched
    assert single.ratio.value == pytest.approx(1.02)
