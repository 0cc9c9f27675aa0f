"""The memory table of ``perflab run --memory`` (and ``perflab show`` of such a run)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.memory import LEAK_MIN_BYTES, MemorySummary
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_bytes

COLUMNS = ["benchmark", "RSS start", "RSS peak", "RSS end", "growth/1k ops", "CI",
           "processes", "leak?"]


def _signed(n: float) -> str:
    return "–" if not math.isfinite(n) else ("+" if n > 0 else "") + format_bytes(n)


def memory_table(summaries: Sequence[MemorySummary]) -> Table:
    """One row per benchmark run with --memory; footnotes say what each column means.

    Columns: benchmark, RSS start / peak / end (medians over processes), growth per
    1,000 ops (median over processes) and its CI, processes, and "growing" when the
    leak rule of :mod:`perflab.analyze.memory` flags it ("flat" otherwise). On a narrow
    terminal the CI, processes and RSS start fold away first.
    """
    table = Table("memory (--memory)", COLUMNS, align=["l"] + ["r"] * 6 + ["l"],
                  fold=[KEY, 3, 4, KEY, KEY, 1, 2, NOTE])
    for s in summaries:
        median, low, high = s.growth_per_1k_ops_bytes
        table.rows.append([s.id, format_bytes(s.rss_start_bytes), format_bytes(s.rss_peak_bytes),
                           format_bytes(s.rss_end_bytes), _signed(median),
                           f"{_signed(low)} to {_signed(high)}", f"{s.processes}",
                           "growing" if s.leaking else "flat"])
    level = min((s.confidence for s in summaries), default=0.95)
    table.footnotes = [
        "RSS = the worker process's resident memory from /proc: start and end = when its "
        "first and last timed sample ended (read between samples, outside the timed loop), "
        "peak = the kernel's high-water mark over its whole life "
        "(import, setup, warmup and the tracemalloc pass included); medians over processes",
        "growth/1k ops = (RSS end − RSS start) ÷ ops in between × 1,000, median over "
        f"processes; CI = its distribution-free {level:.0%} CI (order statistics)",
        "leak? = growing when the CI is above zero and the median process grew by at least "
        f"{format_bytes(LEAK_MIN_BYTES)} (RSS moves in pages and allocator steps); a slow "
        "leak needs more calls to show: raise --process-time",
    ]
    growing = [s.id for s in summaries if s.leaking]
    if growing:
        table.footnotes.append("warning: memory grows with calls in " + ", ".join(growing)
                               + " (a leak, or a cache that keeps filling)")
    return table


def memory_tables(summaries: Sequence[MemorySummary]) -> list[Table]:
    """[the memory table] when any benchmark has memory readings (``summaries``, from
    :func:`perflab.analyze.memory.summaries`), else []."""
    return [memory_table(summaries)] if summaries else []


def with_memory(records: list[dict[str, Any]], summaries: Sequence[MemorySummary]
                ) -> list[dict[str, Any]]:
    """CSV: each benchmark's record (matched by ``id``) gains the memory table's figures,
    in bytes (``rss_start_bytes``, ``rss_peak_bytes``, ``rss_end_bytes``,
    ``growth_per_1k_ops_bytes`` with ``growth_ci_low_bytes`` / ``growth_ci_high_bytes``,
    ``leaking``) when the run had --memory; unchanged otherwise."""
    found = {s.id: s for s in summaries}
    if not found:
        return records
    empty = dict.fromkeys(["rss_start_bytes", "rss_peak_bytes", "rss_end_bytes",
                           "growth_per_1k_ops_bytes", "growth_ci_low_bytes",
                           "growth_ci_high_bytes", "leaking"], "")
    out = []
    for record in records:
        s = found.get(str(record.get("id")))
        out.append({**record, **empty} if s is None else {
            **record, "rss_start_bytes": s.rss_start_bytes, "rss_peak_bytes": s.rss_peak_bytes,
            "rss_end_bytes": s.rss_end_bytes,
            "growth_per_1k_ops_bytes": s.growth_per_1k_ops_bytes[0],
            "growth_ci_low_bytes": s.growth_per_1k_ops_bytes[1],
            "growth_ci_high_bytes": s.growth_per_1k_ops_bytes[2], "leaking": s.leaking})
    return out
