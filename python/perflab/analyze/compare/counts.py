"""Counted benchmarks compared on instructions per op (``--count instructions``).

The row of a benchmark that both files counted: B/A of Ir per op with the layout bands'
envelope as its interval and a threshold never below the bands
(:func:`perflab.analyze.counts.compare_counts`), judged by the same verdict rule as times.
"""

from __future__ import annotations

from perflab.analyze.counts import (
    CountSummary,
    compare_counts,
    summarize_command_counts,
    summarize_counts,
)
from perflab.analyze.decisions import FAILED
from perflab.model import Benchmark
from perflab.model.comparison import Row, Side
from perflab.model.estimate import Estimate

#: the metric and unit of a counted row
INSTRUCTIONS, IR = "instructions", "Ir"


def counted(bench: Benchmark) -> CountSummary | None:
    """A benchmark's count summary: its processes' counts (run) or counted runs (cmd)."""
    if bench.counts:
        return summarize_command_counts(bench.counts)
    return summarize_counts(bench)


def is_counted(bench: Benchmark) -> bool:
    """True when the benchmark holds instruction counts (processes' or counted runs)."""
    return bool(bench.counts) or any(p.counts is not None for p in bench.processes)


def _side(s: CountSummary) -> Side:
    return Side(
        Estimate(s.ir_per_op, s.band_low, s.band_high, 1.0), len(s.process_ir_per_op), s.samples
    )


def count_row(a: Benchmark, b: Benchmark, threshold: float | None) -> Row:
    """The row comparing a counted benchmark's Ir per op in A and B.

    Args:
        a / b: the benchmark in each file (matched by id).
        threshold: the user's explicit threshold (None: derived from the layout bands);
            never used below the bands.

    Returns:
        A row of metric "instructions", unit "Ir", with its verdict (failed when a side
        was not counted); a note names the threshold it was judged at.
    """
    sa, sb = counted(a), counted(b)
    row = Row(a.id, a.kind, INSTRUCTIONS, IR, test_key=f"{a.id} instructions", primary=False)
    result = compare_counts(sa, sb, threshold)
    row.a = _side(sa) if sa is not None else None
    row.b = _side(sb) if sb is not None else None
    row.ratio, row.verdict = result.ratio, result.verdict
    row.notes = list(result.notes)
    if result.verdict != FAILED:
        row.notes.append(f"judged at ±{result.threshold:.2%} on instructions")
    return row
