"""Change points over a benchmark's history: where did its median step up or down?

Method: PELT (Killick, Fearnhead & Eckley 2012, "Optimal detection of
changepoints with a linear computational cost", JASA 107) from the ``ruptures``
package (Truong, Oudre & Vayatis 2020; its ``KernelCPD`` with the linear kernel,
which is the least-squares cost "l2" in compiled code), on
the *log* medians, so a step is a ratio whatever the benchmark's scale. The
penalty is a BIC-like ``PENALTY_FACTOR · σ² · ln n``, σ estimated robustly from
successive differences (1.4826·median|Δ|/√2, which a few real steps barely
move). Each change found is then kept only when the two segments beside it
differ by at least :data:`MIN_STEP` (smaller ones are within machine noise for
any reader) and by a Welch t-test at ``alpha`` Bonferroni-corrected over the
changes found (Welch 1947). The factor was set so that on flat histories of
10–200 runs with Gaussian or heavy-tailed noise at least 95% report no change
(tests/history/test_changepoints.py checks it, benchmarks/history.py measures it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Penalty factor of PELT (see the module doc).
PENALTY_FACTOR = 5.0
#: Smallest relative step reported (fraction).
MIN_STEP = 0.01
#: Fewest points on each side of a change.
MIN_SEGMENT = 3
#: Fewest points in a history for detection to run at all.
MIN_POINTS = 2 * MIN_SEGMENT


@dataclass(frozen=True)
class ChangePoint:
    """A step in a benchmark's history.

    Attributes:
        index: position of the first point after the step (0-based, in the history's order).
        before / after: the medians of the segments on each side (the values' unit).
        ratio: after / before (a ratio of geometric means of the segments).
        p_value: Welch's two-sided p for the two segments' log values (uncorrected).
    """

    index: int
    before: float
    after: float
    ratio: float
    p_value: float


def robust_sigma(x: np.ndarray) -> float:
    """σ of white noise around a piecewise-constant level, from successive differences.

    Args:
        x: values, shape (n,), n ≥ 2.

    Returns:
        1.4826·median|Δx|/√2 (0 when all differences are zero).
    """
    diffs = np.abs(np.diff(x))
    return float(1.4826 * np.median(diffs) / math.sqrt(2)) if diffs.size else 0.0


def detect(values: Sequence[float], alpha: float = 0.05) -> list[ChangePoint]:
    """Change points of a history of positive values (e.g. medians in seconds).

    Args:
        values: the history, oldest first, shape (n,); non-positive or non-finite
            values are not allowed (pass only the runs that measured something).
        alpha: family-wise significance level of the Welch tests.

    Returns:
        The changes, in order; empty when n < :data:`MIN_POINTS` or the history is flat.

    Raises:
        ValueError: a value that is not a finite positive number.
    """
    import ruptures

    x = np.asarray(values, dtype=float)
    if x.size and (not np.all(np.isfinite(x)) or np.any(x <= 0)):
        raise ValueError("change points need finite positive values")
    if x.size < MIN_POINTS:
        return []
    logs = np.log(x)
    sigma = robust_sigma(logs)
    if sigma == 0:
        sigma = max(float(np.std(logs)), 1e-12)
    penalty = PENALTY_FACTOR * sigma ** 2 * math.log(x.size)
    # KernelCPD with the linear kernel is PELT on the l2 cost in ruptures' C code
    # (about 500x faster than ruptures.Pelt(model="l2") at n = 2,000)
    ends = ruptures.KernelCPD(kernel="linear", min_size=MIN_SEGMENT).fit(
        logs.reshape(-1, 1)).predict(pen=penalty)
    bounds = [0, *(int(e) for e in ends)]
    found = []
    for k in range(1, len(bounds) - 1):
        left, right = logs[bounds[k - 1]:bounds[k]], logs[bounds[k]:bounds[k + 1]]
        found.append((bounds[k], left, right))
    out = []
    for index, left, right in found:
        ratio = math.exp(float(right.mean() - left.mean()))
        p = _welch_p(left, right)
        if abs(ratio - 1) >= MIN_STEP and p < alpha / max(1, len(found)):
            out.append(ChangePoint(index, float(np.exp(np.median(left))),
                                   float(np.exp(np.median(right))), ratio, p))
    return out


def _welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Welch t-test p of two samples (1.0 when both are constant and equal)."""
    from scipy import stats

    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return 0.0 if a[0] != b[0] else 1.0
    return float(stats.ttest_ind(a, b, equal_var=False).pvalue)
