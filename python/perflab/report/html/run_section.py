"""The HTML report's section of a ``run`` results file: per group its table, then the
charts that answer "how does it scale, how far apart, how noisy".

Per group, in this order:

* the group's table, as the terminal prints it;
* **time per op against a parameter** (criterion's "line chart" of a benchmark group):
  where the group's cases vary one numeric parameter (``n=10, 1000, 100000``), one line
  per function with each case's median and 95% CI, on log axes where the values span
  more than a decade;
* **ratio to the fastest**, a forest plot drawn in blocks of like parameters (a ratio
  between ``n=10`` and ``n=100000`` means nothing); the fastest of each block is a
  hollow diamond at 1, so no row is empty;
* the **distribution** of the samples (box) and per-process medians (dots), on a log
  axis when the rows span more than a decade;
* **cold vs warm**, when the first call of a fresh process was timed;
* the exact figures (``data-*``, for tools), folded.

Computes nothing: the figures are the file's summaries
(:func:`perflab.analyze.results_figures.results_figures`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from perflab.model import Results
from perflab.report.html import charts
from perflab.report.html.axes import scale_axis
from perflab.report.html.page import Section, folded, header, table_html
from perflab.report.run_chart import distribution
from perflab.report.table import Table
from perflab.units import format_time, time_unit_for

if TYPE_CHECKING:
    from perflab.analyze.results_figures import ResultsFigures


def run_sections(results: Results, figures: ResultsFigures, name: str) -> list[Section]:
    """A ``run`` file: one section with its header, then per group a subsection (when
    there are several groups) with the group's table and charts (see the module)."""
    from perflab.report.run_table import run_tables

    tables = run_tables(figures.groups)
    section = Section(f"run: {name}", header(results, name), kind="run")
    out = [section]
    benches = {b.id: b for b in results.benchmarks}
    several = len(figures.grouped) > 1
    label = {g: f"group {g}" if g else "benchmarks" for g in figures.grouped}
    mine = {
        g: [t for t in tables if t.title == title or t.title.startswith(title + ":")]
        for g, title in label.items()
    }
    placed = {id(t) for ts in mine.values() for t in ts} if several else set()
    section.blocks += [table_html(t) for t in tables if id(t) not in placed]
    for group, summaries in figures.grouped.items():
        place = section
        if several:  # a subsection per group: its own tables (group, staged, threads)
            place = Section(label[group], [table_html(t) for t in mine[group]], level=3)
            out.append(place)
        place.blocks += group_charts(group, [s for s in summaries if s.ok], benches)
    return out


def group_charts(group: str, shown: Sequence[Any], benches: dict[str, Any]) -> list[str]:
    """The charts of one group's benchmarks that measured something (summaries), and
    their exact figures, as HTML blocks."""
    if not shown:
        return []
    label = f"group {group}" if group else "benchmarks"
    labels = [_row_label(s, benches[s.id]) for s in shown]
    blocks = []
    scaling = _scaling(shown, benches)
    if scaling is not None:
        param, lines = scaling
        blocks.append(
            charts.chart(
                scaling_figure(f"{label}: time per op against {param}", param, lines),
                f"{label}: each function's median time per op at each {param}, with its "
                "95% CI (criterion's line chart); log axes where the values span more "
                "than a decade",
                "scaling",
                points=sum(len(xs) for _, xs, *_ in lines),
            )
        )
    keys = [_like(benches[s.id]) for s in shown]
    alike = {k for k in keys if keys.count(k) > 1}
    ranked = [i for i, k in enumerate(keys) if k in alike]
    if ranked:  # ratios only among like cases: same parameters, stage and threads
        split = len(alike) > 1
        blocks.append(
            charts.chart(
                charts.forest_figure(
                    f"{label}: ratio to the fastest" + (" of like cases" if split else ""),
                    [labels[i] for i in ranked],
                    [shown[i].ratio_best for i in ranked],
                    "the fastest",
                    blocks=[keys[i] for i in ranked] if split else None,
                ),
                f"{label}: each benchmark's median over the fastest"
                + (" of like cases (same parameters, stage and threads: in bold)" if split else "")
                + ", with its 95% bootstrap CI; ◇ the fastest itself",
                "forest",
            )
        )
    data = [distribution(benches[s.id], s) for s in shown]
    blocks.append(
        charts.chart(
            charts.distribution_figure(
                f"{label}: time per op",
                labels,
                [d[0] for d in data],
                [d[1] for d in data],
                "per-process median",
            ),
            f"{label}: box of the samples' time per op (whiskers at 1.5 IQR), dots the "
            "medians of each worker process",
            "distribution",
            points=sum(len(d[1]) for d in data),
        )
    )
    if any(math.isfinite(s.cold_s) for s in shown):
        blocks.append(
            charts.chart(
                charts.cold_warm_figure(
                    f"{label}: cold vs warm",
                    labels,
                    [s.cold_s for s in shown],
                    [s.median_s for s in shown],
                ),
                f"{label}: the first call in a fresh process against the steady-state median",
                "cold-warm",
            )
        )
    blocks.append(
        folded(f"{label}: exact figures", figures_table(f"{label}: exact figures", shown))
    )
    return blocks


