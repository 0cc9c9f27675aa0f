"""Short per-row notes with one legend: the notes column of ``run``'s tables holds one-letter
codes (``B U M``), explained once under the last table; a condition every row shares is
taken out of the rows and said once instead.

A row's notes used to spell every caveat ("budget hit, unstable, busy machine, 33%
outliers"), which wrapped a row to five lines at 80 columns and repeated the same words on
every row. pytest's one-letter outcomes (``.``, ``F``, ``s``) with a summary are the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.run.summary import CAVEATS
from perflab.report.table import Table

#: What a code stands for, in legend order: code → (name, what it means in plain words).
#: Caveat kinds (:data:`perflab.analyze.run.summary.CAVEATS`) share their meaning with
#: ``--verbose``; the stop reasons and outliers are the notes' own.
CODES: dict[str, tuple[str, str]] = {
    "B": ("budget hit", "the time budget ran out before the CI was as narrow as asked"),
    "P": ("max processes", "--max-processes was reached before the CI was as narrow as asked"),
    "I": ("interrupted", "stopped by Ctrl-C; the samples so far are kept"),
    "U": ("unstable", CAVEATS["unstable"][0]),
    "M": ("busy machine", CAVEATS["busy machine"][0]),
    "O": ("outliers", "over 5% of the samples are outliers (beyond 3 MAD of the median)"),
    "L": ("near the loop cost", CAVEATS["near the loop cost"][0]),
    "C": ("too short for the clock", CAVEATS["too short for the clock"][0]),
    "G": ("GC-dominated", CAVEATS["GC-dominated"][0]),
    "X": ("preempted samples excluded", "samples another program interrupted, left out"),
    "K": ("preempted samples kept", CAVEATS["preempted samples kept"][0]),
    "S": ("samples excluded", CAVEATS["samples excluded"][0]),
    "T": ("clock step between samples", "the system clock was stepped during the run"),
}
_BY_NAME = {name: code for code, (name, _) in CODES.items()}
_STOP = {"budget": "B", "max-processes": "P", "interrupted": "I"}
#: Words that stay words in the notes column (not codes): said plainly where they apply.
WORDS = ("FAILED", "baseline")


def row_codes(summaries: Sequence[Any], outliers_over: float = 0.05) -> list[str]:
    """The codes of one row from the summaries it shows (one, or a staged row's stages):
    the union of their stop reasons, caveat kinds ("precision not reached" is left out: the
    CI shows it) and many outliers, in :data:`CODES` order; a kind without a code keeps
    its name. Returns e.g. ``["B", "U", "M"]``."""
    found: set[str] = set()
    for s in summaries:
        if s.stop_reason == "failed":
            return ["FAILED"]
        if s.stop_reason in _STOP:
            found.add(_STOP[s.stop_reason])
        for c in s.warnings:
            if c.kind != "precision not reached":
                found.add(_BY_NAME.get(c.kind, c.kind))
        if s.samples and s.outliers > outliers_over * s.samples:
            found.add("O")
    order = list(CODES)
    return sorted(found, key=lambda c: (order.index(c) if c in order else 99, c))


#: ``perflab cmd``'s codes: its stop reasons and caveats (:data:`perflab.analyze.cmd.CMD_CAVEATS`).
CMD_CODES: dict[str, tuple[str, str]] = {
    "B": ("budget hit", "the time budget ran out before the CI was as narrow as asked"),
    "R": ("max runs", "--max-runs was reached before the CI was as narrow as asked"),
    "I": ("interrupted", "stopped by Ctrl-C; the runs so far are kept"),
    "U": ("unstable", "runs vary by more than 5% (MAD/median)"),
    "O": ("outliers", "some runs are outliers (beyond 3 MAD of the median)"),
    "S": ("spawn-bound", "starting an empty process takes a large share of the time measured"),
}


def legend(used: Sequence[str], codes: dict[str, tuple[str, str]], verbose: bool) -> str:
    """The one legend line of the codes ``used``, in ``codes``' order; a caveat kind
    without a code (N+1, heavy tail) is said with its meaning."""
    order = list(codes)
    names = [
        f"{c} {codes[c][0]}" if c in codes else f"{c} ({CAVEATS[c][0]})" if c in CAVEATS else c
        for c in sorted(used, key=lambda c: order.index(c) if c in order else 99)
    ]
    more = "" if verbose else " (each explained in --verbose and in README's Reading the output)"
    return "notes: " + " · ".join(names) + more


def finish(tables: Sequence[Table], spreads: Sequence[float], verbose: bool = False) -> None:
    """Turn the notes columns of ``tables`` (cells of space-separated codes and words) into
    their final form, in place: a code on every measured row (two rows or more) is taken
    out of the rows and said once; the legend of the codes left, and the whole-run lines,
    go under the last table.

    Args:
        tables: the run's tables; those without a "notes" column are left alone.
        spreads: every benchmark's process spread (SD of the log of the processes'
            medians, :attr:`Summary.process_spread`), for the machine-speed line.
        verbose: the per-benchmark lists are printed too (their lines come from the
            tables' own footnotes); the legend is the same.
    """
    cells = [
        (table, row, table.columns.index("notes"))
        for table in tables
        if "notes" in table.columns
        for row in table.rows
    ]
    measured = [set(row[i].split()) for _, row, i in cells if "FAILED" not in row[i].split()]
    everywhere = set.intersection(*measured) - set(WORDS) if len(measured) >= 2 else set()
    used: list[str] = []
    for _, row, i in cells:
        kept = [c for c in row[i].split() if c not in everywhere]
        row[i] = " ".join(kept)
        used += [c for c in kept if c not in used and c not in WORDS]
    if not tables or not (used or everywhere or spreads):
        return
    lines = _whole_run(everywhere, spreads)
    if used:
        lines.append(legend(used, CODES, verbose))
    tables[-1].footnotes += lines


def _whole_run(everywhere: set[str], spreads: Sequence[float]) -> list[str]:
    """The conditions that held for the whole run, one line each."""
    lines = []
    finite = sorted(x for x in spreads if math.isfinite(x))
    if finite and finite[len(finite) // 2] > 0.05:
        lines.append(
            f"this machine's speed varied by about ±{finite[len(finite) // 2]:.0%} between "
            "processes (median over benchmarks), so the CIs are wide: see perflab doctor; "
            "ratios measured paired (docs/compare.md) are unaffected"
        )
    order = list(CODES)
    for code in sorted(everywhere, key=lambda c: order.index(c) if c in order else 99):
        name, meaning = CODES.get(code, (code, ""))
        lines.append(f"every benchmark: {name}" + (f": {meaning}" if meaning else ""))
    return lines
