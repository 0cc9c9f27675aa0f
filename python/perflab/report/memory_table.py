"""The memory table of ``perflab run --memory`` (and ``perflab show`` of such a run)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.memory import HEAP_MIN_BYTES, LEAK_MIN_BYTES, MemorySummary
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_bytes

COLUMNS = [
    "benchmark",
    "RSS start",
    "RSS peak",
    "RSS end",
    "growth/1k ops",
    "CI",
    "heap/1k ops",
    "heap CI",
    "processes",
    "leak?",
]


def _signed(n: float) -> str:
    return "–" if not math.isfinite(n) else ("+" if n > 0 else "") + format_bytes(n)


def memory_table(summaries: Sequence[MemorySummary]) -> Table:
    """One row per benchmark run with --memory; footnotes say what each column means.

    Columns: benchmark, RSS start / peak / end (medians over processes), growth per
    1,000 ops (median over processes) and its CI, the Python heap's growth per 1,000 ops
    over the heap pass and its CI, processes, and "growing" when the leak rule of
    :mod:`perflab.analyze.memory` flags it ("flat" otherwise). On a narrow terminal the
    CIs, processes and RSS start fold away first.
    """
    table = Table(
        "memory (--memory)",
        COLUMNS,
        align=["l"] + ["r"] * 8 + ["l"],
        fold=[KEY, 4, 5, KEY, KEY, 1, 6, 2, 3, NOTE],
    )
    for s in summaries:
        median, low, high = s.growth_per_1k_ops_bytes
        heap = s.heap_per_1k_ops_bytes or (math.nan,) * 3
        table.rows.append(
            [
                s.id,
                format_bytes(s.rss_start_bytes),
                format_bytes(s.rss_peak_bytes),
                format_bytes(s.rss_end_bytes),
                _signed(median),
                f"{_signed(low)} to {_signed(high)}",
                _signed(heap[0]),
                f"{_signed(heap[1])} to {_signed(heap[2])}" if s.heap_per_1k_ops_bytes else "–",
                f"{s.processes}",
                "growing" if s.leaking else "heap grows" if s.heap_growing else "flat",
            ]
        )
    level = min((s.confidence for s in summaries), default=0.95)
    heap_level = min(
        (s.heap_confidence for s in summaries if s.heap_per_1k_ops_bytes), default=math.nan
    )
    table.footnotes = [
        "RSS = the worker process's resident memory from /proc: start and end = when its "
        "first and last timed sample ended (read between samples, outside the timed loop), "
        "peak = the kernel's high-water mark over its whole life "
        "(import, setup, warmup, the tracemalloc and heap passes included); medians over "
        "processes",
        "growth/1k ops = (RSS end − RSS start) ÷ ops in between × 1,000, median over "
        f"processes; CI = its distribution-free {level:.0%} CI (order statistics)",
        "heap/1k ops = the Python heap's growth (bytes tracemalloc counts as held, after a "
        "full collection) over the heap pass that follows timing, ÷ its ops × 1,000, "
        "median over processes; heap CI = its CI"
        + (f" ({heap_level:.0%})" if math.isfinite(heap_level) else "")
        + ". Exact for what calls keep (a container resized in the pass counts whole once: a "
        "leak may read high, never low); it does not see memory C libraries take with malloc",
        "leak? = growing when the CI is above zero and the median process grew by at least "
        f"{format_bytes(LEAK_MIN_BYTES)} (RSS moves in pages and allocator steps); a slow "
        "leak needs more calls to show: raise --process-time; heap grows = RSS did not "
        "pass that rule, but the heap CI is above zero and the median process's heap grew "
        f"by at least {format_bytes(HEAP_MIN_BYTES)} over its pass",
    ]
    growing = [s.id for s in summaries if s.leaking]
    if growing:
        table.footnotes.append(
            "warning: memory grows with calls in "
            + ", ".join(growing)
            + " (a leak, or a cache that keeps filling)"
        )
    heap_only = [s.id for s in summaries if s.heap_growing and not s.leaking]
    if heap_only:
        table.footnotes.append(
            "warning: the Python heap grows with calls in "
            + ", ".join(heap_only)
            + " (too slowly for RSS to show yet: "
            "a slow leak, or a cache that keeps filling)"
        )
    return table


def memory_tables(summaries: Sequence[MemorySummary]) -> list[Table]:
    """[the memory table] when any benchmark has memory readings (``summaries``, from
    :func:`perflab.analyze.memory.summaries`), else []."""
    return [memory_table(summaries)] if summaries else []


def with_memory(
    records: list[dict[str, Any]], summaries: Sequence[MemorySummary]
) -> list[dict[str, Any]]:
    """CSV: each benchmark's record (matched by ``id``) gains the memory table's figures,
    in bytes (``rss_start_bytes``, ``rss_peak_bytes``, ``rss_end_bytes``,
    ``growth_per_1k_ops_bytes`` with ``growth_ci_low_bytes`` / ``growth_ci_high_bytes``,
    ``heap_per_1k_ops_bytes`` with ``heap_ci_low_bytes`` / ``heap_ci_high_bytes``,
    ``leaking``, ``heap_growing``) when the run had --memory; unchanged otherwise."""
    found = {s.id: s for s in summaries}
    if not found:
        return records
    empty = dict.fromkeys(
        [
            "rss_start_bytes",
            "rss_peak_bytes",
            "rss_end_bytes",
            "growth_per_1k_ops_bytes",
            "growth_ci_low_bytes",
            "growth_ci_high_bytes",
            "heap_per_1k_ops_bytes",
            "heap_ci_low_bytes",
            "heap_ci_high_bytes",
            "leaking",
            "heap_growing",
        ],
        "",
    )
    out = []
    for record in records:
        s = found.get(str(record.get("id")))
        out.append(
            {**record, **empty}
            if s is None
            else {
                **record,
                "rss_start_bytes": s.rss_start_bytes,
                "rss_peak_bytes": s.rss_peak_bytes,
                "rss_end_bytes": s.rss_end_bytes,
                "growth_per_1k_ops_bytes": s.growth_per_1k_ops_bytes[0],
                "growth_ci_low_bytes": s.growth_per_1k_ops_bytes[1],
                "growth_ci_high_bytes": s.growth_per_1k_ops_bytes[2],
                **dict(
                    zip(
                        ("heap_per_1k_ops_bytes", "heap_ci_low_bytes", "heap_ci_high_bytes"),
                        s.heap_per_1k_ops_bytes or ("", "", ""),
                    )
                ),
                "leaking": s.leaking,
                "heap_growing": s.heap_growing,
            }
        )
    return out
