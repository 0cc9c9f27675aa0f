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
    from perflab.report.memory_table import memory_tables, with_memory
    from perflab.report.table import run_tables, summary_records

    console.emit(fmt, lambda: run_tables(results.benchmarks, grouped, verbose=verbose)
                 + memory_tables(results.benchmarks),
                 lambda: with_memory(summary_records(grouped), results.benchmarks))
