"""The table of a ``trace`` results file (``perflab show trace.json``): one row per span.

Rows are sorted by total time, most first. Columns, in plain words:

* **count**: spans recorded under the name.
* **total** / **self total**: the sum of their durations / of their self times (a
  span's duration less its direct child spans'), exact sums.
* **mean**, **p50**, **p90**, **p99**, **p99.9**, **max**: of the durations, from the
  HdrHistogram (2 significant digits: a bucket's highest value, within 0.8%).
* **self p50**, **self p99**: of the self times.
"""

from __future__ import annotations

import math
from typing import Any

from perflab.model import Benchmark, Results, SpanHistogram
from perflab.report.table import Table
from perflab.units import format_time

_COLUMNS = [
    "span",
    "count",
    "total",
    "self total",
    "mean",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "max",
    "self p50",
    "self p99",
]


def _time(ns: float) -> str:
    return "–" if ns is None or not math.isfinite(ns) else format_time(ns / 1e9)


def _spans(results: Results) -> list[Benchmark]:
    """The benchmarks holding a span, by total time descending."""
    return sorted(
        (b for b in results.benchmarks if b.span is not None), key=lambda b: -b.span.total_ns
    )  # type: ignore[union-attr]


def trace_table(results: Results) -> Table:
    """The table of a trace file.

    Args:
        results: a :class:`perflab.model.Results` of kind "trace".

    Returns:
        A :class:`perflab.report.table.Table` (times formatted in s, ms, µs or ns).
    """
    settings = results.settings
    table = Table(
        f"trace: {len(_spans(results))} span names, pid {settings.get('pid', '?')}, "
        f"recorded from {results.created} to {settings.get('dumped', '?')}",
        list(_COLUMNS),
        align=["l"] + ["r"] * (len(_COLUMNS) - 1),
    )
    for bench in _spans(results):
        span = bench.span
        d, s = span.duration, span.self_time  # type: ignore[union-attr]
        table.rows.append(
            [
                bench.name,
                f"{span.count:,}",
                _time(span.total_ns),
                _time(span.self_total_ns),
                _time(d.mean_ns),
                _time(d.p50_ns),
                _time(d.p90_ns),
                _time(d.p99_ns),
                _time(d.p999_ns),
                _time(d.max_ns),
                _time(s.p50_ns),
                _time(s.p99_ns),
            ]
        )
    if settings.get("refused_names"):
        table.footnotes.append(
            f"{settings['refused_names']:,} new span names beyond the cap of "
            f'{settings.get("max_names", "?")} were counted under "(other spans)"; set '
            "PERFLAB_TRACE_MAX_NAMES higher, or use fewer names (not one per URL or query)"
        )
    if settings.get("dropped_spans"):
        depth = settings.get("max_depth")
        table.footnotes.append(
            f"{settings['dropped_spans']:,} spans opened deeper than "
            f"{f'{depth:,}' if isinstance(depth, int) else '?'} nested spans on one thread "
            "(deep recursion) ran unrecorded: counts and totals leave them out"
        )
    if settings.get("enabled") is False:
        table.footnotes.append("recording was off (PERFLAB_TRACE=0) when this was dumped")
    if not table.rows:
        table.footnotes.append("no spans were recorded")
    table.footnotes.append(
        "self = a span's duration less its direct child spans'; "
        "percentiles from HdrHistograms (within 0.8%)"
    )
    return table


def _hist_record(prefix: str, h: SpanHistogram) -> dict[str, Any]:
    return {
        f"{prefix}_{k}_s": getattr(h, f"{k}_ns") / 1e9
        for k in ("mean", "p50", "p90", "p99", "p999", "max")
    }


def trace_records(results: Results) -> list[dict[str, Any]]:
    """Flat records for CSV, one per span name, times in seconds."""
    return [
        {
            "span": b.name,
            "count": b.span.count,
            "total_s": b.span.total_ns / 1e9,
            "self_total_s": b.span.self_total_ns / 1e9,
            **_hist_record("duration", b.span.duration),
            **_hist_record("self", b.span.self_time),
        }
        for b in _spans(results)
        if b.span is not None
    ]


def print_trace(results: Results, fmt: str) -> None:
    """Print a trace file (``perflab show``): table, Markdown or CSV on stdout."""
    from perflab.report import console

    console.emit(fmt, lambda: [trace_table(results)], lambda: trace_records(results))
