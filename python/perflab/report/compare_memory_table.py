"""The memory table of a comparison: allocations, RSS peak and growth of B against A.

Rendered from the memory rows of a :class:`perflab.model.comparison.SuiteComparison`
(computed by :mod:`perflab.analyze.compare.memory`), below the time table of
``perflab compare``, ``run --compare-to`` and the pytest plugin's gate.
"""

from __future__ import annotations

import math

from perflab.analyze.compare.memory import FLOORS, GROWTH_METRICS
from perflab.model.comparison import MEMORY_VERDICTS, SAME, Row, Side, SuiteComparison
from perflab.model.estimate import Estimate
from perflab.report.table import KEY, NOTE, Table, estimate_cell
from perflab.units import format_bytes, format_ratio, significant

#: Up to this many memory rows every row is shown; above it, only those not "same" (the
#: others counted in a footnote; ``--json`` and ``--csv`` hold them all).
ALL_ROWS_UP_TO = 12


def floors_text(server: bool = False) -> str:
    """The memory rule's absolute floors in words (:data:`FLOORS`), for the title;
    ``server``: with the floor of http ``--watch``'s server RSS peak."""
    watched = f", ±{FLOORS['server RSS peak'] / 1024**2:g} MiB server RSS" if server else ""
    return (
        f"±{format_bytes(FLOORS['allocated/op'])}/op, ±{FLOORS['allocs/op']:g} block/op, "
        f"±{FLOORS['RSS peak'] / 1024:g} KiB RSS{watched}; growth: the leak rule's floor"
    )


def format_amount(value: float, unit: str) -> str:
    """A memory figure in its unit: bytes as kB/MB, blocks as a number, "–" for NaN."""
    if not math.isfinite(value):
        return "–"
    if unit == "B":
        return format_bytes(value)
    return f"{significant(value)} {unit}"


def _side(side: Side | None, unit: str) -> str:
    if side is None or not math.isfinite(side.value):
        return "–"
    est = side.estimate
    if math.isfinite(est.ci_low) and math.isfinite(est.ci_high) and est.ci_low != est.ci_high:
        return estimate_cell(est.value, est.ci_low, est.ci_high, lambda v: format_amount(v, unit))
    return format_amount(side.value, unit)


def _difference(diff: Estimate | None, unit: str) -> str:
    if diff is None or not math.isfinite(diff.value):
        return "–"

    def signed(v: float) -> str:
        return ("+" if v > 0 else "−" if v < 0 else "±") + format_amount(abs(v), unit)

    if math.isfinite(diff.ci_low) and math.isfinite(diff.ci_high) and diff.ci_low != diff.ci_high:
        return f"{signed(diff.value)} ({signed(diff.ci_low)} to {signed(diff.ci_high)})"
    return signed(diff.value)


def _ratio(row: Row) -> str:
    if row.ratio is None or row.metric in GROWTH_METRICS:
        return "–"
    est = row.ratio
    if est.ci_low == est.ci_high:  # every unit alike on both sides (allocations repeat)
        return format_ratio(est.value)
    high = est.ci_high if math.isfinite(est.ci_high) else None
    return format_ratio(est.value, est.ci_low if high else None, high)


def memory_counts_cell(suite: SuiteComparison) -> str:
    """ "1 more, 0 less, 0 inconclusive, 5 same, 0 failed" of the memory rows."""
    return ", ".join(f"{suite.memory_counts.get(v, 0)} {v}" for v in MEMORY_VERDICTS)


def memory_table(suite: SuiteComparison) -> Table | None:
    """One row per memory figure of each benchmark: A and B (median ± CI over processes
    or runs), B/A (CI), B − A (CI), verdict (more, less, same, inconclusive), units A/B
    and notes; None when no benchmark has memory figures on both sides. The title
    states the rule's thresholds. Narrow terminals fold units, A, B and B/A, in order.
    """
    rows = [r for r in suite.rows if r.is_memory]
    if not rows:
        return None
    shown = rows if len(rows) <= ALL_ROWS_UP_TO else [r for r in rows if r.verdict != SAME]
    server = any(r.metric == "server RSS peak" for r in rows)
    table = Table(
        f"memory (noise threshold ±{suite.threshold:.1%} of B/A and {floors_text(server)})",
        [
            "benchmark",
            "figure",
            "A ± CI",
            "B ± CI",
            "B/A (95% CI)",
            "B − A (95% CI)",
            "verdict",
            "units A/B",
            "notes",
        ],
        [
            [
                r.id,
                r.metric,
                _side(r.a, r.unit),
                _side(r.b, r.unit),
                _ratio(r),
                _difference(r.difference, r.unit),
                r.verdict,
                f"{r.a.units:,}/{r.b.units:,}" if r.a and r.b else "–",
                "; ".join(r.notes),
            ]
            for r in shown
        ],
        ["l", "l", "r", "r", "r", "r", "l", "r", "l"],
        fold=[KEY, KEY, 2, 3, 4, KEY, KEY, 1, NOTE],
    )
    hidden = len(rows) - len(shown)
    if hidden:
        table.footnotes.append(
            f"{hidden} more memory figures are the same within the thresholds (not shown; "
            "--json and --csv hold every row)"
        )
    table.footnotes.append(
        "more/less: B's CI of B/A and of B − A both beyond the thresholds; growth per "
        "1,000 ops is judged on B − A alone, against the leak rule's floor "
        "(docs/compare.md, 'Memory compared like time')"
    )
    if server:
        table.footnotes.append(
            "server RSS peak = the highest summed RSS of the processes http --watch read "
            "(every 100 ms) during the step; one run, one reading per side: no CI, the "
            "rule is applied to the two values"
        )
    return table
