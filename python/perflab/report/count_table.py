"""The tables of the instruction-count mode: ``perflab run --count instructions`` (and
``perflab show`` of its file), and the counted runs of ``perflab cmd --count``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.counts import LAYOUT_SENSITIVE_SPREAD, CountSummary
from perflab.report.table import KEY, NOTE, Table

COLUMNS = [
    "benchmark",
    "instructions/op",
    "layout band",
    "fixed/op",
    "cold",
    "calls/sample",
]
CACHE_COLUMNS = ["L1 miss/op", "LL miss/op", "est. cycles/op"]
COMMAND_COLUMNS = ["command", "instructions", "layout band", "processes"]


def format_count(value: float | None) -> str:
    """A count: thousands separated, one decimal below 100 ("12,345,678", "57.5")."""
    if value is None or not math.isfinite(value):
        return "–"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.1f}"


def band_cell(spread: float, layouts: int, sensitive: bool) -> str:
    """``±0.02% (3 layouts)``, ``layout-sensitive ±3.1% (3 layouts)``, or the layout count
    alone with a single layout."""
    if layouts < 2:
        return "1 layout"
    flag = "layout-sensitive " if sensitive else ""
    return f"{flag}±{spread / 2:.2%} ({layouts} layouts)"


def count_table(rows: Sequence[tuple[str, CountSummary]], footer: Sequence[str] = ()) -> Table:
    """One row per counted benchmark (columns in docs/count.md); with ``--cache-sim``
    three more columns. ``footer``: lines naming Valgrind's version and ASLR."""
    cache = any(s.cache for _, s in rows)
    columns = COLUMNS + (CACHE_COLUMNS if cache else [])
    table = Table(
        "instructions (Callgrind, --count instructions)",
        columns,
        align=["l"] + ["r"] * (len(columns) - 1),
        fold=[KEY, KEY, NOTE, 2, 1, 3] + ([4, 5, KEY] if cache else []),
    )
    for bench_id, s in rows:
        cells = [
            bench_id,
            format_count(s.ir_per_op),
            band_cell(s.band_spread, len(s.process_ir_per_op), s.layout_sensitive),
            format_count(s.fixed_ir_per_op),
            format_count(s.cold_ir),
            f"{s.calls_per_sample:,}",
        ]
        if cache:
            cells += [format_count(s.cache.get(k)) for k in ("l1_misses", "ll_misses")]
            cells.append(format_count(s.cache.get("estimated_cycles")))
        table.rows.append(cells)
    table.footnotes = [
        "instructions/op = instructions executed per call (Ir), counted by Valgrind's "
        "Callgrind: per layout (process), the median of its counted samples minus the "
        "median of the same loop around an empty function, ÷ calls/sample; the median over "
        "layouts",
        "layout band = ± half the spread (max − min) of the layouts' values (each process "
        "its own environment padding, hash seed and heap padding); above "
        f"{LAYOUT_SENSITIVE_SPREAD:.0%} the benchmark is layout-sensitive: a change of "
        "that size is not evidence of a change of work",
        "fixed/op = the subtracted cost of the loop, the call and the client requests per "
        "call; cold = the first call of a process, counted alone (imports and caches it "
        "fills)",
        *(
            [
                "L1/LL miss/op = Valgrind's simulated cache misses per call; est. cycles/op "
                "= an ESTIMATE from that model (L1 hits + 5 × LL hits + 35 × RAM), not "
                "measured cycles: compare it only between runs on one machine"
            ]
            if cache
            else []
        ),
        *footer,
    ]
    return table


def count_records(rows: Sequence[tuple[str, CountSummary]]) -> list[dict[str, Any]]:
    """CSV lines: one per counted benchmark, its figures in base units (Ir counts)."""
    out = []
    for bench_id, s in rows:
        record: dict[str, Any] = {
            "benchmark": bench_id,
            "ir_per_op": s.ir_per_op,
            "band_low_ir_per_op": s.band_low,
            "band_high_ir_per_op": s.band_high,
            "band_spread": s.band_spread,
            "layouts": len(s.process_ir_per_op),
            "layout_sensitive": s.layout_sensitive,
            "fixed_ir_per_op": s.fixed_ir_per_op,
            "cold_ir": s.cold_ir,
            "calls_per_sample": s.calls_per_sample,
            "threshold": s.threshold,
        }
        for key, value in s.cache.items():
            record[f"{key}_per_op"] = value
        out.append(record)
    return out


def command_count_table(
    rows: Sequence[tuple[str, CountSummary]], footer: Sequence[str] = ()
) -> Table:
    """``perflab cmd --count``: one row per command (its counted runs'
    :func:`perflab.analyze.counts.summarize_command_counts`)."""
    table = Table(
        "instructions (Callgrind, --count instructions, children followed)",
        COMMAND_COLUMNS,
        align=["l", "r", "r", "r"],
        fold=[KEY, KEY, NOTE, 1],
    )
    for name, s in rows:
        table.rows.append(
            [
                name,
                format_count(s.ir_per_op),
                band_cell(s.band_spread, len(s.process_ir_per_op), s.layout_sensitive),
                f"{s.command_processes}",
            ]
        )
    table.footnotes = [
        "instructions = instructions executed by one run of the command and every process "
        "it started (Valgrind's Callgrind, --trace-children=yes), the median over the "
        "counted runs; they come after the timed runs and never enter the seconds",
        "layout band = ± half the spread of the counted runs, each with its own environment "
        "padding and PYTHONHASHSEED; processes = processes counted in one run",
        *footer,
    ]
    return table


def count_footer(benchmarks: Sequence[Any]) -> list[str]:
    """The footnote naming how the counts were taken: Valgrind's version, ASLR, and the
    automatic GC's state, read from the raw counts of ``benchmarks``."""
    records = [p.counts for b in benchmarks for p in b.processes if getattr(p, "counts", None)]
    records += [c for b in benchmarks for c in (getattr(b, "counts", None) or [])]
    if not records:
        return []
    versions = sorted({r.valgrind for r in records if r.valgrind})
    aslr = {r.aslr_off for r in records}
    words = [f"counted by Valgrind {', '.join(versions) or '(version unknown)'}"]
    words.append(
        "address-space randomization off (setarch -R)"
        if aslr == {True}
        else "address-space randomization ON for some processes (setarch missing)"
    )
    gc_on = {getattr(r, "gc_enabled", None) for r in records} - {None}
    if gc_on:
        thresholds = {tuple(r.gc_threshold) for r in records if getattr(r, "gc_threshold", None)}
        state = "on" if gc_on == {True} else "off" if gc_on == {False} else "on in some processes"
        shown = ", ".join(str(t) for t in next(iter(thresholds))) if len(thresholds) == 1 else ""
        words.append(f"automatic GC {state}" + (f" (thresholds {shown})" if shown else ""))
    return ["; ".join(words)]


def count_tables(
    rows: Sequence[tuple[str, CountSummary]], benchmarks: Sequence[Any]
) -> list[Table]:
    """The count table of a run or a cmd file (none when nothing was counted)."""
    if not rows:
        return []
    footer = count_footer(benchmarks)
    if any(s.command_processes is not None for _, s in rows):
        return [command_count_table(rows, footer)]
    return [count_table(rows, footer)]


def print_counts(
    rows: Sequence[tuple[str, CountSummary]], benchmarks: Sequence[Any], fmt: str
) -> None:
    """Print the count table (:func:`count_tables`) on stdout in ``fmt``."""
    from perflab.report import console

    if rows:
        console.emit(fmt, lambda: count_tables(rows, benchmarks), lambda: count_records(rows))
