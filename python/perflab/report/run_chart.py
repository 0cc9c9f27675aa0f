"""``--chart PNG`` of ``perflab run``, ``perflab cmd`` and ``perflab compare``.

The same figures as the HTML report (:mod:`perflab.report.html.charts`), written as
PNG: ``run`` draws every benchmark's samples (box) and per-process medians (dots), and
with ``--memory`` each worker's RSS timeline and Python heap under them;
``cmd`` each command's wall time per run (with ``--memory``, each run's RSS timeline
under them); ``compare`` a forest plot of B/A with its
95% CI per compared row, the noise threshold's "same" band shaded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perflab.report import memory_chart
from perflab.report.html import charts
from perflab.report.notice import tell


def distribution(bench: Any, summary: Any) -> tuple[list[float], list[float]]:
    """What a run's distribution chart draws for one benchmark: (every sample its median
    counted, seconds per op; each worker process's median, seconds per op, from its
    summary). Computes nothing: the samples are those the summary's statistics counted
    (:func:`perflab.analyze.run.summary.timing_groups`), the medians the summary's.

    Args:
        bench: a python-engine :class:`perflab.model.Benchmark`.
        summary: its :class:`perflab.analyze.run.summary.Summary`.
    """
    from perflab.analyze.run.summary import timing_groups

    return (
        [float(v) for group in timing_groups(bench) for v in group],
        list(summary.process_medians_s),
    )


def run_chart(benches: Sequence[Any], summaries: Sequence[Any], path: str | Path) -> Path:
    """The run's distributions: one row per benchmark that measured something.

    Args:
        benches: the run's python-engine benchmarks.
        summaries: their :class:`perflab.analyze.run.summary.Summary` objects (any order; the
            run's, e.g. :func:`perflab.analyze.results_figures.run_figures`).
        path: the PNG to write.

    Raises:
        ValueError: no benchmark has samples.
        OSError: the file can't be written.
    """
    by_id = {s.id: s for s in summaries}
    rows = [(b.id, *distribution(b, by_id[b.id])) for b in benches if b.id in by_id]
    rows = [r for r in rows if r[1]]
    if not rows:
        raise ValueError("no benchmark measured anything to chart")
    fig = charts.distribution_figure(
        "time per op: samples (box) and per-process medians (dots)",
        [r[0] for r in rows],
        [r[1] for r in rows],
        [r[2] for r in rows],
        "per-process median",
    )
    if series := memory_chart.process_series(benches):  # run --memory: RSS under them
        memory_chart.add_memory_panel(fig, series, (), *memory_chart.RUN_RSS)
    if heap := memory_chart.heap_series(benches):  # ... and the Python heap
        memory_chart.add_memory_panel(fig, heap, (), *memory_chart.RUN_HEAP, y_label="heap")
    return charts.save_png(fig, path)


def cmd_chart(benches: Sequence[Any], path: str | Path) -> Path:
    """Each command's wall times per run (box and dots).

    Raises:
        ValueError: no command has a timed run.
        OSError: the file can't be written.
    """
    from perflab.analyze.cmd import timed_runs

    rows = [(b.label, [r.wall_ns * 1e-9 for r in timed_runs(b)]) for b in benches]
    rows = [r for r in rows if r[1]]
    if not rows:
        raise ValueError("no command has a timed run to chart")
    walls = [r[1] for r in rows]
    fig = charts.distribution_figure(
        "wall time per run", [r[0] for r in rows], walls, walls, "run", "wall time per run"
    )
    if series := memory_chart.cmd_series(benches):  # cmd --memory: each run's tree RSS
        memory_chart.add_memory_panel(fig, series, (), *memory_chart.CMD_RSS)
    return charts.save_png(fig, path)


def compare_chart(suite: Any, name_a: str, name_b: str, path: str | Path) -> Path:
    """A forest plot of B/A per compared row with the ±threshold band.

    Args:
        suite: a :class:`perflab.analyze.compare.suite.SuiteComparison`.
        name_a / name_b: the two sides' names, for the title.
        path: the PNG to write.

    Raises:
        ValueError: no row has a ratio.
        OSError: the file can't be written.
    """
    rows = [
        r
        for r in suite.rows
        if r.ratio is not None and math.isfinite(r.ratio.value) and not r.is_memory
    ]
    if not rows:
        raise ValueError("no compared row has a ratio to chart")
    names = [r.id if r.metric in ("time", "") else f"{r.id} {r.metric}" for r in rows]
    title, names, (ratios, rows) = charts.first_rows(
        f"B = {name_b} against A = {name_a}", names, [r.ratio for r in rows], rows
    )
    fig = charts.forest_figure(title, names, ratios, "A")
    ax = fig.axes[0]
    t = suite.threshold
    ax.axvspan(1 - t, 1 + t, color="tab:green", alpha=0.12, label=f"same: within ±{t:.1%}")
    for i, row in enumerate(rows):
        ax.annotate(
            row.verdict,
            (1.0, i),
            xycoords=("axes fraction", "data"),
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    ax.legend(fontsize=7, loc="best")
    return charts.save_png(fig, path)


def write_chart(destination: Any, draw: Any) -> None:
    """Draw a chart into a checked ``--chart`` destination (``draw(path)``) and say where;
    nothing to draw is one ``note:`` line on stderr, not an error.

    Raises:
        SaveError: the PNG could not be written (the rescue file is named).
    """

    from perflab.files import save_file

    try:
        save_file(destination, draw, "chart")
    except ValueError as exc:
        tell(f"note: no chart written: {exc}")
        return
    tell(f"chart saved to {destination}")
