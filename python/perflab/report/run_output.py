"""The output of ``perflab run`` (and of ``perflab show`` on a run file): tables on stdout."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def print_run(groups: Sequence[Any], fmt: str, verbose: bool = False,
              threshold: float | None = None) -> None:
    """Print a run's tables on stdout as a rich table, Markdown or CSV.

    Args:
        groups: the figures of each group of the run
            (:func:`perflab.analyze.groups.run_groups`).
        fmt: "table", "markdown" or "csv".
        verbose: every caveat of every benchmark in full, instead of one line per kind.
        threshold: the noise threshold the in-run verdicts were judged at, named in their
            footnote (None: no verdicts).
    """
    from perflab.report import console
    from perflab.report.table import run_tables, summary_records

    console.emit(fmt, lambda: run_tables(groups, verbose=verbose, threshold=threshold),
                 lambda: summary_records({g.group: g.summaries for g in groups}))
