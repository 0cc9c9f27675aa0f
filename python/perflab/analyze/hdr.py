"""HdrHistograms read back from results files: bucket counts, quantiles and their tests.

Decoding is done by the native core (``perflab._core.hdr_decode``, the same
HdrHistogram library that recorded the values), which bounds every size of the
untrusted input (base64 length, inflated payload, counts array, value range)
and returns the non-empty buckets. This module turns them into arrays and
computes what comparisons need from them.
"""

from __future__ import annotations

import base64
import math
import struct
import zlib
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
    return HdrCounts(
        np.asarray(decoded["values"], np.int64), np.asarray(decoded["counts"], np.int64)
    )


def quantile_replicates(
    hist: HdrCounts, q: float, resamples: int, rng: np.random.Generator
) -> np.ndarray:
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


@dataclass
class PercentileDistribution:
    """HdrHistogram's percentile distribution of one histogram: the figures of Java's
    ``outputPercentileDistribution`` (what wrk2 and the HdrHistogram tools print, the
    ``.hgrm`` text of :func:`perflab.report.peer_formats.hgrm`).

    Attributes:
        rows: (value, level, cumulative count) at each percentile level HdrHistogram's
            percentile iterator visits, then the 100% row: ``level`` in [0, 1], ``value``
            (the histogram's unit, µs in perflab files) that of rank ceil(level·N), the
            convention of the Java and Rust libraries (Python's ``hdrhistogram`` package
            takes int(level·N + 0.5): one rank lower at p99.9 for some N).
        total: N, the recorded values.
        mean / std: mean and population standard deviation, the histogram's unit
            (Java's ``getMean``/``getStdDeviation``; 0 for an empty histogram).
        max: the largest recorded value (0 when empty).
        digits / buckets / sub_buckets: significant digits, bucket and sub-bucket
            counts of the histogram's geometry, from its V2 header.
    """

    rows: list[tuple[int, float, int]]
    total: int
    mean: float
    std: float
    max: int
    digits: int
    buckets: int
    sub_buckets: int


def geometry(encoded: str) -> tuple[int, int, int]:
    """(significant digits, bucket count, sub-bucket count) of a base64 V2-deflate
    histogram, from its header (lowest discernible value 1, as perflab records); (3, 1,
    2048) when the header can't be read. Inflates at most the header's 32 bytes."""
    try:
        raw = base64.b64decode(encoded)
        inner = zlib.decompressobj().decompress(raw[8:], 32) if len(raw) > 8 else b""
    except (ValueError, zlib.error):
        inner = b""
    digits, _low, high = struct.unpack(">iqq", inner[12:32]) if len(inner) >= 32 else (3, 1, 2)
    digits = min(max(digits, 0), 5)  # HdrHistogram's range; the header is untrusted
    sub_buckets = 2 ** max(math.ceil(math.log2(2 * 10**digits)), 1)
    buckets, untrackable = 1, sub_buckets
    while untrackable <= high and buckets < 64:
        untrackable <<= 1
        buckets += 1
    return digits, buckets, sub_buckets


def percentile_distribution(
    encoded: str, ticks_per_half_distance: int = 5
) -> PercentileDistribution:
    """The percentile distribution of a base64 V2 histogram, as HdrHistogram's
    percentile iterator walks it: levels 0, 10, 20 … 50, 55 … with
    ``ticks_per_half_distance`` ticks in each half of the distance left to 100%
    (HdrHistogram's and wrk2's default 5), one row per level reached, then 100%.

    Raises:
        ValueError: an encoding the native decoder refuses.
    """
    hist = decode_histogram(encoded)
    digits, buckets, sub_buckets = geometry(encoded) if encoded else (3, 1, 2048)
    total = hist.total
    rows: list[tuple[int, float, int]] = []
    level = 0.0  # percent
    for value, count_to in zip(hist.values.tolist(), np.cumsum(hist.counts).tolist()):
        while level < 100 and 100.0 * count_to / total >= level:
            rows.append((value, level / 100, count_to))
            ticks = ticks_per_half_distance * 2 ** (int(math.log2(100 / (100 - level))) + 1)
            level += 100 / ticks
            if count_to == total:  # the last value: only the 100% row follows
                break
    if not total:
        return PercentileDistribution(rows, 0, 0.0, 0.0, 0, digits, buckets, sub_buckets)
    rows.append((int(hist.values[-1]), 1.0, total))
    summary = decode_summary(encoded)
    mean = float(summary["mean_us"])
    std = float(np.sqrt(np.sum(hist.counts * (hist.values - mean) ** 2) / total))
    return PercentileDistribution(
        rows, total, mean, std, int(summary["max_us"]), digits, buckets, sub_buckets
    )


def step_distributions(results: object) -> list[PercentileDistribution]:
    """:func:`percentile_distribution` of each step's latency histogram of an ``http``
    Results (``results.benchmarks[0].steps``), in step order.

    Raises:
        ValueError: a histogram the native decoder refuses.
    """
    return [percentile_distribution(step.latency.encoded) for step in results.benchmarks[0].steps]  # type: ignore[attr-defined]
