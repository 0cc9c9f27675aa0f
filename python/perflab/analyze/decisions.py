"""The decisions of a comparison: verdicts against a noise threshold, and the tests behind them.

Methods:
    * verdict against the noise threshold t: faster/slower when the whole CI of the
      ratio B/A lies outside [1−t, 1+t], same when inside, inconclusive otherwise
      (the equivalence-margin logic of TOST, Schuirmann 1987);
    * small numbers of units make percentile intervals too narrow, so log-ratio
      replicates are widened by the "expanded percentile" factor
      sqrt(n/(n−1))·t(n−1)/z (Hesterberg 2015, "What teachers should know about the
      bootstrap");
    * p-value: two-sided Mann–Whitney U (Mann & Whitney 1947);
    * several benchmarks: Benjamini & Hochberg (1995) q-values; the geometric mean of
      the ratios with a CI from the per-benchmark bootstrap replicates.

:mod:`perflab.analyze.compare.suite` applies them to two results files.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perflab.analyze import stats
from perflab.model.comparison import FAILED as FAILED
from perflab.model.comparison import FASTER as FASTER
from perflab.model.comparison import INCONCLUSIVE as INCONCLUSIVE
from perflab.model.comparison import SAME as SAME
from perflab.model.comparison import SLOWER as SLOWER
from perflab.model.comparison import VERDICTS as VERDICTS
from perflab.model.estimate import Estimate


def verdict(low: float, high: float, threshold: float, higher_is_better: bool = False) -> str:
    """The verdict of a CI [low, high] of B/A against the noise threshold t.

    Outside [1−t, 1+t] entirely: slower (or faster when higher is better) above,
    faster below; inside entirely: same; otherwise inconclusive.

    Args:
        low / high: CI bounds of the ratio B/A (dimensionless).
        threshold: t, e.g. 0.02 for ±2%.
        higher_is_better: True for rates.

    Returns:
        One of "faster", "slower", "same", "inconclusive".
    """
    if not (math.isfinite(low) and math.isfinite(high)):
        return INCONCLUSIVE
    if low > 1 + threshold:
        return FASTER if higher_is_better else SLOWER
    if high < 1 - threshold:
        return SLOWER if higher_is_better else FASTER
    if low >= 1 - threshold and high <= 1 + threshold:
        return SAME
    return INCONCLUSIVE


def parse_threshold(text: str) -> float:
    """The noise threshold t of :func:`verdict` from ``--threshold`` text (every command
    that decides verdicts reads it here): "2%" or "0.02" → 0.02.

    Raises:
        UsageError: not a number, or outside [0, 1).
    """
    from perflab.units import parse_fraction

    return parse_fraction(text, "--threshold", "2%", "0.02", allow_zero=True)


def expansion_factor(n: int, confidence: float = 0.95) -> float:
    """Hesterberg's (2015) expansion of a percentile bootstrap CI for n units. O(1).

    sqrt(n/(n−1)) · t_{n−1} / z corrects both the bootstrap's variance bias
    and its normal-like tails for small n (1.58 for n=5, 1.10 for n=20).

    Returns:
        The factor (≥ 1), inf when n < 2 (no interval can be formed).
    """
    from scipy import special  # t.ppf, norm.ppf; scipy.stats alone costs ~1 s to import

    if n < 2:
        return math.inf
    tail = 1 - (1 - confidence) / 2
    return math.sqrt(n / (n - 1)) * float(special.stdtrit(n - 1, tail) / special.ndtri(tail))


def expanded_ratio_ci(
    point: float, replicates: np.ndarray, n: int, confidence: float = 0.95
) -> tuple[Estimate, np.ndarray | None]:
    """Percentile CI of a ratio from bootstrap replicates, widened for n units.

    The log-replicates are spread around log(point) by :func:`expansion_factor`,
    which widens the interval and keeps its asymmetry.

    Args:
        point: the ratio's point estimate (> 0).
        replicates: bootstrap ratios, shape (B,); non-finite ones are ignored.
        n: independent units behind the smaller side.

    Returns:
        (Estimate, expanded log-replicates of shape (B,) with NaN where not
        finite) or (Estimate(point, 0, inf), None) when n < 2.
    """
    factor = expansion_factor(n, confidence)
    if not math.isfinite(factor):
        return Estimate(point, 0.0, math.inf, confidence), None
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(replicates > 0, replicates, np.nan))
    logs = math.log(point) + factor * (logs - math.log(point))
    est = stats.percentile_ci(np.exp(logs), point, confidence)
    return est, logs


def mann_whitney_p(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray) -> float:
    """Two-sided Mann–Whitney U p-value of B against A (Mann & Whitney 1947).

    Exact for small samples without ties, asymptotic otherwise (scipy's choice).
    O((n+m) log(n+m)).

    Returns:
        The p-value, NaN when a side is empty or every value is tied.
    """
    from scipy import stats as sps

    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size == 0 or b.size == 0 or np.ptp(np.concatenate([a, b])) == 0:
        return math.nan
    return float(sps.mannwhitneyu(b, a, alternative="two-sided").pvalue)


def benjamini_hochberg(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini–Hochberg (1995) adjusted p-values (q-values); NaN stays NaN. O(m log m).

    Args:
        p_values: shape (m,).

    Returns:
        q-values, shape (m,).
    """
    from scipy import stats as sps

    p = np.asarray(p_values, float)
    q = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    if finite.any():
        q[finite] = sps.false_discovery_control(p[finite], method="bh")
    return q


def geometric_mean_ci(
    log_replicates: Sequence[np.ndarray], points: Sequence[float], confidence: float = 0.95
) -> Estimate:
    """Geometric mean of ratios with a bootstrap CI. O(k·B).

    Benchmarks are resampled independently, so replicate i of the geometric
    mean is exp(mean over benchmarks of log-replicate i).

    Args:
        log_replicates: k arrays of shape (B,), log(B/A) replicates (NaN allowed).
        points: the k ratios.

    Raises:
        ValueError: on empty input.
    """
    if not points:
        raise ValueError("no ratio to average")
    point = float(np.exp(np.mean(np.log(points))))
    stacked = np.vstack(log_replicates)
    with np.errstate(invalid="ignore"):
        reps = np.exp(np.nanmean(stacked, axis=0))
    return stats.percentile_ci(reps, point, confidence)