def figures_table(title: str, summaries: Sequence[Any]) -> str:
    """The exact figures of each benchmark (median and CI) as a table whose rows carry
    them as ``data-id``, ``data-median-s``, ``data-ci-low-s``, ``data-ci-high-s``."""
    table = Table(title, ["benchmark", "median", "95% CI"], align=["l", "r", "l"])
    data: list[dict[str, float | str]] = []
    for s in summaries:
        table.rows.append(
            [
                s.id,
                format_time(s.median_s),
                f"{format_time(s.ci_low_s)} – {format_time(s.ci_high_s)}",
            ]
        )
        data.append(
            {
                "id": s.id,
                "median-s": float(s.median_s),
                "ci-low-s": float(s.ci_low_s),
                "ci-high-s": float(s.ci_high_s),
            }
        )
    return table_html(table, data, "figures")


def _like(bench: Any) -> str:
    """What makes two cases comparable, as one label: their parameters, stage and thread
    count ("n=1000", "dump", "4 threads"; "" for none)."""
    parts = [f"{k}={v}" for k, v in sorted(bench.params.items())]
    if bench.stage:
        parts.append(str(bench.stage))
    if bench.threads:
        parts.append(f"{bench.threads} threads")
    return " ".join(parts)


def _row_label(summary: Any, bench: Any) -> str:
    """A row's label in a chart: the summary's label, with the stage when it lacks it."""
    label = summary.label or summary.id
    return f"{label} {bench.stage}" if bench.stage and str(bench.stage) not in label else label


#: One line of the scaling chart: (label, parameter values, medians s, CI lows, CI highs).
Line = tuple[str, list[float], list[float], list[float], list[float]]


def _scaling(shown: Sequence[Any], benches: dict[str, Any]) -> tuple[str, list[Line]] | None:
    """(parameter, lines) when the cases vary one numeric parameter over at least two
    values (the others fixed per line), else None."""
    numeric: dict[str, set[float]] = {}
    for s in shown:
        for key, value in benches[s.id].params.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                numeric.setdefault(key, set()).add(float(value))
    varying = [k for k, values in numeric.items() if len(values) >= 2]
    if len(varying) != 1:
        return None
    param = varying[0]
    lines: dict[str, Line] = {}
    for s in shown:
        bench = benches[s.id]
        value = bench.params.get(param)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        rest = " ".join(f"{k}={v}" for k, v in sorted(bench.params.items()) if k != param)
        key = " ".join(p for p in (bench.name, bench.stage or "", rest) if p)
        if bench.threads:
            key += f" {bench.threads} threads"
        line = lines.setdefault(key, (key, [], [], [], []))
        for column, v in zip(line[1:], (value, s.median_s, s.ci_low_s, s.ci_high_s)):
            column.append(float(v))
    drawn = [line for line in lines.values() if len(line[1]) >= 2]
    return (param, drawn) if drawn else None


def scaling_figure(title: str, param: str, lines: Sequence[Line]) -> Any:
    """Median time per op against a parameter, one line per function, each point with
    its 95% CI; each axis logarithmic when its values span more than a decade.

    Args:
        title: the chart's title.
        param: the parameter's name, for the x axis.
        lines: (label, parameter values, medians in s, CI lows in s, CI highs in s).

    Returns:
        The matplotlib figure.
    """
    plt = charts.pyplot_for_charts()
    times = [v for line in lines for v in line[2] if math.isfinite(v)]
    unit, factor = time_unit_for(sorted(times)[len(times) // 2] if times else 1.0)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for i, (label, xs, medians, lows, highs) in enumerate(lines[: charts.MAX_ROWS]):
        order = sorted(range(len(xs)), key=lambda k: xs[k])
        x = [xs[k] for k in order]
        y = [medians[k] / factor for k in order]
        low = [max(0.0, (medians[k] - lows[k]) / factor) for k in order]
        high = [max(0.0, (highs[k] - medians[k]) / factor) for k in order]
        low = [v if math.isfinite(v) else 0.0 for v in low]
        high = [v if math.isfinite(v) else 0.0 for v in high]
        ax.errorbar(
            x,
            y,
            yerr=[low, high],
            fmt="o-",
            color=f"C{i % 10}",
            capsize=3,
            ms=4,
            lw=1.5,
            label=charts.short_label(label),
        )
    scale_axis(ax, "x", [v for line in lines for v in line[1]])
    log_y = scale_axis(ax, "y", [v / factor for v in times])
    ax.set_xlabel(param)
    ax.set_ylabel(f"time per op ({unit}{', log scale' if log_y else ''})")
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(which="both" if log_y else "major", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return fig
