"""The output of ``perflab run`` (and of ``perflab show`` on a run file): tables on stdout."""

from __future__ import annotations

from typing import Any


def print_run(results: Any, grouped: dict[str, Any], fmt: str, verbose: bool = False) -> None:
    """Print a run's tables on stdout as a rich table, Markdown or CSV.

    Args:
        results: the :class:`perflab.model.Results` of a run.
        grouped: its summaries by group (:func:`perflab.analyze.summary.summarize_benchmarks`).
        fmt: "table", "markdown" or "csv".
        verbose: every caveat of every benchmark in full, instead of one line per kind.
    """
    from perflab.report import console
    from perflab.report.table import summary_records

    console.emit(fmt, lambda: run_output_tables(results, grouped, verbose),
                 lambda: summary_records(grouped))


def run_output_tables(results: Any, grouped: dict[str, Any], verbose: bool = False
                      ) -> list[Any]:
    """The tables of a run (:func:`perflab.report.table.run_tables`), its verdicts' footnote
    naming the threshold the run was judged at."""
    from perflab.report.table import run_tables

    return run_tables(results.benchmarks, grouped, verbose=verbose,
                      threshold=results.settings.get("threshold"))
