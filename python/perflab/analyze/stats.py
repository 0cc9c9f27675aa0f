"""Robust statistics for benchmark samples: centre, spread, outliers, bootstrap CIs.

Methods:
    * centre: the median; spread: MAD scaled by 1.4826 (consistent with σ for
      normal data) and the coefficient of variation;
    * outliers: modified z-score |0.6745 (x − median) / MAD| > 3.5
      (Iglewicz & Hoaglin 1993, "How to Detect and Handle Outliers");
    * intervals: percentile bootstrap (Efron & Tibshirani 1993); with more than
      one process, a hierarchical (two-stage) bootstrap that resamples
      processes, then samples within each chosen process (Davison & Hinkley
      1997, §3.8), because samples inside one process are not independent;
    * ratios of interleaved runs: a paired bootstrap that resamples whole
      interleaving blocks (:func:`block_ratio_ci`);
    * few processes: the percentile bootstrap is too narrow when the units
      resampled are few (it behaves like a z-interval with a (n−1)/n variance);
      :func:`expand` widens an interval by Hesterberg's small-sample factor
      √(n/(n−1))·t(n−1)/z (Hesterberg 2015, "What teachers should know about the
      bootstrap", the expanded percentile interval), on a log scale for positive
      quantities.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAD_SCALE = 1.4826
OUTLIER_Z = 3.5
_CHUNK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class Estimate:
    """A point estimate with a confidence interval.

    Attributes:
        value: the point estimate.
        low / high: bounds of the CI (same unit as ``value``).
        confidence: the CI level, e.g. 0.95.
    """

    value: float
    low: float
    high: float
    confidence: float = 0.95

    @property
    def half_width(self) -> float:
        """(high − low) / 2, in the unit of ``value``."""
        return (self.high - self.low) / 2

    @property
    def relative_half_width(self) -> float:
        """Half-width divided by |value| (inf when value is 0)."""
        return self.half_width / abs(self.value) if self.value else float("inf")


def _array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        raise ValueError("no values: at least one sample is needed")
    return arr


def mad(values: Sequence[float] | np.ndarray) -> float:
    """Median absolute deviation scaled by 1.4826 (σ-consistent). O(n).

    Raises:
        ValueError: on empty input.
    """
    arr = _array(values)
    return float(MAD_SCALE * np.median(np.abs(arr - np.median(arr))))


def cv(values: Sequence[float] | np.ndarray) -> float:
    """Coefficient of variation: sample std / mean (0 for one value). O(n).

    Raises:
        ValueError: on empty input.
    """
    arr = _array(values)
    mean = float(np.mean(arr))
    if arr.size < 2 or mean == 0:
        return 0.0
    return float(np.std(arr, ddof=1) / abs(mean))


def modified_z_scores(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """Modified z-scores 0.6745 (x − median) / MAD (Iglewicz & Hoaglin 1993). O(n).

    When MAD is 0 (more than half the values equal), the mean absolute
    deviation scaled by 1.253314 is used instead, as IBM SPSS and the NIST
    handbook suggest; when that is 0 too, every score is 0.

    Args:
        values: shape (n,).

    Returns:
        Scores, shape (n,).

    Raises:
        ValueError: on empty input.
    """
    arr = _array(values)
    centre = np.median(arr)
    deviation = np.abs(arr - centre)
    raw_mad = np.median(deviation)
    if raw_mad > 0:
        return 0.6745 * (arr - centre) / raw_mad
    mean_ad = np.mean(deviation)
    if mean_ad > 0:
        return (arr - centre) / (1.253314 * mean_ad)
    return np.zeros_like(arr)


def outlier_mask(values: Sequence[float] | np.ndarray, threshold: float = OUTLIER_Z) -> np.ndarray:
    """Boolean mask of outliers: |modified z| > ``threshold`` (3.5, Iglewicz & Hoaglin). O(n).

    Outliers are flagged for the report, never dropped from the statistics.

    Raises:
        ValueError: on empty input.
    """
    return np.abs(modified_z_scores(values)) > threshold


def _padded(groups: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Stack ragged groups into (P, max_n) padded with NaN, plus their lengths."""
    lengths = np.array([len(g) for g in groups])
    table = np.full((len(groups), int(lengths.max())), np.nan)
    for i, g in enumerate(groups):
        table[i, : len(g)] = g
    return table, lengths


