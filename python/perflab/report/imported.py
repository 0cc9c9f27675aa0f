"""What ``show``, ``compare`` and ``fit`` print about a peer's file (see
:mod:`perflab.interop`): the lines naming what the import can't carry, and the table of a
pytest-benchmark file that holds summary statistics only."""

from __future__ import annotations

import math
import sys
from typing import Any

from perflab.interop import note_lines
from perflab.interop.pytest_benchmark import STATS_ONLY, name_and_params
from perflab.report.escape import terminal
from perflab.report.table import Table
from perflab.units import format_time


def print_notes(results: Any, fmt: str) -> None:
    """Print :func:`perflab.interop.note_lines` before a command's tables: on stdout for a
    table or Markdown (as a list), on stderr for CSV (stdout is then pure CSV)."""
    lines = note_lines(results)
    if not lines:
        return
    out = sys.stderr if fmt == "csv" else sys.stdout
    bullet = "- " if fmt == "markdown" else ""
    for line in lines:
        out.write(bullet + terminal(line, one_line=True) + "\n")
    if fmt == "markdown":
        out.write("\n")


def stats_table(document: dict[str, Any], where: str) -> Table:
    """The table ``show`` prints for a pytest-benchmark file without raw data
    (``perflab show``): pytest-benchmark's own figures per
    iteration, with the CI column marked n/a (not computable without the rounds)."""

    def cell(value: Any) -> str:
        return (
            format_time(float(value))
            if isinstance(value, (int, float)) and math.isfinite(value)
            else "–"
        )

    table = Table(
        f"pytest-benchmark statistics from {where} (no raw data)",
        [
            "benchmark",
            "group",
            "median",
            "95% CI",
            "mean",
            "stddev",
            "min",
            "max",
            "rounds",
            "iterations",
        ],
        align=["l", "l"] + ["r"] * 8,
    )
    for raw in document["benchmarks"]:
        s = raw["stats"]
        name, params = name_and_params(raw)
        label = " ".join([name] + [f"{k}={v}" for k, v in params.items()])
        table.rows.append(
            [
                label,
                str(raw.get("group") or ""),
                cell(s.get("median")),
                "n/a",
                cell(s.get("mean")),
                cell(s.get("stddev")),
                cell(s.get("min")),
                cell(s.get("max")),
                str(s.get("rounds", "–")),
                str(s.get("iterations", "–")),
            ]
        )
    table.footnotes = [
        STATS_ONLY + "; 95% CI n/a: the file keeps no rounds to resample "
        "(re-run pytest with --benchmark-json FILE or --benchmark-save-data)",
        "figures are pytest-benchmark's, per iteration, from rounds run in one process",
    ]
    return table
