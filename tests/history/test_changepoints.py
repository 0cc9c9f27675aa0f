"""Change points on synthetic histories with known steps, and none on flat ones."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perflab.history import changepoints, trend
from perflab.history.store import Store
from tests.history.helpers import add, results


def history(
    n: int,
    seed: int,
    steps: dict[int, float] = {},  # noqa: B006 (read only)
    sigma: float = 0.03,
    heavy: bool = False,
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = sigma * (rng.standard_t(3, n) if heavy else rng.normal(0, 1, n))
    for at, ratio in steps.items():
        noise[at:] += np.log(ratio)
    return 1e-3 * np.exp(noise)


@pytest.mark.parametrize("n", [10, 30, 100])
@pytest.mark.parametrize("heavy", [False, True])
def test_flat_histories_give_no_change_point_in_at_least_95_percent(n: int, heavy: bool) -> None:
    false = sum(bool(changepoints.detect(history(n, seed, heavy=heavy))) for seed in range(200))
    assert false <= 10, f"{false}/200 flat histories reported a change"


@pytest.mark.parametrize("ratio", [1.15, 0.85])
def test_a_known_step_is_found_where_it_is_with_its_size(ratio: float) -> None:
    found = 0
    for seed in range(50):
        changes = changepoints.detect(history(40, seed, {25: ratio}))
        if len(changes) == 1 and abs(changes[0].index - 25) <= 1:
            found += 1
            assert changes[0].ratio == pytest.approx(ratio, rel=0.05)
    assert found >= 45


def test_two_steps_are_both_found() -> None:
    changes = changepoints.detect(history(60, 3, {20: 1.3, 40: 0.7}, sigma=0.02))
    assert [c.index for c in changes] == [20, 40]
    assert changes[0].before == pytest.approx(1e-3, rel=0.05)
    assert changes[0].after == pytest.approx(1.3e-3, rel=0.05)


def test_short_constant_and_bad_histories() -> None:
    assert changepoints.detect([1.0] * 5) == []
    assert changepoints.detect([1.0] * 20) == []
    assert [c.index for c in changepoints.detect([1.0] * 10 + [2.0] * 10)] == [10]
    with pytest.raises(ValueError):
        changepoints.detect([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])


def test_a_trend_names_the_commit_range_of_its_change(tmp_path: Path) -> None:
    values = history(12, 7, {6: 1.25}, sigma=0.01)
    with Store(tmp_path / "h.sqlite") as store:
        for i, value in enumerate(values):
            add(
                store,
                results({"a": float(value)}, seed=i),
                commit=f"{i:x}" * 40,
                time=f"2026-01-{i + 1:02d}T00:00:00+00:00",
            )
        got = trend.build(store, "g/a", "time")
    assert len(got.points) == 12 and got.fingerprint_changes == []
    assert [c.index for c in got.changes] == [6]
    assert got.changes[0].commit_range == "55555555..66666666"
    assert got.changes[0].point.ratio == pytest.approx(1.25, rel=0.05)


def test_pelt_finds_the_segmentation_ruptures_finds() -> None:
    """perflab's PELT (Rust) against the reference implementation, ruptures' PELT with
    the l2 cost, on seeded histories with 0–3 steps of random size, several lengths.
    (60 histories of up to 150 runs: ruptures' pure-Python PELT took 50 s for 150 of up
    to 250 on the loaded CI machine; the Rust tests check 600 more against exhaustive
    optimal partitioning.)"""
    import ruptures

    from perflab import _core

    rng = np.random.default_rng(11)
    for trial in range(60):
        n = int(rng.integers(6, 150))
        x = (rng.standard_t(3, n) if trial % 3 == 0 else rng.normal(0, 1, n)) * 0.03
        for _ in range(int(rng.integers(0, 4))):
            x[int(rng.integers(0, n)) :] += rng.normal(0, 0.1)
        penalty = changepoints.PENALTY_FACTOR * changepoints.robust_sigma(x) ** 2 * np.log(n)
        expected = (
            ruptures.Pelt(model="l2", min_size=changepoints.MIN_SEGMENT, jump=1)
            .fit(x.reshape(-1, 1))
            .predict(pen=penalty)
        )
        assert _core.pelt(x.tolist(), penalty, changepoints.MIN_SEGMENT) == expected


def test_a_long_flat_history_is_one_segment() -> None:
    """10,000 flat runs: nothing pruned (the worst case of PELT), no change found."""
    assert changepoints.detect(history(10_000, 5)) == []


def test_welch_p_and_the_t_distribution_equal_scipys() -> None:
    from scipy import stats

    rng = np.random.default_rng(2)
    for _ in range(300):
        a = rng.normal(0, 1, int(rng.integers(2, 60)))
        b = rng.normal(rng.normal(0, 1), rng.uniform(0.1, 3), int(rng.integers(2, 60)))
        expected = stats.ttest_ind(a, b, equal_var=False).pvalue
        assert changepoints.welch_p(a, b) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    for t in (0.0, 0.3, 2.0, 8.0, 60.0, -2.5):
        for dof in (1.0, 2.5, 7.0, 1e4):
            assert changepoints.student_t_sf(t, dof) == pytest.approx(
                stats.t.sf(t, dof), rel=1e-10, abs=1e-300
            )
    assert changepoints.welch_p(np.ones(3), np.ones(4)) == 1.0
    assert changepoints.welch_p(np.ones(3), np.full(4, 2.0)) == 0.0
    with pytest.raises(ValueError):
        changepoints.student_t_sf(1.0, 0.0)
