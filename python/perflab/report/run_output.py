"""The output of ``perflab run`` (and of ``perflab show`` on a run file): tables on stdout."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any


def print_run(
    groups: Sequence[Any],
    fmt: str,
    verbose: bool = False,
    threshold: float | None = None,
    in_process: Collection[str] = (),
    memory: Sequence[Any] = (),
    quick: bool = False,
) -> None:
    """Print a run's tables on stdout as a rich table, Markdown or CSV.

    Args:
        groups: the figures of each group of the run
            (:func:`perflab.analyze.run.groups.run_groups`).
        fmt: "table", "markdown" or "csv".
        verbose: every caveat of every benchmark in full, instead of one line per kind.
        threshold: the noise threshold the in-run verdicts were judged at, named in their
            footnote (None: no verdicts).
        in_process: ids measured in the calling process (:func:`in_process_ids`).
        memory: the ``--memory`` table's figures, one per benchmark with readings
            (:func:`perflab.analyze.memory.summaries`).
        quick: the run was a ``--quick`` one; its last table says so.
    """
    from perflab.report import console

    console.emit(
        fmt,
        lambda: run_output_tables(groups, memory, verbose, threshold, in_process, quick),
        lambda: run_output_records(groups, memory),
    )


def run_output_tables(
    groups: Sequence[Any],
    memory: Sequence[Any] = (),
    verbose: bool = False,
    threshold: float | None = None,
    in_process: Collection[str] = (),
    quick: bool = False,
) -> list[Any]:
    """The tables of a run (arguments as :func:`print_run`): one per group, then the
    ``--memory`` table when the run had one."""
    from perflab.report.memory_table import memory_tables
    from perflab.report.run_table import run_tables

    tables = run_tables(groups, verbose=verbose, threshold=threshold, in_process=in_process)
    if quick and tables:
        tables[-1].footnotes.insert(0, QUICK_NOTE)
    return tables + memory_tables(memory)


#: The footnote of a ``--quick`` run.
QUICK_NOTE = (
    "quick run (--quick): few processes and a short budget, so the CIs are wider than a "
    "full run's; rerun without --quick before trusting a small difference"
)


def run_output_records(groups: Sequence[Any], memory: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """The CSV lines of a run: one per benchmark, with its ``--memory`` figures."""
    from perflab.report.memory_table import with_memory
    from perflab.report.run_table import summary_records

    return with_memory(summary_records({g.group: g.summaries for g in groups}), memory)


def in_process_ids(settings: dict[str, Any]) -> set[str]:
    """Ids of the benchmarks a results file says were measured in the calling process (the
    pytest plugin's default mode: ``settings["modes"]``), whose cold call is not a fresh
    process's."""
    modes = settings.get("modes") or {}
    return {bench_id for bench_id, mode in modes.items() if mode == "in-process"}