def bootstrap_medians(groups: Sequence[Sequence[float] | np.ndarray], resamples: int = 2000,
                      rng: np.random.Generator | None = None) -> np.ndarray:
    """Bootstrap distribution of the pooled median, hierarchical across groups.

    Each replicate draws P groups with replacement, then, within each drawn
    group, as many samples as it has, with replacement, and takes the median
    of everything drawn (two-stage bootstrap; Davison & Hinkley 1997 §3.8).
    With a single group this is the ordinary bootstrap of the median.
    Cost: O(resamples · P · max_n) time, memory bounded by chunking.

    Args:
        groups: P ≥ 1 arrays of values (one per process), each non-empty.
        resamples: number of bootstrap replicates B.
        rng: random generator (seed it for reproducible CIs).

    Returns:
        Replicate medians, shape (B,).

    Raises:
        ValueError: when there are no groups or a group is empty.
    """
    arrays = [np.asarray(g, dtype=float) for g in groups]
    if not arrays or any(a.size == 0 for a in arrays):
        raise ValueError("bootstrap needs at least one group and no empty group")
    rng = rng or np.random.default_rng()
    if len(arrays) == 1:
        return _bootstrap_single(arrays[0], resamples, rng)
    table, lengths = _padded(arrays)
    n_groups, width = table.shape
    chunk = max(1, _CHUNK_ELEMENTS // (n_groups * width))
    out = np.empty(resamples)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        chosen = rng.integers(0, n_groups, size=(b, n_groups))
        n_chosen = lengths[chosen]
        idx = (rng.random((b, n_groups, width)) * n_chosen[..., None]).astype(np.int64)
        drawn = table[chosen[..., None], idx]
        drawn[np.arange(width)[None, None, :] >= n_chosen[..., None]] = np.nan
        out[start:start + b] = np.nanmedian(drawn.reshape(b, -1), axis=1)
    return out


def _bootstrap_single(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Ordinary bootstrap of the median of one array, chunked. O(B·n)."""
    n = values.size
    chunk = max(1, _CHUNK_ELEMENTS // n)
    out = np.empty(resamples)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        out[start:start + b] = np.median(values[rng.integers(0, n, size=(b, n))], axis=1)
    return out


def pooled_median(groups: Sequence[Sequence[float] | np.ndarray]) -> float:
    """Median of all values of all groups together. O(N).

    Raises:
        ValueError: when there is no value at all.
    """
    return float(np.median(_array(np.concatenate([np.asarray(g, float) for g in groups]))))


def percentile_ci(replicates: np.ndarray, point: float, confidence: float = 0.95) -> Estimate:
    """Percentile bootstrap CI around ``point`` from bootstrap ``replicates`` (shape (B,)).

    Non-finite replicates (e.g. a ratio with a zero denominator) are ignored.

    Raises:
        ValueError: when no replicate is finite.
    """
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        raise ValueError("no finite bootstrap replicate")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Estimate(point, float(low), float(high), confidence)


def expansion(units: int, confidence: float = 0.95) -> float:
    """Hesterberg's small-sample factor √(n/(n−1))·t_{n−1}/z for a percentile bootstrap
    interval over ``units`` resampled units (1 when there are fewer than 2 units: one
    unit gives no spread to widen). E.g. 1.58 for 5 units, 1.22 for 10, 1.03 for 60.
    O(1)."""
    if units < 2:
        return 1.0
    from scipy import stats as sps

    tail = 0.5 + confidence / 2
    return float(math.sqrt(units / (units - 1)) * sps.t.ppf(tail, units - 1)
                 / sps.norm.ppf(tail))


def expand(est: Estimate, factor: float) -> Estimate:
    """``est`` with each side of its CI stretched by ``factor`` about the point: on a log
    scale when the value and its CI are positive (times and ratios: a CI never reaches
    below zero), else linearly."""
    v, lo, hi = est.value, est.low, est.high
    if v > 0 and lo > 0 and hi > 0:
        return Estimate(v, v * (lo / v) ** factor, v * (hi / v) ** factor, est.confidence)
    return Estimate(v, v - factor * (v - lo), v + factor * (hi - v), est.confidence)


def median_ci(groups: Sequence[Sequence[float] | np.ndarray], confidence: float = 0.95,
              resamples: int = 2000, rng: np.random.Generator | None = None,
              small_sample: bool = False) -> Estimate:
    """Pooled median with a hierarchical bootstrap CI. See :func:`bootstrap_medians`.

    Args:
        groups: per-process values, e.g. seconds per op; P ≥ 1 non-empty arrays.
        small_sample: widen the CI by :func:`expansion` of P (the processes are the
            units the bootstrap resamples first).

    Returns:
        Estimate in the unit of the values.

    Raises:
        ValueError: on empty input.
    """
    reps = bootstrap_medians(groups, resamples, rng)
    est = percentile_ci(reps, pooled_median(groups), confidence)
    return expand(est, expansion(len(groups), confidence)) if small_sample else est


def ratio_ci(numerator: Sequence[np.ndarray], denominator: Sequence[np.ndarray],
             confidence: float = 0.95, resamples: int = 2000,
             rng: np.random.Generator | None = None) -> Estimate:
    """Ratio of pooled medians numerator/denominator with a bootstrap CI.

    Both sides are resampled independently (hierarchically); the CI is the
    percentile interval of the replicate ratios (criterion and benchstat do
    the same on their location estimates).

    Raises:
        ValueError: on empty input or a zero denominator median.
    """
    rng = rng or np.random.default_rng()
    denominator_median = pooled_median(denominator)
    if denominator_median == 0:
        raise ValueError("ratio against a zero median")
    num = bootstrap_medians(numerator, resamples, rng)
    den = bootstrap_medians(denominator, resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        reps = num / den
    return percentile_ci(reps, pooled_median(numerator) / denominator_median, confidence)


#: fewest blocks both commands ran in for :func:`block_ratio_ci` to pair them
MIN_PAIRED_BLOCKS = 5


def block_ratio_ci(numerator: Sequence[float] | np.ndarray,
                   numerator_blocks: Sequence[int | None],
                   denominator: Sequence[float] | np.ndarray,
                   denominator_blocks: Sequence[int | None], confidence: float = 0.95,
                   resamples: int = 2000, rng: np.random.Generator | None = None) -> Estimate:
    """Ratio of medians numerator/denominator, bootstrapped by interleaving block.

    With interleaved runs each block holds one run of every command, in random
    order, so a slow stretch of the machine hits both runs of a block. The
    replicates draw whole blocks with replacement and keep both commands' runs
    of each drawn block together (a paired bootstrap: Efron & Tibshirani 1993,
    ch. 7; randomised interleaving as in Kalibera & Jones 2013, "Rigorous
    benchmarking in reasonable time"), so drift common to both cancels in the
    ratio instead of widening its CI. The point estimate is the ratio of the
    two full-sample medians. Without at least :data:`MIN_PAIRED_BLOCKS` blocks in
    common (sequential runs have no blocks), both sides are resampled
    independently, as :func:`ratio_ci` does.

    Args:
        numerator, denominator: one value per run (e.g. wall seconds), shapes (n,), (m,).
        numerator_blocks, denominator_blocks: the block of each run, or None; a
            command has at most one run per block.

    Returns:
        Estimate of the ratio (unitless).

    Raises:
        ValueError: on empty input, mismatched lengths, or a zero denominator median.
    """
    num, den = _array(numerator), _array(denominator)
    if len(numerator_blocks) != num.size or len(denominator_blocks) != den.size:
        raise ValueError("one block per value is needed")
    den_median = float(np.median(den))
    if den_median == 0:
        raise ValueError("ratio against a zero median")
    rng = rng or np.random.default_rng()
    where = {b: i for i, b in enumerate(denominator_blocks) if b is not None}
    pairs = [(i, where[b]) for i, b in enumerate(numerator_blocks)
             if b is not None and b in where]
    if len(pairs) < MIN_PAIRED_BLOCKS:
        return ratio_ci([num], [den], confidence, resamples, rng)
    index = np.array(pairs)
    paired_num, paired_den = num[index[:, 0]], den[index[:, 1]]
    n = len(pairs)
    chunk = max(1, _CHUNK_ELEMENTS // n)
    reps = np.empty(resamples)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        drawn = rng.integers(0, n, size=(b, n))
        with np.errstate(divide="ignore", invalid="ignore"):
            reps[start:start + b] = (np.median(paired_num[drawn], axis=1)
                                     / np.median(paired_den[drawn], axis=1))
    return percentile_ci(reps, float(np.median(num)) / den_median, confidence)


def sum_of_medians_ci(parts: Sequence[Sequence[np.ndarray]], confidence: float = 0.95,
                      resamples: int = 2000, rng: np.random.Generator | None = None
                      ) -> tuple[Estimate, np.ndarray]:
    """Sum of several benchmarks' medians (e.g. serialize + deserialize) with a CI.

    Args:
        parts: for each benchmark, its per-process groups.

    Returns:
        (estimate, replicates of shape (B,)) so callers can form ratios of totals.

    Raises:
        ValueError: on empty input.
    """
    rng = rng or np.random.default_rng()
    reps = sum(bootstrap_medians(p, resamples, rng) for p in parts)
    point = sum(pooled_median(p) for p in parts)
    return percentile_ci(np.asarray(reps), point, confidence), np.asarray(reps)
