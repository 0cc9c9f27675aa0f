"""A benchmark's trend: its recorded figures in commit order, with change points.

Ties the store's trend query (:meth:`perflab.history.store.Store.trend`) to the
change-point detector (:mod:`perflab.history.changepoints`) and names each change
by its commit range: the last run before the step and the first after it. Runs the
user leaves out (``--exclude-dirty``, ``--exclude-tag``), isolated outlier runs and
a newest run far from the trend (:mod:`perflab.history.outliers`) stay in the
trend's points but not in the change-point search, each with its reason.
"""

from __future__ import annotations

import fnmatch
import math

from perflab.history.changepoints import detect
from perflab.history.outliers import screen, too_few
from perflab.history.store import Store
from perflab.model.history import Change, LeftOut, NewestRun, Trend


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
    return [(b, m) for b, m in pairs if m in ("time", "p50", "instructions")]


def build(
    store: Store,
    bench: str,
    metric: str,
    fingerprint: str | None = None,
    alpha: float = 0.05,
    exclude_dirty: bool = False,
    exclude_tags: tuple[str, ...] | list[str] = (),
) -> Trend:
    """The trend of one benchmark with its change points.

    Args:
        store: the history.
        bench / metric: what to follow.
        fingerprint: only runs on this fingerprint hash (None: all).
        alpha: family-wise level of the change-point tests.
        exclude_dirty: leave runs made with uncommitted changes out of the search.
        exclude_tags: leave runs with any of these tags out of the search.

    Returns:
        A :class:`Trend`: every point, the change points over the runs kept, and the
        runs left out with their reasons (:mod:`perflab.history.outliers`).
    """
    points = store.trend(bench, metric, fingerprint)
    unit = points[0].row.unit if points else "s"
    left: dict[int, str] = {}
    for i, p in enumerate(points):
        if exclude_dirty and p.run.git_dirty:
            left[i] = "dirty working tree (--exclude-dirty)"
        elif tagged := sorted(set(exclude_tags) & set(p.run.tags)):
            left[i] = f"tagged {', '.join(tagged)} (--exclude-tag)"
    usable = [
        i
        for i, p in enumerate(points)
        if i not in left and not p.row.failed and math.isfinite(p.row.value) and p.row.value > 0
    ]
    screened = screen([points[i].row.value for i in usable])
    for j, ratio in screened.outliers.items():
        left[usable[j]] = f"outlier: {ratio:.3g}× the runs around it"
    newest = screened.newest
    if newest is not None:
        newest = NewestRun(usable[newest.index], newest.ratio, newest.runs_needed)
        left[newest.index] = (
            f"newest run, {newest.ratio:.3g}× the trend before it: not yet confirmed"
        )
    kept = [usable[j] for j in screened.kept]
    changes = [
        Change(c, kept[c.index], points[kept[c.index - 1]], points[kept[c.index]])
        for c in detect([points[i].row.value for i in kept], alpha)
    ]
    moved = [
        i
        for i in range(1, len(points))
        if points[i].run.fingerprint != points[i - 1].run.fingerprint
    ]
    return Trend(
        bench,
        metric,
        unit,
        points,
        changes,
        moved,
        [LeftOut(i, r) for i, r in sorted(left.items())],
        newest,
        too_few(len(kept)),
    )


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
    newest = trend.newest
    if newest is not None:
        newest = NewestRun(newest.index - first, newest.ratio, newest.runs_needed)
    return Trend(
        trend.bench,
        trend.metric,
        trend.unit,
        trend.points[first:],
        changes,
        [i - first for i in trend.fingerprint_changes if i > first],
        [LeftOut(x.index - first, x.reason) for x in trend.left_out if x.index >= first],
        newest,
        trend.note,
    )
