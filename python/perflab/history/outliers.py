"""Single runs that must not move a benchmark's trend: isolated outliers and the newest run.

One run made on a busy machine (or with a half-edited working tree) can be 2× or 100×
off the runs around it. Left in, it inflates both segments' variance so much that a
real +50% step fails its Welch test, and the history says "no change point". A step
is something the following runs confirm; one run alone is not. So, before the change
points are searched (:mod:`perflab.history.changepoints`):

* **Isolated outliers.** A run whose log value lies more than :data:`OUTLIER_Z`
  robust σ (1.4826·median|Δ|/√2 of the log values, as the detector's penalty uses)
  and more than :data:`OUTLIER_MIN` away from the median of up to :data:`WINDOW`
  runs on *each* side of it, while the runs before and after it agree with each
  other (their medians differ by less than half its own distance), is an isolated
  outlier: left out of the search and shown as such. Its neighbours agreeing is
  what tells an outlier from the first run of a step. With two or fewer runs on a
  side, the side's median is what there is.
* **The newest run** has no runs after it, so it cannot be told from the start of
  a step. When it lies as far from the current level (the median of the last
  :data:`WINDOW` runs before it) as an outlier would, it is left out of the search
  and reported on its own: "the last run is 3.1× the trend: a regression or an
  outlier; K more runs will tell", K the runs a step needs after it to be found
  (MIN_SEGMENT − 1). asv flags single-commit regressions in the same way.

The thresholds: a robust z of 4 puts a false alarm on flat Gaussian noise near
6·10⁻⁵ per run; benchmarks/history_robust.py measures detection rate and false
change points on seeded histories with one outlier run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perflab.history.changepoints import MIN_POINTS, MIN_SEGMENT, robust_sigma
from perflab.model.history import NewestRun

#: Robust z beyond which a single run is an outlier.
OUTLIER_Z = 4.0
#: ... and it must also be at least this far from its neighbours (a ratio − 1).
OUTLIER_MIN = 0.10
#: Runs on each side that set the local level.
WINDOW = 3


def _sigma(logs: np.ndarray) -> float:
    """Robust σ of the logs; 0 when every successive difference is 0."""
    return robust_sigma(logs) if logs.size >= 2 else 0.0


def _far(dist: float, sigma: float) -> bool:
    """Whether a log distance is beyond both the robust-z and the relative threshold."""
    return abs(dist) > OUTLIER_Z * sigma and abs(dist) > math.log1p(OUTLIER_MIN)


def isolated_outliers(values: np.ndarray) -> dict[int, float]:
    """Interior runs that are isolated outliers (see the module doc). O(n).

    Args:
        values: Positive values, oldest first, shape (n,).

    Returns:
        Index → value ÷ the median of its neighbours, for each outlier; empty with
        fewer than 3 values. The first and the last values are never outliers
        here (the last is :func:`newest_run`'s).
    """
    x = np.log(np.asarray(values, dtype=float))
    sigma = _sigma(x)
    out: dict[int, float] = {}
    for i in range(1, x.size - 1):
        before = x[max(0, i - WINDOW) : i]
        after = x[i + 1 : i + 1 + WINDOW]
        level = float(np.median(np.concatenate([before, after])))
        dist = float(x[i] - level)
        agree = abs(float(np.median(before)) - float(np.median(after))) < abs(dist) / 2
        if agree and _far(dist, sigma):
            out[i] = math.exp(dist)
    return out


def newest_run(
    values: np.ndarray, left_out: set[int] | frozenset[int] = frozenset()
) -> NewestRun | None:
    """The newest run, when it is far from the level of the runs before it; else None.

    Args:
        values: Positive values, oldest first, shape (n,).
        left_out: Indexes already left out (outliers), not counted in the level.

    Returns:
        A NewestRun, or None with fewer than 2 earlier runs kept or when the
        newest run is within the thresholds (robust z and :data:`OUTLIER_MIN`).
    """
    x = np.log(np.asarray(values, dtype=float))
    kept = [i for i in range(x.size - 1) if i not in left_out]
    if len(kept) < 2:
        return None
    earlier = x[kept]
    level = float(np.median(earlier[-WINDOW:]))
    dist = float(x[-1] - level)
    if not _far(dist, _sigma(earlier)):
        return None
    return NewestRun(x.size - 1, math.exp(dist), MIN_SEGMENT - 1)


def too_few(kept: int) -> str:
    """Plain words when ``kept`` runs are too few for change-point detection, else ""."""
    if kept >= MIN_POINTS:
        return ""
    return (
        f"{kept} run{'s' if kept != 1 else ''} in the search: change points need at least "
        f"{MIN_POINTS} ({MIN_SEGMENT} on each side of a step); record "
        f"{MIN_POINTS - kept} more to detect one"
    )


@dataclass(frozen=True)
class Screen:
    """Which runs of a history the change-point search uses.

    Attributes:
        kept: Indexes searched, ascending.
        outliers: Index → value ÷ its neighbours' median, for isolated outliers.
        newest: The newest run when far from the trend (its index among the values).
    """

    kept: list[int]
    outliers: dict[int, float]
    newest: NewestRun | None


def screen(values: list[float] | np.ndarray) -> Screen:
    """Leave isolated outliers and a far newest run out of the change-point search. O(n).

    Args:
        values: Positive values, oldest first, shape (n,) (runs the user left out
            already removed).

    Returns:
        A Screen over the indexes of ``values``.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Screen([], {}, None)
    out = isolated_outliers(x)
    newest = newest_run(x, set(out))
    kept = [i for i in range(x.size) if i not in out and (newest is None or i != newest.index)]
    return Screen(kept, out, newest)
