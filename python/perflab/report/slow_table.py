"""The slowest samples of each benchmark and what happened during them (``run
--verbose``, ``show --verbose``, the HTML report), from
:func:`perflab.analyze.slow_calls.slow_calls`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.slow_calls import SlowCalls, SlowSample
from perflab.report import console, escape
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_time


def _counter(sample: SlowSample, name: str) -> str:
    value = sample.counters.get(name)
    return "–" if value is None else f"{value:,}"


def slow_table(calls: SlowCalls) -> Table:
    """One benchmark's slowest samples, slowest first: time per op and how many times
    the median that is, the process, GC, CPU share, the counters, the likely cause."""
    table = Table(
        title=f"slowest samples: {escape.terminal(calls.label, one_line=True)}",
        columns=[
            "time/op",
            "× median",
            "process (pid)",
            "sample",
            "GC",
            "CPU/wall",
            "invol. switches",
            "migrations",
            "page faults",
            "cause",
        ],
        align=["r", "r", "l", "r", "r", "r", "r", "r", "r", "l"],
        fold=[KEY, KEY, 2, 2, KEY, 3, 1, 1, 1, NOTE],
    )
    for s in calls.slowest:
        gc = f"{s.gc_collections} in {format_time(s.gc_s)}" if s.gc_collections else "–"
        cause = s.cause + (" (excluded)" if s.flagged else "")
        table.rows.append(
            [
                format_time(s.per_op_s),
                f"{s.vs_median:.2f}×" if math.isfinite(s.vs_median) else "–",
                f"#{s.process_index} ({s.pid})",
                f"{s.sample_index + 1}",
                gc,
                f"{s.cpu_share:.2f}" if math.isfinite(s.cpu_share) else "–",
                _counter(s, "involuntary_switches"),
                _counter(s, "cpu_migrations"),
                _counter(s, "page_faults"),
                cause,
            ]
        )
    if calls.tail_text:
        table.footnotes.append(calls.tail_text)
    table.footnotes.append(
        "a sample is a loop of calls; cause: GC (collections took half the excess over the "
        "median), preempted (an involuntary switch, or CPU/wall under 0.9), migrated, page "
        "faults (twice the median's), clock (the clock check flagged it), else unexplained; "
        "excluded: left out of the statistics; –: not recorded"
    )
    return table


def slow_records(all_calls: Sequence[SlowCalls]) -> list[dict[str, Any]]:
    """CSV records: one per listed slow sample."""
    return [
        {
            "benchmark": c.label,
            "per_op_s": s.per_op_s,
            "vs_median": s.vs_median,
            "process": s.process_index,
            "pid": s.pid,
            "sample": s.sample_index,
            "gc_collections": s.gc_collections,
            "gc_s": s.gc_s,
            "cpu_share": s.cpu_share,
            "cause": s.cause,
            "tail_share": c.tail_share,
        }
        for c in all_calls
        for s in c.slowest
    ]


def print_slow(all_calls: Sequence[SlowCalls], fmt: str) -> None:
    """Print the slowest-samples tables in ``fmt`` (nothing when there are none)."""
    if all_calls:
        console.emit(
            fmt, lambda: [slow_table(c) for c in all_calls], lambda: slow_records(all_calls)
        )
