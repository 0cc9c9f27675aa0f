"""HTTP steps compared: achieved rates and latency percentiles of two runs, step by
step, and their Server-Timing spans (one run per side: the CI leaves out run-to-run
variation)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from perflab.analyze import stats
from perflab.analyze.compare.timing import row_rng
from perflab.analyze.decisions import (
    FAILED,
    expanded_ratio_ci,
)
from perflab.analyze.hdr import (
    HdrCounts,
    decode_histogram,
    mann_whitney_counts,
    quantile_replicates,
)
from perflab.analyze.server_timing import histogram_pairs
from perflab.model import Benchmark, Histogram, HttpStep
from perflab.model.comparison import (
    DEFAULT_PERCENTILES,
    Row,
    Side,
)
from perflab.model.estimate import Estimate

#: The caveat of every http row: each side is one run, so its CI (from that run's
#: histogram or response count) cannot see how much a repeat run would differ.
ONE_RUN = "one run per side: the CI leaves out run-to-run variation"


def step_label(step: HttpStep) -> str:
    """How a step is named in ids: "open 1,000/s", "closed 16 conn"."""
    if step.mode == "closed" or step.offered_rate is None:
        return f"{step.mode} {step.connections} conn"
    return f"{step.mode} {step.offered_rate:,.0f}/s"


def _achieved_rate(step: HttpStep) -> Estimate:
    """Ok responses / elapsed s, 1/s, without a CI of its own (nan when nothing elapsed)."""
    rate = step.ok_responses / step.elapsed_s if step.elapsed_s > 0 else math.nan
    return Estimate(rate, math.nan, math.nan)


def compare_rates(row: Row, a: HttpStep, b: HttpStep, confidence: float) -> Row:
    """Fill ``row`` with the achieved rates (ok responses / elapsed s) of two steps.

    Exact Poisson rate-ratio test: conditional on the total, B's count is
    binomial; its Clopper–Pearson CI maps to a CI of the rate ratio.
    """
    from scipy import stats as sps

    k_a, k_b, t_a, t_b = a.ok_responses, b.ok_responses, a.elapsed_s, b.elapsed_s
    row.a = Side(_achieved_rate(a), units=k_a, samples=k_a)
    row.b = Side(_achieved_rate(b), units=k_b, samples=k_b)
    row.notes.append(ONE_RUN)
    if k_a == 0 or k_b == 0 or t_a <= 0 or t_b <= 0:
        row.verdict = FAILED
        row.notes.append("no successful response on a side")
        return row
    test = sps.binomtest(k_b, k_a + k_b, t_b / (t_a + t_b))
    ci = test.proportion_ci(confidence, method="exact")
    scale = t_a / t_b
    high = ci.high / (1 - ci.high) * scale if ci.high < 1 else math.inf
    row.ratio = Estimate(row.b.value / row.a.value, ci.low / (1 - ci.low) * scale, high, confidence)
    row.p_value = float(test.pvalue)
    return row


def compare_latencies(
    key: str,
    a: HttpStep,
    b: HttpStep,
    percentiles: Sequence[float],
    confidence: float,
    resamples: int,
    seed: int,
    hists: tuple[Histogram, Histogram] | None = None,
) -> list[Row]:
    """One row per latency percentile of two steps, CIs from their HdrHistograms.

    The Mann–Whitney U p-value of the two latency distributions is shared by
    the step's rows (one test in the Benjamini–Hochberg correction). ``hists``: compare
    these two histograms (µs) instead of the steps' latencies, in rows that are never
    primary (a Server-Timing metric).
    """
    primary = hists is None
    hists = hists or (a.latency, b.latency)
    try:
        hist_a, hist_b = decode_histogram(hists[0].encoded), decode_histogram(hists[1].encoded)
    except ValueError as exc:
        return [
            Row(
                f"{key} latency",
                "http",
                "latency",
                "s",
                verdict=FAILED,
                primary=False,
                notes=[f"latency histogram unreadable: {exc}"],
            )
        ]
    rows = []
    p_value = mann_whitney_counts(hist_a, hist_b) if hist_a.total and hist_b.total else math.nan
    for pct in percentiles:
        row = Row(
            f"{key} p{pct:g}",
            "http",
            f"p{pct:g}",
            "s",
            test_key=key,
            primary=primary and pct == 50,
            p_value=p_value,
            notes=[ONE_RUN],
        )
        rows.append(
            _latency_row(
                row, hist_a, hist_b, pct / 100, confidence, resamples, row_rng(seed, row.id)
            )
        )
    return rows


def _latency_row(
    row: Row,
    hist_a: HdrCounts,
    hist_b: HdrCounts,
    q: float,
    confidence: float,
    resamples: int,
    rng: np.random.Generator,
    scale_s: float = 1e-6,
) -> Row:
    """Fill ``row`` with the q-quantiles of two histograms (values × ``scale_s`` = s:
    1e-6 for the µs of HTTP steps, 1e-9 for the ns of trace spans), their CIs and B/A."""
    if not hist_a.total or not hist_b.total:
        row.verdict, row.primary, row.notes = FAILED, False, ["no recorded latency on a side"]
        return row
    sides = []
    for hist in (hist_a, hist_b):
        reps = quantile_replicates(hist, q, resamples, rng) * scale_s
        ci = stats.percentile_ci(reps, hist.quantile(q) * scale_s, confidence)
        sides.append((Side(ci, hist.total, hist.total), reps))
    (row.a, reps_a), (row.b, reps_b) = sides
    with np.errstate(divide="ignore", invalid="ignore"):
        row.ratio, row.log_replicates = expanded_ratio_ci(
            row.b.value / row.a.value, reps_b / reps_a, min(hist_a.total, hist_b.total), confidence
        )
    return row


def compare_http(
    a: Benchmark,
    b: Benchmark,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> list[Row]:
    """Compare two HTTP benchmarks step by step (steps matched by mode and rate/connections).

    Returns:
        Per matched step: an achieved-rate row and one row per percentile;
        a "failed" row for each step present on one side only.
    """
    steps_a, steps_b = steps_by_label(a), steps_by_label(b)
    rows: list[Row] = []
    for label in list(steps_a) + [k for k in steps_b if k not in steps_a]:
        key = f"{a.id} {label}"
        if label not in steps_a or label not in steps_b:
            side = "B" if label in steps_a else "A"
            rows.append(
                Row(
                    key,
                    "http",
                    "rate",
                    "1/s",
                    verdict=FAILED,
                    primary=False,
                    notes=[f"step missing in {side}"],
                )
            )
            continue
        sa, sb = steps_a[label], steps_b[label]
        rows.append(
            compare_rates(
                Row(
                    f"{key} rate",
                    "http",
                    "rate",
                    "1/s",
                    True,
                    test_key=f"{key} rate",
                    primary=False,
                ),
                sa,
                sb,
                confidence,
            )
        )
        rows += compare_latencies(key, sa, sb, percentiles, confidence, resamples, seed)
        for metric, ha, hb in histogram_pairs(sa, sb):  # Server-Timing
            rows += compare_latencies(
                f"{key} server-timing {metric}",
                sa,
                sb,
                percentiles,
                confidence,
                resamples,
                seed,
                (ha, hb),
            )
    return rows


def steps_by_label(bench: Benchmark) -> dict[str, HttpStep]:
    """The steps of an http benchmark by :func:`step_label`, in order; a label that
    repeats gets " #2", " #3" (the key both sides' steps are matched by)."""
    out: dict[str, HttpStep] = {}
    for step in bench.steps:
        label = step_label(step)
        n = sum(1 for k in out if k == label or k.startswith(label + " #"))
        out[label if n == 0 else f"{label} #{n + 1}"] = step
    return out


# --------------------------------------------------------------------------- trace


def compare_spans(
    a: Benchmark,
    b: Benchmark,
    percentiles: Sequence[float],
    confidence: float,
    resamples: int,
    seed: int,
) -> list[Row]:
    """Rows comparing one span name of two trace files (``perflab.trace.dump``).

    Method: as HTTP latencies (:func:`compare_latencies`): each percentile of the
    span's duration HdrHistogram (ns) with its order-statistic bootstrap CI, B/A with
    the expanded-percentile CI, one Mann–Whitney U test per span shared by its rows.
    Spans of one process are not independent runs: the CI leaves out
    process-to-process variation, which a note says.

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
        return [
            Row(
                key,
                "trace",
                "duration",
                "s",
                verdict=FAILED,
                primary=False,
                notes=["no span data on a side"],
            )
        ]
    try:
        hist_a = decode_histogram(a.span.duration.encoded)
        hist_b = decode_histogram(b.span.duration.encoded)
    except ValueError as exc:
        return [
            Row(
                key,
                "trace",
                "duration",
                "s",
                verdict=FAILED,
                primary=False,
                notes=[f"duration histogram unreadable: {exc}"],
            )
        ]
    p_value = mann_whitney_counts(hist_a, hist_b) if hist_a.total and hist_b.total else math.nan
    rows = []
    for pct in percentiles:
        row = Row(
            f"{key} p{pct:g}",
            "trace",
            f"p{pct:g}",
            "s",
            test_key=key,
            primary=pct == 50,
            p_value=p_value,
            notes=["spans of one process per side: the CI leaves out process-to-process variation"],
        )
        rows.append(
            _latency_row(
                row,
                hist_a,
                hist_b,
                pct / 100,
                confidence,
                resamples,
                row_rng(seed, row.id),
                scale_s=1e-9,
            )
        )
    return rows
