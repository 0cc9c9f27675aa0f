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
    * the median of a run of several processes: a one-way random-effects
      (two-level) model on the log scale, log m_i = μ + b_i + e_i, where m_i is
      process i's median, b_i its layout/process effect (variance σ_b²) and e_i
      the error of its median (variance σ_w²/n). The mean of the P log medians
      has variance σ_b²/P + σ_w²/(nP), and the sample variance of the log medians
      divided by P estimates exactly that, with P − 1 degrees of freedom; the CI
      is the t-interval exp(±t_{P−1}·s/√P) around the geometric mean of the
      process medians
      (:func:`process_location`; Searle, Casella & McCulloch 1992, "Variance
      Components", §3.5 on the balanced one-way model; Kalibera & Jones 2013,
      "Rigorous benchmarking in reasonable time", §3, who build a benchmark's
      CI from the per-execution means the same way). It describes where a
      repeat run's median lands, which a bootstrap over a handful of processes
      does not; ratios and sums combine such locations with the delta method and
      Welch–Satterthwaite degrees of freedom (:class:`LogLocation`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perflab.model.estimate import Estimate

MAD_SCALE = 1.4826
OUTLIER_Z = 3.5
_CHUNK_ELEMENTS = 4_000_000


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


def bootstrap_medians(
    groups: Sequence[Sequence[float] | np.ndarray],
    resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> np.ndarray:
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
        out[start : start + b] = np.nanmedian(drawn.reshape(b, -1), axis=1)
    return out


def _bootstrap_single(values: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Ordinary bootstrap of the median of one array, chunked. O(B·n)."""
    n = values.size
    chunk = max(1, _CHUNK_ELEMENTS // n)
    out = np.empty(resamples)
    for start in range(0, resamples, chunk):
        b = min(chunk, resamples - start)
        out[start : start + b] = np.median(values[rng.integers(0, n, size=(b, n))], axis=1)
    return out


def pooled_median(groups: Sequence[Sequence[float] | np.ndarray]) -> float:
    """Median of all values of all groups together. O(N).

    Raises:
        ValueError: when there is no value at all.
    """
    return float(np.median(_array(np.concatenate([np.asarray(g, float) for g in groups]))))


def z_quantile(confidence: float = 0.95) -> float:
    """The standard normal quantile of a two-sided ``confidence`` interval (1.96 for 0.95)."""
    from scipy import special  # norm.ppf is ndtri; scipy.stats alone costs ~1 s to import

    return float(special.ndtri(0.5 + confidence / 2))


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


def median_ci(
    groups: Sequence[Sequence[float] | np.ndarray],
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> Estimate:
    """Pooled median with a hierarchical bootstrap CI. See :func:`bootstrap_medians`.

    Args:
        groups: per-process values, e.g. seconds per op; P ≥ 1 non-empty arrays.

    Returns:
        Estimate in the unit of the values.

    Raises:
        ValueError: on empty input.
    """
    reps = bootstrap_medians(groups, resamples, rng)
    return percentile_ci(reps, pooled_median(groups), confidence)


@dataclass(frozen=True)
class LogLocation:
    """A positive location (a median time, a ratio, a sum of medians) with the standard
    error of its logarithm and that error's degrees of freedom.

    Attributes:
        value: the point estimate (> 0), in the unit of the data.
        se_log: standard error of log(value) (unitless, ≥ 0).
        df: degrees of freedom of ``se_log`` (> 0; P − 1 for P processes).
    """

    value: float
    se_log: float
    df: float

    def ci(self, confidence: float = 0.95) -> Estimate:
        """The t-interval value·exp(±t_df·se_log): positive and, on a log scale, symmetric;
        its ``se`` is value·se_log, the standard error of the value by the delta method."""
        from scipy import special  # t.ppf is stdtrit; scipy.stats alone costs ~1 s to import

        t = float(special.stdtrit(self.df, 0.5 + confidence / 2))
        spread = math.exp(t * self.se_log)
        return Estimate(
            self.value,
            self.value / spread,
            self.value * spread,
            confidence,
            self.value * self.se_log,
        )

    def __truediv__(self, other: LogLocation) -> LogLocation:
        """The ratio of two independent locations: variances of the logs add; the degrees
        of freedom by Welch–Satterthwaite."""
        return _combine(
            self.value / other.value, [(self.se_log**2, self.df), (other.se_log**2, other.df)]
        )


def _combine(value: float, terms: Sequence[tuple[float, float]]) -> LogLocation:
    """A location whose log-variance is the sum of independent ``terms`` (variance, df);
    Welch–Satterthwaite degrees of freedom (Satterthwaite 1946)."""
    variance = sum(v for v, _ in terms)
    denominator = sum(v * v / df for v, df in terms)
    df = variance * variance / denominator if denominator > 0 else min(df for _, df in terms)
    return LogLocation(value, math.sqrt(variance), df)


def process_location(groups: Sequence[Sequence[float] | np.ndarray]) -> LogLocation | None:
    """The median of P ≥ 2 processes: the geometric mean of the process medians (the
    mean of their logs, μ of the random-effects model), with the standard error of its
    log: the sample standard deviation of the P log process medians over √P, P − 1
    degrees of freedom (see the module docstring for the model and its sources). It
    includes the process-to-process spread (memory layout, hash seed, the machine's
    state when the process ran) as well as each median's own sampling error. The
    pooled median of all samples would be a less efficient estimate of μ (about π/2
    times the variance when processes differ more than samples do) that this standard
    error would understate. O(N).

    Args:
        groups: per-process values > 0, e.g. seconds per op; P arrays, none empty.

    Returns:
        The location, or None with fewer than 2 processes, a non-positive median, or
        medians all equal (no between-process spread can be estimated; callers fall
        back to the within-process bootstrap).

    Raises:
        ValueError: on an empty group.
    """
    if len(groups) < 2:
        return None
    spread = process_spread(groups)
    if not spread > 0:  # nan (a non-positive median) or 0 (medians all equal)
        return None
    logs = np.log(process_medians(groups))
    return LogLocation(math.exp(float(np.mean(logs))), spread / math.sqrt(len(logs)), len(logs) - 1)


def process_medians(groups: Sequence[Sequence[float] | np.ndarray]) -> np.ndarray:
    """Each process's median: shape (P,), in the groups' unit and order (the points
    :func:`process_location` and :func:`process_spread` start from). O(N).

    Raises:
        ValueError: on an empty group.
    """
    return np.array([float(np.median(_array(g))) for g in groups], dtype=float)


def process_spread(groups: Sequence[Sequence[float] | np.ndarray]) -> float:
    """How much P processes' medians differ: the sample SD of their logs (≈ a relative SD
    for small spreads); nan with fewer than 2 processes or a non-positive median. O(N)."""
    medians = process_medians(groups)
    if medians.size < 2 or np.any(medians <= 0):
        return math.nan
    return float(np.std(np.log(medians), ddof=1))


def location_sum(parts: Sequence[LogLocation]) -> LogLocation:
    """The sum of independent positive locations (e.g. a serializer's stage medians): the
    delta method gives Var(Σ v_k) ≈ Σ (v_k·se_k)², Welch–Satterthwaite its df. O(k).

    Raises:
        ValueError: on no parts.
    """
    if not parts:
        raise ValueError("a sum needs at least one part")
    total = sum(p.value for p in parts)
    return _combine(total, [((p.value * p.se_log / total) ** 2, p.df) for p in parts])


def ratio_ci(
    numerator: Sequence[np.ndarray],
    denominator: Sequence[np.ndarray],
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> Estimate:
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


def block_ratio_ci(
    numerator: Sequence[float] | np.ndarray,
    numerator_blocks: Sequence[int | None],
    denominator: Sequence[float] | np.ndarray,
    denominator_blocks: Sequence[int | None],
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator | None = None,
) -> Estimate:
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
    pairs = [(i, where[b]) for i, b in enumerate(numerator_blocks) if b is not None and b in where]
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
            reps[start : start + b] = np.median(paired_num[drawn], axis=1) / np.median(
                paired_den[drawn], axis=1
            )
    return percentile_ci(reps, float(np.median(num)) / den_median, confidence)


def sum_of_medians_ci(
    parts: Sequence[Sequence[np.ndarray]],
    confidence: float = 0.95,
    resamples: int = 2000,
    rng: np.random.Generator | None = None,
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
