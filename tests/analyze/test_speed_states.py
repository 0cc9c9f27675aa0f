"""Speed states from synthetic series with injected state switches of known share and
length: the estimates recover them (perflab.analyze.speed_states). Deterministic: fixed
seeds, no clock."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perflab.analyze import speed_states as ss

FAST_NS = 50_000.0


def switching(
    n: int,
    slow_runs: float,
    fast_runs: float,
    factor: float,
    seed: int,
    noise: float = 0.01,
    spikes: float = 0.005,
) -> tuple[np.ndarray, np.ndarray]:
    """A back-to-back series switching between a fast and a slow state (factor × slower);
    run lengths 2 + geometric, with the given means (in timings: the probe resolves
    states of two timings or more); log-normal noise; a share
    ``spikes`` of single timings lengthened by an interrupt.

    Returns:
        (wall_ns, shape (n,); the injected slow mask).
    """
    rng = np.random.default_rng(seed)
    slow = np.zeros(n, dtype=bool)
    i, state = 0, bool(rng.integers(2))
    while i < n:
        length = 1 + int(rng.geometric(1 / ((slow_runs if state else fast_runs) - 1)))
        slow[i : i + length] = state
        i, state = i + length, not state
    wall = FAST_NS * np.where(slow, factor, 1.0) * np.exp(rng.normal(0, noise, n))
    hit = rng.random(n) < spikes
    wall[hit] *= 1 + rng.exponential(0.5, hit.sum()) + 0.3
    return wall, slow


def truth(wall: np.ndarray, slow: np.ndarray) -> tuple[float, float]:
    """(injected slow share of time, injected mean state length in ms)."""
    starts = np.concatenate([[0], np.nonzero(slow[1:] != slow[:-1])[0] + 1])
    return float(wall[slow].sum() / wall.sum()), float(wall.sum() / starts.size) * 1e-6


@pytest.mark.parametrize(
    ("slow_runs", "fast_runs", "factor", "seed"),
    [(15, 35, 2.0, 1), (40, 10, 2.0, 2), (8, 60, 1.15, 3), (60, 60, 1.3, 4)],
)
def test_injected_states_are_recovered(
    slow_runs: float, fast_runs: float, factor: float, seed: int
) -> None:
    wall, slow = switching(20_000, slow_runs, fast_runs, factor, seed)
    share, length_ms = truth(wall, slow)
    fig = ss.series_figures(wall)
    assert fig.states == 2
    assert fig.slow_share == pytest.approx(share, abs=0.02)
    assert fig.mean_state_ms == pytest.approx(length_ms, rel=0.12)
    assert fig.slow_ns / fig.fast_ns == pytest.approx(factor, rel=0.03)
    assert fig.fast_ns < fig.threshold_ns < fig.slow_ns
    assert fig.lag1_autocorrelation > 0.7
    assert fig.adjacent_spread < 0.5 * fig.single_spread


def test_per_state_lengths_follow_the_injected_runs() -> None:
    wall, slow = switching(30_000, 10, 40, 2.0, 5)
    fig = ss.series_figures(wall)
    assert fig.mean_slow_ms == pytest.approx(10 * 2 * FAST_NS * 1e-6, rel=0.15)
    assert fig.mean_fast_ms == pytest.approx(40 * FAST_NS * 1e-6, rel=0.15)
    assert fig.switches == pytest.approx(np.count_nonzero(slow[1:] != slow[:-1]), rel=0.1)


@pytest.mark.parametrize("kind", ["normal", "tail", "student"])
def test_one_state_is_one_state(kind: str) -> None:
    rng = np.random.default_rng(7)
    logs = {
        "normal": rng.normal(0, 0.03, 20_000),
        "tail": rng.normal(0, 0.01, 20_000) + rng.exponential(0.01, 20_000),
        "student": rng.standard_t(3, 20_000) * 0.01,
    }[kind]
    fig = ss.series_figures(FAST_NS * np.exp(logs))
    assert fig.states == 1
    assert fig.slow_share == 0.0
    assert fig.threshold_ns is None and fig.slow_ns is None
    assert fig.switches == 0
    assert fig.adjacent_spread == pytest.approx(math.sqrt(2) * fig.single_spread, rel=0.15)


def test_lone_interrupted_timings_are_not_states() -> None:
    wall = np.full(5_000, FAST_NS) * np.exp(np.random.default_rng(8).normal(0, 0.01, 5_000))
    wall[100:5_000:50] *= 2.0  # one timing in 50 doubled: interrupts, never two in a row
    fig = ss.series_figures(wall)
    assert fig.slow_share == 0.0 and fig.switches == 0


def test_preempted_timings_are_dropped() -> None:
    wall, _ = switching(5_000, 15, 35, 2.0, 9)
    cpu = wall.copy()
    cpu[::10] *= 0.5  # waited for a core half the time
    fig = ss.series_figures(wall, cpu)
    assert fig.dropped == 500 and fig.timings == 4_500


def test_too_few_timings_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least 50"):
        ss.series_figures(np.full(20, FAST_NS))


def test_the_figures_are_deterministic() -> None:
    wall, _ = switching(10_000, 15, 35, 2.0, 10)
    assert ss.series_figures(wall) == ss.series_figures(wall.copy())


def test_otsu_splits_two_clusters_between_them() -> None:
    values = np.array([1.0, 1.1, 0.9, 1.05, 5.0, 5.2, 4.9])
    assert 1.1 < ss.otsu_threshold(values) < 4.9
    with pytest.raises(ValueError):
        ss.otsu_threshold(np.ones(5))


def test_simultaneous_pairs_by_the_midpoint() -> None:
    start_a, wall_a = np.array([0, 100, 200, 900]), np.array([100, 100, 100, 100])
    start_b, wall_b = np.array([10, 140, 400]), np.array([120, 50, 100])
    ia, ib = ss.simultaneous(start_a, wall_a, start_b, wall_b)
    # A0 mid 50 in B0 [10,130); A1 mid 150 in B1 [140,190); A2 mid 250 in none; A3 none
    assert ia.tolist() == [0, 1] and ib.tolist() == [0, 1]


def _timed(wall: np.ndarray, offset: float = 0.0) -> ss.Series:
    start = np.concatenate([[0.0], np.cumsum(wall)[:-1]]) + offset
    return ss.Series(start, wall, wall.copy())


def test_two_cpus_sharing_the_state_agree_beyond_chance() -> None:
    wall, slow = switching(10_000, 20, 30, 2.0, 11, spikes=0)
    other = (
        FAST_NS
        * np.where(slow, 2.0, 1.0)
        * np.exp(np.random.default_rng(12).normal(0, 0.01, slow.size))
    )
    pair = ss.pair_figures(_timed(wall), _timed(other), [0, 1])
    assert pair.pairs > 9_000
    assert pair.same_state_share > 0.95
    assert pair.chance_same_share == pytest.approx(0.5, abs=0.1)
    assert pair.kappa > 0.9
    assert pair.side_by_side_spread < 0.5 * pair.each[0].single_spread


def test_two_cpus_with_independent_states_agree_by_chance() -> None:
    a, _ = switching(10_000, 20, 30, 2.0, 13)
    b, _ = switching(10_000, 20, 30, 2.0, 14)
    pair = ss.pair_figures(_timed(a), _timed(b, offset=FAST_NS / 3), [2, 3])
    assert pair.same_state_share == pytest.approx(pair.chance_same_share, abs=0.05)
    assert abs(pair.kappa) < 0.1
    fig = ss.series_figures(a)
    assert "no more than chance" in ss.advice(fig, pair)
    assert pair.cpus == [2, 3]


def test_the_advice_says_pair_when_adjacent_timings_agree() -> None:
    wall, slow = switching(20_000, 15, 35, 2.0, 15, spikes=0)
    fig = ss.series_figures(wall)
    words = ss.advice(fig, None)
    assert words.startswith("two speed states (2.00× apart")
    assert f"single timings spread {fig.single_spread:.0%}, adjacent pairs" in words
    assert "compare paired (perflab run groups, --compare-to REF), not across runs" in words
    other = FAST_NS * np.where(slow, 2.0, 1.0)
    pair = ss.pair_figures(
        _timed(wall),
        _timed(other * np.exp(np.random.default_rng(1).normal(0, 0.01, other.size))),
        [0, 1],
    )
    assert "side-by-side (lock-step) pairs spread" in ss.advice(fig, pair)


def test_the_advice_of_one_quiet_state() -> None:
    fig = ss.series_figures(FAST_NS * np.exp(np.random.default_rng(16).normal(0, 0.005, 5_000)))
    words = ss.advice(fig, None)
    assert words.startswith("one speed state; single timings spread 0.5%")
    assert "separate runs compare within their CIs" in words
