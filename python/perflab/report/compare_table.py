"""Comparison reports: tables (console, Markdown), CSV records and the JSON document.

Cells are built once from a :class:`perflab.analyze.compare.suite.SuiteComparison`
into neutral :class:`perflab.report.table.Table` objects, so the terminal and
the pull-request Markdown say the same thing.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

from perflab.model.comparison import SPEED_NORMALIZED, VERDICTS, Row, Side, SuiteComparison
from perflab.model.estimate import Estimate
from perflab.report.compare_memory_table import memory_counts_cell, memory_table
from perflab.report.count_table import format_count
from perflab.report.table import KEY, NOTE, Table, estimate_cell
from perflab.units import format_rate, format_ratio, format_reference, format_time


def format_p(p: float) -> str:
    """A p- or q-value in 2 significant digits, "<0.001" below, "–" when not computed."""
    if p is None or not math.isfinite(p):
        return "–"
    return "<0.001" if p < 0.001 else f"{p:.2g}"


def _value(side: Side | None, unit: str) -> str:
    if side is None or not math.isfinite(side.value):
        return "–"
    fmt = {"1/s": format_rate, "ref": format_reference, "Ir": format_count}.get(unit, format_time)
    est = side.estimate
    if math.isfinite(est.ci_low) and math.isfinite(est.ci_high) and est.value:
        return estimate_cell(est.value, est.ci_low, est.ci_high, fmt)  # low–high when lopsided
    return fmt(side.value)


def _ratio(estimate: Estimate | None) -> str:
    if estimate is None:
        return "–"
    high = estimate.ci_high if math.isfinite(estimate.ci_high) else None
    return format_ratio(estimate.value, estimate.ci_low if high else None, high)


def _units(row: Row) -> str:
    if row.a is None or row.b is None:
        return "–"
    noun = {"python": "proc", "command": "runs", "http": "req"}.get(row.kind, "")
    return f"{row.a.units:,}/{row.b.units:,} {noun}".strip()


def _row_cells(row: Row, shared: Sequence[str] = ()) -> list[str]:
    notes = [f"[{shared.index(n) + 1}]" if n in shared else n for n in _merged_sides(row.notes)]
    return [
        row.id,
        _value(row.a, row.unit),
        _value(row.b, row.unit),
        _ratio(row.ratio),
        format_p(row.p_value),
        format_p(row.q_value),
        "–" if row.metric == SPEED_NORMALIZED else row.verdict,
        _units(row),
        "; ".join(notes),
    ]


#: A note carried by at least this many rows is numbered and said once under the table.
SHARED_NOTE_ROWS = 3


#: A note longer than this (characters) is numbered and said under the table too: a
#: benchmark's error message wrapped a row to twenty lines at 80 columns.
LONG_NOTE = 40


def _merged_sides(notes: Sequence[str]) -> list[str]:
    """ "A: x" and "B: x" with the same x (one error on both sides) said once: "A and B: x"."""
    a = [n for n in notes if n.startswith("A: ")]
    b = [n for n in notes if n.startswith("B: ")]
    if len(a) == 1 and len(b) == 1 and a[0][3:] == b[0][3:]:
        return [f"A and B: {a[0][3:]}" if n == a[0] else n for n in notes if n != b[0]]
    return list(notes)


def shared_notes(rows: Sequence[Row]) -> list[str]:
    """The notes that :data:`SHARED_NOTE_ROWS` or more rows carry (e.g. "one run per side:
    …" on every latency row of an http compare), or longer than :data:`LONG_NOTE`
    characters (an error message), in order of first appearance: each row
    shows its number, ``[1]``, and the note is said once under the table instead of being
    wrapped into every row's notes cell."""
    counts: dict[str, int] = {}
    for row in rows:
        for note in dict.fromkeys(_merged_sides(row.notes)):
            counts[note] = counts.get(note, 0) + 1
    return [n for n, c in counts.items() if c >= SHARED_NOTE_ROWS or len(n) > LONG_NOTE]


def summary_table(suite: SuiteComparison, name_a: str, name_b: str) -> Table:
    """The suite's summary: verdict counts, geometric mean, missing benchmarks, cost.

    Footnotes hold the environment and suite-wide warnings in plain words.
    """
    counts = ", ".join(f"{suite.counts.get(v, 0)} {v}" for v in VERDICTS)
    rows = [
        ["verdicts", counts],
        ["geometric mean B/A", _geomean_cell(suite)],
        ["significant (Benjamini–Hochberg q < 0.05)", _significant_cell(suite)],
        *([["memory verdicts", memory_counts_cell(suite)]] if suite.memory_counts else []),
        [f"only in A ({name_a})", ", ".join(suite.only_in_a) or "none"],
        [f"only in B ({name_b})", ", ".join(suite.only_in_b) or "none"],
    ]
    rows += [[f"cost of {side}", _cost_cell(cost)] for side, cost in suite.cost.items()]
    title = (
        f"compare: B = {name_b} against A = {name_a} "
        f"(noise threshold ±{suite.threshold:.1%}, {suite.confidence:.0%} CI)"
    )
    return Table(
        title,
        ["what", "result"],
        rows,
        ["l", "l"],
        footnotes=[*suite.environment, *suite.warnings],
        fold=[KEY, NOTE],
    )


def _significant_cell(suite: SuiteComparison) -> str:
    """How many of the suite's tests (one per benchmark, or per HTTP step: rows sharing a
    test share its q) have q < 0.05: "3 of 9 tests", never more than there are."""
    tests: dict[str, float] = {}
    for row in suite.rows:
        if math.isfinite(row.q_value) and not row.is_memory:
            tests.setdefault(_test_of(row), row.q_value)
    if not tests:
        return "–"
    hits = sum(q < 0.05 for q in tests.values())
    return f"{hits} of {len(tests)} test" + ("" if len(tests) == 1 else "s")


def _test_of(row: Row) -> str:
    """The test a row's q belongs to, from what a comparison document keeps (its id and
    metric; ``Row.test_key`` is not saved): an HTTP step's percentiles share their step's
    test, a (CPU ÷ reference) row its benchmark's, an instruction count is its own."""
    if row.metric == SPEED_NORMALIZED:
        return row.id.removesuffix(" (CPU ÷ reference)")
    if row.kind == "http" and row.metric.startswith("p"):
        return row.id.removesuffix(f" {row.metric}")
    return f"{row.id} {row.metric}" if row.metric == "instructions" else row.id


def verdict_rule(suite: SuiteComparison) -> str:
    """The one line saying how every verdict of the table was reached."""
    paired = any(r.pairs for r in suite.rows)
    http = any(r.kind == "http" for r in suite.rows)
    line = (
        ("verdict, one per step and figure" if http else "verdict, one per benchmark")
        + f": from the CI of B/A: faster or slower when it lies wholly beyond "
        f"±{suite.threshold:.1%}, same when wholly within, else inconclusive; "
        + ("B/A is the paired ratio where A and B were measured together, " if paired else "")
        + ("the seconds' ratio otherwise" if paired else "")
        + ("" if paired else "B/A of the rate and of each latency percentile" if http else "")
        + ("" if paired or http else "B/A of the seconds")
    )
    if suite.machine_speed is not None:
        line += ", held at inconclusive because the machine's speed differed between the runs"
    if any(r.metric == SPEED_NORMALIZED for r in suite.rows):
        line += "; the (CPU ÷ reference) rows are for reading beside the seconds: no verdict"
    return line


def _geomean_cell(suite: SuiteComparison) -> str:
    if suite.geomean is None:
        return "–"
    return f"{_ratio(suite.geomean)} over {suite.geomean_over}: {suite.geomean_verdict}"


def _cost_cell(cost: dict[str, int]) -> str:
    parts = [f"{cost['benchmarks']:,} benchmarks"]
    parts += [f"{cost[k]:,} {k}" for k in ("processes", "samples", "requests") if cost.get(k)]
    return ", ".join(parts)


def rows_table(suite: SuiteComparison) -> Table:
    """One row per compared metric: A, B (value ± CI), B/A (CI), p, q, verdict, units, notes
    (a note many rows carry is numbered, its words under the table: :func:`shared_notes`).

    On a narrow terminal the columns fold away in this order: units A/B, p, q, A, B (the
    new value stays longest);
    benchmark, B/A, verdict and notes always show.
    """
    columns = [
        "benchmark",
        "A ± CI",
        "B ± CI",
        "B/A (95% CI)",
        "p",
        "q (BH)",
        "verdict",
        "units A/B",
        "notes",
    ]
    table = Table(
        "benchmarks",
        columns,
        align=["l", "r", "r", "r", "r", "r", "l", "r", "l"],
        fold=[KEY, 4, 5, KEY, 2, 3, KEY, 1, NOTE],
    )
    timed = [r for r in suite.rows if not r.is_memory]  # memory rows: their own table
    shared = shared_notes(timed)
    table.rows = [_row_cells(r, shared) for r in timed]
    table.footnotes = [f"[{k}] {note}" for k, note in enumerate(shared, 1)]
    if any(r.ratio is not None for r in suite.rows):
        table.footnotes.append(verdict_rule(suite))
    return table


def comparison_tables(suite: SuiteComparison, name_a: str = "A", name_b: str = "B") -> list[Table]:
    """The summary table, the per-benchmark table, then the memory table where memory
    figures were compared (:func:`perflab.report.compare_memory_table.memory_table`)."""
    memory = memory_table(suite)
    tables = [summary_table(suite, name_a, name_b), rows_table(suite)]
    return tables + ([memory] if memory is not None else [])


def csv_records(suite: SuiteComparison) -> list[dict[str, Any]]:
    """Flat records for CSV, one per row, numbers in base units (s or 1/s)."""
    out = []
    for row in suite.rows:
        record: dict[str, Any] = {
            "id": row.id,
            "kind": row.kind,
            "metric": row.metric,
            "unit": row.unit,
        }
        for name, side in (("a", row.a), ("b", row.b)):
            record[f"{name}_value"] = side.value if side else ""
            record[f"{name}_ci_low"] = side.estimate.ci_low if side else ""
            record[f"{name}_ci_high"] = side.estimate.ci_high if side else ""
        ratio = row.ratio
        record.update(
            {
                "ratio": ratio.value if ratio else "",
                "ratio_ci_low": ratio.ci_low if ratio else "",
                "ratio_ci_high": ratio.ci_high if ratio else "",
                "p_value": row.p_value,
                "q_value": row.q_value,
                "verdict": row.verdict,
                "notes": "; ".join(row.notes),
            }
        )
        if row.difference is not None:  # memory rows: B − A, in the row's unit
            record["difference"] = row.difference.value
            record["difference_ci_low"] = row.difference.ci_low
            record["difference_ci_high"] = row.difference.ci_high
        out.append(record)
    out += [{"id": key, "verdict": "only in A"} for key in suite.only_in_a]
    out += [{"id": key, "verdict": "only in B"} for key in suite.only_in_b]
    return out


def print_comparison(
    suite: SuiteComparison, name_a: str, name_b: str, fmt: str, json_to: Any, fail_on: list[str]
) -> list[str]:
    """Print the comparison (and write its JSON to the checked destination ``json_to``,
    a :class:`perflab.files.Destination` or None); return the ids that tripped the gate.

    Raises:
        SaveError: the JSON could not be written (after the table is printed).
    """
    from perflab.files import Deferred, save
    from perflab.model import json_document
    from perflab.report import console

    tripped = suite.tripped(fail_on)
    later = Deferred()
    if json_to is not None:
        document = suite.to_dict(name_a, name_b, fail_on, tripped)
        later.run(save, json_to, json_document(document), "comparison")
    if json_to is None or not json_to.stdout:
        console.emit(
            fmt, lambda: comparison_tables(suite, name_a, name_b), lambda: csv_records(suite)
        )
    later.raise_()
    return tripped


def gate(
    tripped: list[str],
    fail_on: list[str],
    noun: str = "benchmark(s)",
    held: str = "",
    rule: str = "",
) -> int:
    """Exit code of the CI gate: 1 when something tripped, else 0. One stderr line (also
    appended in bold to the GitHub Actions step summary) names ``tripped`` (what ``noun``
    counts) and says ``held``: why the gate was not applied to some benchmarks
    (:meth:`SuiteComparison.held_reason`), when there is either. ``rule`` names the gate
    ("--max-rss 200 MB"); by default "--fail-on" and its verdicts."""
    if not tripped and not held:
        return 0
    from perflab.report.console import append_step_summary
    from perflab.report.escape import markdown_text, terminal

    words = f"gate: {rule or '--fail-on ' + ','.join(fail_on)}"
    if tripped:
        more = f" and {len(tripped) - 5} more" if len(tripped) > 5 else ""
        words += f" tripped by {len(tripped)} {noun}: " + ", ".join(tripped[:5]) + more
    if held:
        words += ("; " if tripped else " ") + held
    sys.stderr.write(terminal(words, one_line=True) + "\n")
    append_step_summary(f"**{markdown_text(words)}**\n\n")
    return 1 if tripped else 0


def rss_gate(
    peaks: Sequence[tuple[str, float | None]],
    limit: float | None,
    noun: str,
    option: str = "--max-rss",
) -> int:
    """The memory limit gate (``cmd --max-rss``, ``run --max-rss``, pytest's
    ``--perflab-max-rss``): exit code 1, with one ``gate:`` line on stderr naming each
    ``label (peak)``, when a peak RSS is above ``limit``; 0 otherwise or without a limit.

    Args:
        peaks: (label, peak resident set size in bytes) of each gated thing; a peak that
            is None or NaN (not read) never trips.
        limit: the limit in bytes, or None (no gate).
        noun: what the labels name ("command(s)", "benchmark(s)").
        option: the option the ``gate:`` line names.
    """
    if limit is None:
        return 0
    from perflab.units import format_bytes

    over = [
        f"{label} ({format_bytes(peak)})"
        for label, peak in peaks
        if peak is not None and not math.isnan(peak) and peak > limit
    ]
    return gate(over, [], noun, rule=f"{option} {format_bytes(limit)}")
