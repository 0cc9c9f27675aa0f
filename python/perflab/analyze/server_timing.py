"""The server-side breakdown of an HTTP step, from the target's ``Server-Timing`` headers.

``perflab http`` keeps, per step, one HdrHistogram of ``dur`` per metric the server
named, the app's total per response and the time *outside the app* (service time −
the app's total: network, the server's accept queue and framework, the client's
read), all in µs (:class:`perflab.model.ServerTiming`). This module turns them into
figures for the table (:func:`breakdown`), plain-words notes (:func:`timing_notes`)
and the histogram pairs that ``compare`` tests percentile by percentile
(:func:`histogram_pairs`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perflab.model import Histogram, HttpStep, ServerTiming

#: Labels of the two derived rows (metric names from servers are tokens: no spaces).
APP_TOTAL = "app total"
OUTSIDE = "outside the app"
#: A span name repeated more than this many times within one request is flagged (the
#: N+1 pattern: one query per row of a page instead of one query for the page); the
#: default of ``--n-plus-one`` (``perflab http``, ``perflab run``)
REPEAT_LIMIT = 10


@dataclass
class MetricFigures:
    """One row of the breakdown: a metric, the app's total, or outside the app.

    Attributes:
        name: the metric's name as the server sent it, or :data:`APP_TOTAL` /
            :data:`OUTSIDE`.
        count: responses it was recorded for.
        p50_s / p90_s / p99_s / max_s: percentiles of its duration, s (NaN: none).
        share_p50: its p50 over the step's service-time p50 (NaN when unknown).
        per_request_p50 / per_request_max: spans of that name per request, median and
            largest (the metric's ``count`` parameter; NaN when the server sent none).
    """

    name: str
    count: int
    p50_s: float
    p90_s: float
    p99_s: float
    max_s: float
    share_p50: float
    per_request_p50: float = math.nan
    per_request_max: float = math.nan


def _figures(name: str, h: Histogram, client_p50_us: float) -> MetricFigures:
    def s(us: float) -> float:
        return us * 1e-6 if h.count else math.nan

    share = h.p50_us / client_p50_us if h.count and client_p50_us > 0 else math.nan
    return MetricFigures(name, h.count, s(h.p50_us), s(h.p90_us), s(h.p99_us), s(h.max_us), share)


def breakdown(step: HttpStep) -> list[MetricFigures]:
    """The step's server-side rows: each metric (slowest p50 first), then the app's total
    (unless a metric named ``app`` or ``total`` already is it) and the time outside the
    app; empty when no response carried ``Server-Timing``."""
    timing = step.server_timing
    if timing is None:
        return []
    client = step.service_time.p50_us if step.service_time.count else math.nan
    rows = sorted(
        (_figures(name, h, client) for name, h in timing.metrics.items()),
        key=lambda r: (-r.p50_s if math.isfinite(r.p50_s) else math.inf, r.name),
    )
    for row in rows:
        counted = timing.counts.get(row.name)
        if counted is not None and counted.count:
            row.per_request_p50, row.per_request_max = counted.p50_us, counted.max_us
    named = [r for r in rows if r.name.lower() in ("app", "total")]
    if not (named and named[0].count == timing.app_total.count):  # else the same row twice
        rows.append(_figures(APP_TOTAL, timing.app_total, client))
    return rows + [_figures(OUTSIDE, timing.outside_app, client)]


def timing_notes(
    timing: ServerTiming, ok_responses: int, n_plus_one: int = REPEAT_LIMIT
) -> list[str]:
    """Plain-words caveats: malformed headers, dropped metrics, responses without one,
    and the N+1 check: a metric whose ``count`` in one request exceeded ``n_plus_one``."""
    notes = []
    if timing.malformed:
        notes.append(
            f"{timing.malformed:,} of {timing.responses:,} Server-Timing headers were "
            "malformed (partly or wholly); their well-formed metrics were kept and "
            "the requests did not fail"
        )
    if timing.metrics_dropped:
        notes.append(
            f"{timing.metrics_dropped:,} metric values were not recorded: over 32 "
            "metrics in one response, or over 32 distinct names in the step"
        )
    for name, counted in sorted(timing.counts.items()):
        if counted.count and counted.max_us > n_plus_one:
            notes.append(
                f"N+1: {name} ran {counted.max_us:,.0f} times in one request (median "
                f"{counted.p50_us:,.0f} per request, over {n_plus_one}): likely one call "
                "per row or item; one batched call would do"
            )
    if 0 < timing.responses < ok_responses:
        notes.append(
            f"only {timing.responses:,} of {ok_responses:,} OK responses carried Server-Timing"
        )
    return notes


def histogram_pairs(a: HttpStep, b: HttpStep) -> list[tuple[str, Histogram, Histogram]]:
    """(label, A's histogram, B's) for every metric both steps recorded, then the app's
    total and outside the app when both have them: what ``compare`` tests per percentile.
    Empty unless both steps carry Server-Timing."""
    ta, tb = a.server_timing, b.server_timing
    if ta is None or tb is None:
        return []
    pairs = [
        (name, ta.metrics[name], tb.metrics[name])
        for name in sorted(ta.metrics)
        if name in tb.metrics
    ]
    for label, attr in ((APP_TOTAL, "app_total"), (OUTSIDE, "outside_app")):
        ha, hb = getattr(ta, attr), getattr(tb, attr)
        if ha.count and hb.count:
            pairs.append((label, ha, hb))
    return pairs
