"""The HTML report's memory section: what ``--memory`` and ``--watch`` recorded, over time.

* ``run --memory``: the memory table as the terminal prints it, each worker's RSS from
  spawn to exit, and each worker's Python heap over its heap pass
  (:mod:`perflab.engines.run.heap`);
* ``cmd --memory``: each run's summed RSS of the command and its descendants (the
  table's RSS columns are in the cmd section);
* ``http --watch``: the watched processes' RSS over the sweep, dotted lines at the
  steps' starts.

The series are the PNG charts' (:mod:`perflab.report.memory_chart`), drawn as inline
SVG by :func:`perflab.report.html.charts.memory_figure`. A file without timelines
adds no section.
"""

from __future__ import annotations

from collections.abc import Sequence

from perflab.analyze.results_figures import ResultsFigures
from perflab.model import Results
from perflab.report import memory_chart
from perflab.report.html import charts
from perflab.report.html.page import Section, figure_html, table_html


def memory_sections(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """The memory section of a run, cmd or http results file ([] when it has no memory
    timelines: not run with --memory or --watch); ``figures``: the file's computed figures
    (:func:`perflab.analyze.results_figures.results_figures`), whose ``memory`` summaries
    fill the run's memory table."""
    blocks: list[str] = []
    if results.kind == "run":
        from perflab.report.memory_table import memory_tables

        blocks += [table_html(t) for t in memory_tables(figures.memory)]
        if series := memory_chart.process_series(results.benchmarks):
            blocks.append(
                _figure(
                    series,
                    (),
                    memory_chart.RUN_RSS,
                    "RSS",
                    "memory",
                    "each worker's resident memory from spawn to exit, one "
                    "colour per benchmark (a leak climbs through the timed "
                    "samples)",
                )
            )
        if heap := memory_chart.heap_series(results.benchmarks):
            blocks.append(
                _figure(
                    heap,
                    (),
                    memory_chart.RUN_HEAP,
                    "heap",
                    "heap",
                    "each worker's Python heap (tracemalloc's traced bytes "
                    "above the baseline) over the heap pass's calls, after "
                    "timing; flat when nothing is kept",
                )
            )
    elif results.kind == "cmd":
        if series := memory_chart.cmd_series(results.benchmarks):
            blocks.append(
                _figure(
                    series,
                    (),
                    memory_chart.CMD_RSS,
                    "RSS",
                    "memory",
                    "each run's summed resident memory of the command and "
                    "its descendants, from spawn to exit",
                )
            )
    elif results.kind == "http" and results.benchmarks:
        series, starts = memory_chart.sweep_series(results.benchmarks[0].steps)
        if series:
            blocks.append(
                _figure(
                    series,
                    starts,
                    memory_chart.WATCHED,
                    "RSS",
                    "memory",
                    "each watched process's resident memory over the sweep; "
                    "dotted lines: the steps' starts",
                )
            )
    return [Section(f"memory: {name}", blocks)] if blocks else []


def _figure(
    series: list[memory_chart.Series],
    boundaries: Sequence[float],
    titles: tuple[str, str],
    y_label: str,
    kind: str,
    caption: str,
) -> str:
    """One memory chart as a page figure (``data-chart`` = ``kind``)."""
    return figure_html(
        charts.to_svg(charts.memory_figure(series, boundaries, titles[0], titles[1], y_label)),
        caption,
        kind,
    )
