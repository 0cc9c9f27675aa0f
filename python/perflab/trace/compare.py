"""``perflab compare`` of two ``trace`` files: per span name, its duration percentiles.

Method: the same as HTTP latencies (:func:`perflab.analyze.compare.compare_latencies`):
each percentile of a span's duration HdrHistogram with a CI from the order-statistic
bootstrap (the m-th of N draws is F⁻¹(U), U ~ Beta(m, N−m+1)), B/A with the
expanded-percentile CI, one Mann–Whitney U test per span (its rows share it in the
Benjamini–Hochberg correction), and the verdict rule of every comparison (the CI
against the noise threshold). Spans of one process are not independent runs: the CI
leaves out process-to-process variation, which a note says.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from perflab.analyze.compare import FAILED, Row, _latency_row, _rng
from perflab.analyze.hdr import decode_histogram, mann_whitney_counts
from perflab.model import Benchmark


def compare_spans(a: Benchmark, b: Benchmark, percentiles: Sequence[float], confidence: float,
                  resamples: int, seed: int) -> list[Row]:
    """Rows comparing one span name of two trace files.

    Args:
        a / b: benchmarks of kind "trace" (their ``span`` set).
        percentiles: of the durations, e.g. (50, 90, 99, 99.9).
        confidence: CI level.
        resamples: bootstrap replicates.
        seed: bootstrap seed (each row derives its stream from its id).

    Returns:
        One row per percentile (metric "p50", …, unit "s"; p50 is the primary row),
        or one "failed" row when a side has no span data or an unreadable histogram.
    """
    key = a.id
    if a.span is None or b.span is None:
        return [Row(key, "trace", "duration", "s", verdict=FAILED, primary=False,
                    notes=["no span data on a side"])]
    try:
        hist_a = decode_histogram(a.span.duration.encoded)
        hist_b = decode_histogram(b.span.duration.encoded)
    except ValueError as exc:
        return [Row(key, "trace", "duration", "s", verdict=FAILED, primary=False,
                    notes=[f"duration histogram unreadable: {exc}"])]
    p_value = mann_whitney_counts(hist_a, hist_b) if hist_a.total and hist_b.total else math.nan
    rows = []
    for pct in percentiles:
        row = Row(f"{key} p{pct:g}", "trace", f"p{pct:g}", "s", test_key=key,
                  primary=pct == 50, p_value=p_value,
                  notes=["spans of one process per side: the CI leaves out "
                         "process-to-process variation"])
        rows.append(_latency_row(row, hist_a, hist_b, pct / 100, confidence, resamples,
                                 _rng(seed, row.id), scale_s=1e-9))
    return rows
