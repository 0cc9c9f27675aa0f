"""Change points over a benchmark's history: where did its median step up or down?

Method: PELT (Killick, Fearnhead & Eckley 2012, "Optimal detection of
changepoints with a linear computational cost", JASA 107) with the least-squares
cost (the Gaussian change-in-mean cost, "l2" in ``ruptures``), on the *log*
medians, so a step is a ratio whatever the benchmark's scale. PELT runs in
perflab's Rust core (``_core.pelt``, rust/engine/src/changepoints.rs): change-point
decisions are perflab's own, importing ``ruptures`` (which loads scipy) took longer
than the trend query's whole budget of 1 s, and a history without change prunes
nothing, so 10,000 runs cost 5·10⁷ segment costs, too many for a Python loop;
tests/history/test_changepoints.py checks that it finds the same change points
as ``ruptures.Pelt(model="l2")``. The penalty is a BIC-like
``PENALTY_FACTOR · σ² · ln n``, σ estimated robustly from successive differences
(1.4826·median|Δ|/√2, which a few real steps barely move). Each change found is
then kept only when the two segments beside it differ by at least
:data:`MIN_STEP` (smaller ones are within machine noise for any reader) and by a
Welch t-test at ``alpha`` Bonferroni-corrected over the changes found (Welch
1947; the p from Student's t through the regularized incomplete beta function,
:func:`student_t_sf`, for the same reason). The factor was set so that on flat
histories of 10–200 runs with Gaussian or heavy-tailed noise at least 95% report
no change (tests/history/test_changepoints.py checks it, benchmarks/history.py
measures it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perflab import _core
from perflab.model.history import ChangePoint

#: Penalty factor of PELT (see the module doc).
PENALTY_FACTOR = 5.0
#: Smallest relative step reported (fraction).
MIN_STEP = 0.01
#: Fewest points on each side of a change.
MIN_SEGMENT = 3
#: Fewest points in a history for detection to run at all.
MIN_POINTS = 2 * MIN_SEGMENT


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
    x = np.asarray(values, dtype=float)
    if x.size and (not np.all(np.isfinite(x)) or np.any(x <= 0)):
        raise ValueError("change points need finite positive values")
    if x.size < MIN_POINTS:
        return []
    logs = np.log(x)
    sigma = robust_sigma(logs)
    if sigma == 0:
        sigma = max(float(np.std(logs)), 1e-12)
    penalty = PENALTY_FACTOR * sigma**2 * math.log(x.size)
    ends = _core.pelt(logs.tolist(), penalty, MIN_SEGMENT)
    bounds = [0, *(int(e) for e in ends)]
    found = []
    for k in range(1, len(bounds) - 1):
        left, right = logs[bounds[k - 1] : bounds[k]], logs[bounds[k] : bounds[k + 1]]
        found.append((bounds[k], left, right))
    out = []
    for index, left, right in found:
        ratio = math.exp(float(right.mean() - left.mean()))
        p = welch_p(left, right)
        if abs(ratio - 1) >= MIN_STEP and p < alpha / max(1, len(found)):
            out.append(
                ChangePoint(
                    index, float(np.exp(np.median(left))), float(np.exp(np.median(right))), ratio, p
                )
            )
    return out


def student_t_sf(t: float, dof: float) -> float:
    """P(T > t) for Student's t with ``dof`` (> 0, real) degrees of freedom.

    Through the regularized incomplete beta function: P(|T| > |t|) = I_x(ν/2, 1/2)
    with x = ν/(ν + t²) (Abramowitz & Stegun 26.7.1), evaluated by its continued
    fraction with the modified Lentz method (Press et al., Numerical Recipes, 3rd ed.,
    §6.4); relative error below 1e-12 (checked against scipy in the tests).

    Raises:
        ValueError: dof ≤ 0 or not finite.
    """
    if not (math.isfinite(dof) and dof > 0):
        raise ValueError("degrees of freedom must be a finite positive number")
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    two_sided = _betainc(dof / 2, 0.5, dof / (dof + t * t))
    return two_sided / 2 if t > 0 else 1 - two_sided / 2


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), 0 ≤ x ≤ 1."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1) / (a + b + 2):  # the fraction converges fast here
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1 - math.exp(log_front) * _beta_fraction(b, a, 1 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def welch_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p of Welch's t-test of two samples (Welch 1947; the
    Welch–Satterthwaite degrees of freedom), as ``scipy.stats.ttest_ind(a, b,
    equal_var=False)``; 0 or 1 when both samples are constant (unequal or equal).

    Args:
        a / b: samples, each of at least 2 values.
    """
    va, vb = float(np.var(a, ddof=1)), float(np.var(b, ddof=1))
    if va == 0 and vb == 0:
        return 0.0 if a[0] != b[0] else 1.0
    qa, qb = va / a.size, vb / b.size
    t = (float(np.mean(a)) - float(np.mean(b))) / math.sqrt(qa + qb)
    dof = (qa + qb) ** 2 / (qa * qa / (a.size - 1) + qb * qb / (b.size - 1))
    return min(1.0, 2 * student_t_sf(abs(t), dof))
