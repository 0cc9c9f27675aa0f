"""HdrHistograms read back from results files: bucket counts, quantiles and their tests.

Decoding is done by the native core (``perflab._core.hdr_decode``, the same
HdrHistogram library that recorded the values), which bounds every size of the
untrusted input (base64 length, inflated payload, counts array, value range)
and returns the non-empty buckets. This module turns them into arrays and
computes what comparisons need from them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass
class HdrCounts:
    """A decoded HdrHistogram: its non-empty buckets only.

    Attributes:
        values: highest equivalent value of each non-empty bucket, ascending,
            in the histogram's unit (µs in perflab files); shape (K,), int64.
        counts: how many values fell in each bucket; shape (K,), int64.
    """

    values: np.ndarray
    counts: np.ndarray

    @property
    def total(self) -> int:
        """Number of recorded values."""
        return int(self.counts.sum())

    def at_rank(self, ranks: np.ndarray) -> np.ndarray:
        """Values of the given 1-based ranks (clipped to [1, total]); shape of ``ranks``."""
        cumulative = np.cumsum(self.counts)
        ranks = np.clip(ranks, 1, cumulative[-1])
        return self.values[np.searchsorted(cumulative, ranks, side="left")]

    def quantile(self, q: float) -> float:
        """HdrHistogram's value at quantile q in [0, 1]: the highest equivalent value of
        the bucket holding rank max(1, ceil(q·N)), as the Rust and Java libraries report."""
        return float(self.at_rank(np.array([max(1, math.ceil(q * self.total))]))[0])


def decode_summary(encoded: str) -> dict:
    """The native decoder's dict for a base64 V2 HdrHistogram (see ``_core.hdr_decode``).

    Returns:
        {count, min_us, mean_us, p50_us, p90_us, p99_us, p999_us, max_us, values, counts}.

    Raises:
        ValueError: not base64, not a V2 encoding, or beyond the decoder's bounds.
    """
    from perflab import _core

    return _core.hdr_decode(encoded)


def decode_histogram(encoded: str) -> HdrCounts:
    """Decode a base64 HdrHistogram in the V2 (optionally deflate-compressed) encoding.

    Args:
        encoded: base64 text as written in :class:`perflab.model.Histogram`.

    Returns:
        The non-empty buckets (empty arrays for an empty histogram or "").

    Raises:
        ValueError: not base64, a foreign cookie, a corrupt payload, or beyond the
            native decoder's bounds on sizes and range.
    """
    if not encoded:
        return HdrCounts(np.zeros(0, np.int64), np.zeros(0, np.int64))
    decoded = decode_summary(encoded)
    return HdrCounts(np.asarray(decoded["values"], np.int64),
                     np.asarray(decoded["counts"], np.int64))


def quantile_replicates(hist: HdrCounts, q: float, resamples: int,
                        rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of the q-quantile of a histogram, without drawing N values.

    The m-th smallest of N draws from the histogram is F̂⁻¹(U) with
    U ~ Beta(m, N−m+1), m = max(1, ceil(qN)) (the order-statistic form of
    the bootstrap of a quantile). O(resamples · log K).

    Returns:
        Replicate quantiles, shape (resamples,), in the histogram's unit.
    """
    n = hist.total
    m = max(1, math.ceil(q * n))
    u = rng.beta(m, n - m + 1, size=resamples)
    return hist.at_rank(np.ceil(u * n).astype(np.int64)).astype(float)


def mann_whitney_counts(a: HdrCounts, b: HdrCounts) -> float:
    """Two-sided Mann–Whitney U p-value of B against A from bucket counts.

    Values in one bucket are ties; U counts pairs with a tie as ½, the normal
    approximation uses the tie-corrected variance and a continuity
    correction (as scipy's asymptotic method). O(K log K).

    Returns:
        The p-value, NaN when a side is empty or everything is tied.
    """
    from scipy import stats as sps

    n_a, n_b = a.total, b.total
    grid = np.union1d(a.values, b.values)
    count_a = np.zeros(grid.size)
    count_b = np.zeros(grid.size)
    count_a[np.searchsorted(grid, a.values)] = a.counts
    count_b[np.searchsorted(grid, b.values)] = b.counts
    u = float(np.sum(count_b * (np.cumsum(count_a) - count_a + 0.5 * count_a)))
    n = n_a + n_b
    ties = count_a + count_b
    variance = n_a * n_b / 12 * ((n + 1) - np.sum(ties**3 - ties) / (n * (n - 1))) if n > 1 else 0
    if n_a == 0 or n_b == 0 or variance <= 0:
        return math.nan
    z = (abs(u - n_a * n_b / 2) - 0.5) / math.sqrt(variance)
    return float(min(1.0, 2 * sps.norm.sf(max(z, 0.0))))
