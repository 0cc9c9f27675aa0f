"""One bad run must not erase a real change (issue 28 §2): outliers, the newest run, exclusions."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from perflab.history import changepoints, outliers, trend
from perflab.history.store import Store
from perflab.report.history_table import trend_records, trend_table
from tests.history.helpers import add, results

#: Eight runs over eight commits, +53.5% from the fifth: the detector finds it alone.
EIGHT = [1.00e-3, 1.03e-3, 0.98e-3, 1.01e-3, 1.535e-3, 1.56e-3, 1.51e-3, 1.55e-3]


def _store(
    tmp_path: Path,
    values: list[float],
    dirty: frozenset[int] = frozenset(),
    tags: dict[int, list[str]] | None = None,
) -> Store:
    store = Store(tmp_path / "h.sqlite")
    for i, value in enumerate(values):
        run = add(
            store,
            results({"a": float(value)}, seed=i),
            commit=f"{i + 1:x}" * 40,
            time=f"2026-01-{i + 1:02d}T00:00:00+00:00",
            tags=(tags or {}).get(i),
        )
        if i in dirty:
            store.db.execute("UPDATE runs SET git_dirty = 1 WHERE id = ?", (run,))
    return store


def test_repro_one_dirty_busy_run_after_a_real_step(tmp_path: Path) -> None:
    """Before: the ninth run (dirty tree, busy machine, 6× slower) made it "no change point"."""
    values = [*EIGHT, 6e-3]
    assert changepoints.detect(values) == []  # the detector alone, as before
    with _store(tmp_path, values, dirty={8}) as store:
        got = trend.build(store, "g/a", "time")
        excluded = trend.build(store, "g/a", "time", exclude_dirty=True)
    for t in (got, excluded):
        assert [c.index for c in t.changes] == [4]
        assert t.changes[0].commit_range == "44444444..55555555"
        assert t.changes[0].point.ratio == pytest.approx(1.535, rel=0.03)
    assert got.newest is not None and got.newest.index == 8
    assert got.newest.ratio == pytest.approx(6 / 1.55, rel=0.05)
    assert [x.index for x in got.left_out] == [8]
    assert [x.reason for x in excluded.left_out] == ["dirty working tree (--exclude-dirty)"]
    table = trend_table(got)
    assert table.rows[8][-1] == "left out: newest run"
    assert any(
        "the last run is 3.87× the trend before it (slower): a regression or an outlier; "
        "2 more runs" in f
        for f in table.footnotes
    )
    assert trend_records([got])[8]["left_out"].startswith("newest run")


def test_an_isolated_outlier_inside_the_history_is_left_out(tmp_path: Path) -> None:
    values = [*EIGHT[:6], 6e-3, *EIGHT[6:], 1.54e-3]
    with _store(tmp_path, values) as store:
        got = trend.build(store, "g/a", "time")
    assert [c.index for c in got.changes] == [4]
    assert [(x.index, x.reason[:8]) for x in got.left_out] == [(6, "outlier:")]
    table = trend_table(got)
    assert table.rows[6][-1] == "left out: outlier"
    assert any(f.startswith("run #7 left out: outlier: ") for f in table.footnotes)
    assert got.newest is None and got.note == ""


def test_a_tagged_run_is_left_out(tmp_path: Path) -> None:
    values = [*EIGHT, 0.5e-3, 1.52e-3]
    with _store(tmp_path, values, tags={8: ["busy"]}) as store:
        got = trend.build(store, "g/a", "time", exclude_tags=("busy",))
    assert [c.index for c in got.changes] == [4]
    assert got.left_out[0].index == 8 and "tagged busy" in got.left_out[0].reason


def test_repro_a_huge_jump_on_the_last_commit_is_named(tmp_path: Path) -> None:
    """Before: +17,380% on the last of five runs read "no change point", silently."""
    values = [1.00e-3, 1.02e-3, 0.99e-3, 1.01e-3, 174.8e-3]
    with _store(tmp_path, values) as store:
        got = trend.build(store, "g/a", "time")
    assert got.changes == [] and got.newest is not None
    assert got.newest.ratio == pytest.approx(174.8 / 1.01, rel=0.01)
    assert "4 runs in the search: change points need at least 6" in got.note
    text = "\n".join(trend_table(got).footnotes)
    assert "the last run is 173× the trend before it (slower)" in text
    assert "no change point can be found yet: 4 runs in the search" in text


def test_too_few_runs_say_so(tmp_path: Path) -> None:
    with _store(tmp_path, [1e-3, 1.01e-3, 0.99e-3]) as store:
        got = trend.build(store, "g/a", "time")
    assert got.note.startswith("3 runs in the search") and got.newest is None


def test_the_newest_run_within_noise_stays_in() -> None:
    assert outliers.newest_run(np.array([1.0, 1.02, 0.99, 1.01, 1.03])) is None
    assert outliers.isolated_outliers(np.array([1.0, 1.02, 0.99, 1.01, 1.03])) == {}
    # a step of two runs is not an isolated outlier
    assert outliers.isolated_outliers(np.array([1.0, 1.01, 0.99, 2.0, 2.02, 1.98])) == {}


@pytest.mark.parametrize("heavy", [False, True])
def test_flat_histories_with_one_outlier_give_no_change_point(heavy: bool) -> None:
    """Seeded: 200 flat histories of 10–60 runs, one run 1.5–10× off: ≤ 5% report a change."""
    rng = np.random.default_rng(5 + heavy)
    false = 0
    for _ in range(200):
        n = int(rng.integers(10, 61))
        x = 0.03 * (rng.standard_t(3, n) if heavy else rng.normal(0, 1, n))
        x[int(rng.integers(n))] += np.log(rng.uniform(1.5, 10)) * rng.choice([-1, 1])
        values = 1e-3 * np.exp(x)
        out = outliers.isolated_outliers(values)
        new = outliers.newest_run(values, set(out))
        kept = [v for i, v in enumerate(values) if i not in out and (new is None or i != new.index)]
        false += bool(changepoints.detect(kept))
    assert false <= 10
