"""The HTML report's sections for documents that are not results files: a comparison
(``perflab compare --json``) and fits (``perflab fit --json``).

Both render what the document holds, with the terminal's own table builders where the
document can be read back into the objects they take (a comparison), and the tables as
the terminal printed them where it cannot (a fit: the document keeps them, see
:func:`perflab.report.fit_table.tables_document`). Numbers that tests and tools read
back are in ``data-*`` attributes (exact).
"""

from __future__ import annotations

import math
from typing import Any

from perflab.analyze.fit.models.words import fmt_count
from perflab.report.html import charts
from perflab.report.html.page import Section, command_html, paragraph, table_html


def _intro(document: dict[str, Any], what: str, name: str) -> list[str]:
    """The line naming the file, its date and perflab version, and the command line."""
    created = document.get("created")
    version = document.get("perflab_version")
    blocks = [
        paragraph(
            f"{what} from {name}"
            + (f", written {created}" if created else "")
            + (f" by perflab {version}" if version else "")
        )
    ]
    argv = document.get("command_line")
    if isinstance(argv, list) and argv:
        blocks.append(command_html([str(a) for a in argv]))
    return blocks


def compare_sections(document: dict[str, Any], name: str) -> list[Section]:
    """A comparison: its summary and verdict tables as the terminal prints them (exact
    B/A figures on each row's ``data-*``), and the B/A ratios as a forest plot."""
    from perflab.model.comparison import SuiteComparison
    from perflab.report.compare_table import comparison_tables

    suite = SuiteComparison.from_dict(document)
    name_a, name_b = str(document.get("a", "A")), str(document.get("b", "B"))
    section = Section(f"compare: {name}", _intro(document, "comparison", name), kind="compare")
    summary, rows = comparison_tables(suite, name_a, name_b)
    section.blocks.append(table_html(summary))
    data: list[dict[str, float | str]] = [
        {
            "id": r.id,
            "metric": r.metric,
            "verdict": r.verdict,
            "ratio": r.ratio.value if r.ratio else math.nan,
            "ratio-low": r.ratio.ci_low if r.ratio else math.nan,
            "ratio-high": r.ratio.ci_high if r.ratio else math.nan,
        }
        for r in suite.rows
    ]
    section.blocks.append(table_html(rows, data, "compare"))
    shown = [r for r in suite.rows if r.ratio is not None and math.isfinite(r.ratio.value)]
    if shown:
        labels = [r.id if r.metric in ("time", "") else f"{r.id} {r.metric}" for r in shown]
        section.blocks.append(
            charts.chart(
                charts.forest_figure(
                    f"B = {name_b} against A = {name_a}",
                    labels,
                    [r.ratio for r in shown],
                    "A",
                    band=suite.threshold,
                    verdicts=[r.verdict for r in shown],
                ),
                f"B/A per benchmark with its {suite.confidence:.0%} CI, coloured by verdict "
                f"(green faster, red slower, blue same, grey inconclusive); the shaded band "
                f"is the noise threshold ±{suite.threshold:.1%} (inside it: the same)",
                "forest",
            )
        )
    return [section]


def fit_sections(document: dict[str, Any], name: str) -> list[Section]:
    """Fits: the tables the terminal printed, then per fitted series the curve with its
    CI band over the measured points, and the residuals."""
    from perflab.report.fit_table import tables_from_document

    model = str(document.get("fit", "fit"))
    section = Section(f"fit ({model}): {name}", _intro(document, f"{model} fit", name), kind="fit")
    tables = tables_from_document(document)
    section.blocks += [table_html(t) for t in tables]
    fits = [f for f in document.get("fits") or [] if isinstance(f, dict)]
    if not tables:  # a document written before the tables were kept: the readings
        section.blocks += [
            paragraph(f"{f.get('series', '')}: {f.get('reading') or f.get('sentence') or ''}")
            for f in fits
        ]
    for fit in fits:
        drawn = _fit_figure(model, fit)
        if drawn is not None:
            series = str(fit.get("series", ""))
            section.blocks.append(
                charts.chart(
                    drawn[0],
                    f"{series}: the measured points, the fitted curve and its CI band"
                    + (
                        "; below, the residuals (measured − fitted)" if model != "breakeven" else ""
                    ),
                    "fit",
                    points=drawn[1],
                )
            )
    return [section]


def _numbers(value: Any) -> list[float]:
    if not isinstance(value, list):
        return []
    return [
        float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan
        for v in value
    ]


def _fit_figure(model: str, fit: dict[str, Any]) -> tuple[Any, int] | None:
    """The chart of one fit record with its measured points, and how many points it
    draws; None when it holds no
    curve (an older document). Times (complexity, break-even) are drawn in one unit
    chosen for the measured costs (µs, ms…), so ticks read "20", not "2e-05"."""
    from perflab.units import time_unit_for

    curves = []
    for c in fit.get("curves") or []:
        if isinstance(c, dict):
            curves.append(
                (
                    str(c.get("label", "")),
                    _numbers(c.get("x")),
                    _numbers(c.get("fit")),
                    _numbers(c.get("low")),
                    _numbers(c.get("high")),
                )
            )
    if not curves:
        return None
    points = fit.get("points") if isinstance(fit.get("points"), dict) else {}
    keys = {"usl": ("N", "X"), "complexity": ("n", "cost")}.get(model)
    x, y = (_numbers(points.get(keys[0])), _numbers(points.get(keys[1]))) if keys else ([], [])
    residuals = _numbers(fit.get("residuals"))
    pairs: list[tuple[list[float], list[float]]] = []
    if model == "breakeven":  # the measured costs of both sides, each in its curve's colour
        measured = [m for m in fit.get("measured") or [] if isinstance(m, dict)]
        n = _numbers([m.get("n") for m in measured])
        pairs = [(n, _numbers([m.get(key) for m in measured])) for key in ("cost_a", "cost_b")]
    timed = model in ("complexity", "breakeven")
    finite = sorted(v for v in y + [v for _, py in pairs for v in py] if math.isfinite(v))
    unit, factor = time_unit_for(finite[len(finite) // 2]) if timed and finite else ("", 1.0)
    if timed:
        curves = [
            (label, cx, *([v / factor for v in c] for c in rest)) for label, cx, *rest in curves
        ]
        y = [v / factor for v in y]
        residuals = [v / factor for v in residuals]
        pairs = [(px, [v / factor for v in py]) for px, py in pairs]
    labels = {
        "usl": ("load N", "throughput X"),
        "complexity": (f"{fit.get('param', 'n')} (size)", f"time per call ({unit})"),
        "breakeven": (str(fit.get("param", "n")), f"total cost ({unit})"),
    }
    x_label, y_label = labels.get(model, ("x", "y"))
    n_star = _numbers([fit.get("n_star")])[0] if model == "breakeven" else math.nan
    drawn = sum(math.isfinite(v) for v in y) + sum(math.isfinite(v) for _, py in pairs for v in py)
    figure = charts.fit_figure(
        str(fit.get("series", "")),
        curves,
        x,
        y,
        residuals,
        x_label,
        y_label,
        log=model == "breakeven",
        mark=(f"break-even n* ≈ {fmt_count(n_star, 3)}", n_star) if math.isfinite(n_star) else None,
        curve_points=pairs,
    )
    return figure, drawn
