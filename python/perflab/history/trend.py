"""A benchmark's trend: its recorded figures in commit order, with change points.

Ties the store's trend query (:meth:`perflab.history.store.Store.trend`) to the
change-point detector (:mod:`perflab.history.changepoints`) and names each change
by its commit range: the last run before the step and the first after it.
"""

from __future__ import annotations

import fnmatch
import math

from perflab.history.changepoints import detect
from perflab.history.store import Store
from perflab.model.history import Change, Trend


def pattern_glob(pattern: str) -> str:
    """A user's pattern as a shell glob: a plain word matches anywhere (``*word*``)."""
    return pattern if any(ch in pattern for ch in "*?[") else f"*{pattern}*"


def matching(store: Store, pattern: str, metric: str | None = None) -> list[tuple[str, str]]:
    """(benchmark, metric) pairs recorded whose id matches ``pattern`` (shell-style, case
    sensitive; a plain word matches anywhere), sorted; HTTP steps by their "p50" row
    unless ``metric`` says otherwise."""
    glob = pattern_glob(pattern)
    pairs = [(b, m) for b, m, _ in store.benchmarks(glob) if fnmatch.fnmatchcase(b, glob)]
    if metric:
        return [(b, m) for b, m in pairs if m == metric]
    return [(b, m) for b, m in pairs if m in ("time", "p50")]


def build(
    store: Store, bench: str, metric: str, fingerprint: str | None = None, alpha: float = 0.05
) -> Trend:
    """The trend of one benchmark with its change points.

    Args:
        store: the history.
        bench / metric: what to follow.
        fingerprint: only runs on this fingerprint hash (None: all).
        alpha: family-wise level of the change-point tests.

    Returns:
        A :class:`Trend`.
    """
    points = store.trend(bench, metric, fingerprint)
    unit = points[0].row.unit if points else "s"
    usable = [
        i
        for i, p in enumerate(points)
        if not p.row.failed and math.isfinite(p.row.value) and p.row.value > 0
    ]
    changes = [
        Change(c, usable[c.index], points[usable[c.index - 1]], points[usable[c.index]])
        for c in detect([points[i].row.value for i in usable], alpha)
    ]
    moved = [
        i
        for i in range(1, len(points))
        if points[i].run.fingerprint != points[i - 1].run.fingerprint
    ]
    return Trend(bench, metric, unit, points, changes, moved)


def window(trend: Trend, last: int | None) -> Trend:
    """The last ``last`` points of a trend (all when None or 0), with the change points and
    fingerprint changes inside them re-indexed; the detection itself stays the one over
    the whole history."""
    if not last or len(trend.points) <= last:
        return trend
    first = len(trend.points) - last
    changes = [
        Change(c.point, c.index - first, c.last_before, c.first_after)
        for c in trend.changes
        if c.index >= first
    ]
    return Trend(
        trend.bench,
        trend.metric,
        trend.unit,
        trend.points[first:],
        changes,
        [i - first for i in trend.fingerprint_changes if i > first],
    )
