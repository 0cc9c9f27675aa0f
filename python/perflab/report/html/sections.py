"""The HTML report's sections, by kind: run, cmd, http, doctor, history, environment.

Each builder takes loaded results with their figures (or history trends) and returns
:class:`perflab.report.html.page.Section` objects. It computes nothing: the figures
come from :func:`perflab.analyze.results_figures.results_figures`, the function
``perflab show`` uses, so the page shows the figures the terminal showed.
:data:`RESULTS_SECTIONS` and :data:`DOCUMENT_SECTIONS` are the one list of what the
page draws for each kind of input: a new section is a builder added there (in its own
module).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from perflab.model import Results
from perflab.report.html import charts
from perflab.report.html.page import (
    Section,
    figure_html,
    folded,
    header,
    paragraph,
    table_html,
)
from perflab.report.html.run_section import figures_table, run_sections
from perflab.report.table import Table

if TYPE_CHECKING:
    from perflab.analyze.results_figures import ResultsFigures


# ------------------------------------------------------------------ cmd


def cmd_sections(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """A ``cmd`` file: the table, run-time distributions, user/sys split (max RSS is a
    column of the table)."""
    from perflab.analyze.cmd import timed_runs
    from perflab.report.cmd_table import cmd_table

    summaries = figures.commands
    section = Section(f"cmd: {name}", header(results, name), kind="cmd")
    section.blocks.append(
        table_html(
            cmd_table(summaries, figures.spawn_overhead, results.settings, results.rss_floor_bytes)
        )
    )
    shown = [(s, b) for s, b in zip(summaries, results.benchmarks) if s.ok]
    if shown:
        labels = [s.label for s, _ in shown]
        walls = [[r.wall_ns * 1e-9 for r in timed_runs(b)] for _, b in shown]
        section.blocks.append(
            charts.chart(
                charts.distribution_figure(
                    "wall time per run", labels, walls, walls, "run", "wall time per run"
                ),
                "box of each command's wall times per run, every run a dot",
                "distribution",
                points=sum(len(w) for w in walls),
            )
        )
        if any(math.isfinite(s.total_s) for s, _ in shown):  # else no CPU times (imported)
            section.blocks.append(
                figure_html(
                    charts.to_svg(
                        charts.user_sys_figure(
                            "CPU time per run",
                            labels,
                            [s.user_s for s, _ in shown],
                            [s.sys_s for s, _ in shown],
                            [s.median_s for s, _ in shown],
                        )
                    ),
                    "median user and system CPU time per run; the tick is the median wall time",
                    "user-sys",
                )
            )
        section.blocks.append(
            folded("exact figures", figures_table("exact figures", [s for s, _ in shown]))
        )
    return [section]


# ------------------------------------------------------------------ http


def http_sections(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """An ``http`` file: the sweep table, the sweep chart, each step's latency percentile
    spectrum from its HdrHistogram, and errors by kind."""
    from perflab.analyze.hdr import decode_histogram
    from perflab.report.http_chart import sweep_chart
    from perflab.report.http_table import results_notes, sweep_table
    from perflab.report.server_timing_table import server_timing_tables

    sweep = figures.sweep
    assert sweep is not None, "an http file's figures hold its sweep"
    section = Section(f"http: {name}", header(results, name), kind="http")
    data = [
        {
            "step": s.label,
            "achieved-rate": float(s.achieved_rate),
            "p50-s": float(s.latency_s["p50"]),
            "p99-s": float(s.latency_s["p99"]),
        }
        for s in sweep.steps
    ]
    section.blocks.append(table_html(sweep_table(sweep, results_notes(results)), data, "figures"))
    section.blocks += [table_html(t) for t in server_timing_tables(results, sweep)]
    if sweep.steps:
        section.blocks.append(
            figure_html(
                charts.file_svg(lambda p: sweep_chart(sweep, p)),
                "achieved vs offered rate, and latency percentiles "
                "against the rate, with each step's verdict",
                "sweep",
            )
        )
        spectra = []
        for step, summary in zip(results.benchmarks[0].steps, sweep.steps):
            counts = decode_histogram(step.latency.encoded) if step.latency.encoded else None
            if counts is not None and counts.counts.size:
                spectra.append((summary.label, counts.values, counts.counts))
        if spectra:
            section.blocks.append(
                figure_html(
                    charts.to_svg(charts.spectrum_figure("latency by percentile", spectra)),
                    "each step's latency percentile "
                    "spectrum from its HdrHistogram (from the intended send time)",
                    "spectrum",
                )
            )
    errors = Table("errors by kind", ["step", "kind", "requests"], align=["l", "l", "r"])
    for s in sweep.steps:
        errors.rows += [[s.label, kind, f"{n:,}"] for kind, n in sorted(s.errors.items())]
        errors.rows += [
            [s.label, f"status {code}", f"{n:,}"] for code, n in sorted(s.failed_statuses.items())
        ]
    section.blocks.append(table_html(errors) if errors.rows else paragraph("no failed request"))
    return [section]


# ------------------------------------------------------------------ doctor, history


def doctor_section(document: dict[str, Any], where: str) -> Section:
    """The doctor's verdicts from a doctor JSON document (file or history)."""
    table = Table(
        f"checks ({where}, started {document.get('created', '?')})",
        ["check", "status", "evidence", "what to do"],
    )
    for check in document.get("checks") or []:
        if isinstance(check, dict):
            table.rows.append(
                [str(check.get(k, "")) for k in ("name", "status", "detail", "action")]
            )
    return Section(
        "doctor: can this machine's clocks be trusted?", [table_html(table)], kind="doctor"
    )


#: Runs drawn per trend chart (the newest; change points come from the whole history).
TREND_POINTS = 200


def history_sections(trends: Sequence[Any], more: int) -> list[Section]:
    """Trends with change points: one chart per benchmark (its newest
    :data:`TREND_POINTS` runs) and its table (the newest 20).

    Args:
        trends: :class:`perflab.history.trend.Trend` objects with points.
        more: how many matching benchmarks were left out (shown in a line).
    """
    from perflab.report.history_chart import trend_chart
    from perflab.report.history_table import trend_table

    section = Section("history: trends and change points", kind="history")
    from perflab.history.trend import window

    for trend in trends:
        shown = window(trend, TREND_POINTS)
        section.blocks.append(
            figure_html(
                charts.file_svg(lambda p, t=shown: trend_chart([t], p, "svg")),
                f"{trend.bench}: {trend.metric} per run in commit "
                "order; red: change points, grey: fingerprint "
                "changes",
                "trend",
            )
        )
        section.blocks.append(table_html(trend_table(trend, 20)))
    if more:
        section.blocks.append(
            paragraph(
                f"{more} more matching benchmarks are not shown; narrow the pattern of --history"
            )
        )
    if not trends:
        section.blocks.append(paragraph("no recorded benchmark matches"))
    return [section]


def _compare(document: dict[str, Any], name: str) -> list[Section]:
    from perflab.report.html.documents import compare_sections

    return compare_sections(document, name)


def _trace(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    from perflab.report.html.trace_section import trace_sections

    return trace_sections(results, name)


def _memory(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    from perflab.report.html.memory_section import memory_sections

    return memory_sections(results, figures, name)


def _counts(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """The count table of a ``--count instructions`` file (run or cmd), when it has one."""
    from perflab.report.count_table import count_tables

    blocks = [table_html(t) for t in count_tables(figures.counts, results.benchmarks)]
    return [Section(f"instructions: {name}", blocks)] if blocks else []


def _fit(document: dict[str, Any], name: str) -> list[Section]:
    from perflab.report.html.documents import fit_sections

    return fit_sections(document, name)


#: What the page draws for a results file of each kind, in page order: builders
#: ``(results, its figures, file name) -> sections`` (an empty list adds nothing). A new
#: section for results files (e.g. traces) is one more builder in these lists.
RESULTS_SECTIONS: dict[str, list[Callable[[Results, ResultsFigures, str], list[Section]]]] = {
    "run": [run_sections, _counts, _memory],
    "cmd": [cmd_sections, _counts, _memory],
    "http": [http_sections, _memory],
    "trace": [_trace],
}

#: What the page draws for a perflab JSON document that is not a results file, by its
#: ``kind``: builders ``(document, file name) -> sections``.
DOCUMENT_SECTIONS: dict[str, list[Callable[[dict[str, Any], str], list[Section]]]] = {
    "doctor": [lambda document, name: [doctor_section(document, name)]],
    "compare": [_compare],
    "fit": [_fit],
}


def results_sections(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """The sections of one results file, by its kind (see :data:`RESULTS_SECTIONS`), from
    its figures (:func:`perflab.analyze.results_figures.results_figures`)."""
    return [
        section
        for build in RESULTS_SECTIONS.get(results.kind, [])
        for section in build(results, figures, name)
    ]


def document_sections(document: dict[str, Any], name: str) -> list[Section]:
    """The sections of one compare, fit or doctor document (see :data:`DOCUMENT_SECTIONS`)."""
    return [
        section
        for build in DOCUMENT_SECTIONS.get(str(document.get("kind")), [])
        for section in build(document, name)
    ]
