"""Tables of ``perflab fit``: USL coefficients and points, complexity classes, break-even.

Renders fits made by :mod:`perflab.analyze.fit.models` into
:class:`~perflab.report.table.Table` objects (printed by report.console);
computes nothing. Numbers carry their unit (``261 ns``, ``143 k/s``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from perflab.analyze.fit.models.choice import MISS_SHARE
from perflab.analyze.fit.models.words import fmt_count, fmt_number, fmt_percent, fmt_time, fmt_value
from perflab.report.table import KEY, NOTE, Table

__all__ = [
    "breakeven_points",
    "breakeven_table",
    "complexity_table",
    "curve",
    "size_grid",
    "tables_document",
    "tables_from_document",
    "usl_points",
    "usl_table",
]

#: Most rows a table of points shows (terminal, Markdown, the fit document); with more
#: points, evenly spread ones (the first and the last among them) and a footnote that
#: says so: every point stays in ``--json``'s data.
MAX_POINT_ROWS = 100


def _shown_rows(count: int, where: str) -> tuple[list[int], list[str]]:
    """The indices of the rows a table of ``count`` points shows, in order, and the
    footnote that says how many were left out (none: empty); ``where`` names the
    ``--json`` field that holds them all."""
    if count <= MAX_POINT_ROWS:
        return list(range(count)), []
    step = (count - 1) / (MAX_POINT_ROWS - 1)
    return (
        [round(i * step) for i in range(MAX_POINT_ROWS)],
        [
            f"{MAX_POINT_ROWS} of {count:,} points shown, evenly spread; every point is "
            f"in --json's {where}"
        ],
    )


def _ci(est: Any, fmt: Callable[[float], str] = fmt_number) -> str:
    """'low – high' of an Estimate; "–" when there is no interval (no degrees of freedom)."""
    if not (math.isfinite(est.ci_low) and math.isfinite(est.ci_high)):
        return "–"
    return f"{fmt(est.ci_low)} – {fmt(est.ci_high)}"


def _time_est(est: Any) -> str:
    """A time coefficient with its CI: '3.4 ns (3.2 ns – 3.6 ns)'; '–' for a term held at 0."""
    if est.value == 0 and est.se == 0:
        return "–"
    return f"{fmt_time(est.value)} ({_ci(est, fmt_time)})"


# ---------------------------------------------------------------------------
# USL


def usl_table(s: Any, fit: Any) -> Table:
    """α, β, γ with SEs and CIs, N*, X(N*), γ/α and R²; reading and warnings below.

    Args:
        s: the fitted series (perflab.analyze.fit.inputs.Series).
        fit: its UslFit.
    """

    def y(v: float) -> str:
        return fmt_value(v, s.y_unit)

    level = f"{fit.level:.0%} CI"
    table = Table(
        f"USL fit: {s.name}",
        ["quantity", "value", "std error", level, "meaning"],
        align=["l", "r", "r", "r", "l"],
        fold=[KEY, KEY, 1, 2, NOTE],
    )
    table.rows = [
        [
            "α (contention)",
            fmt_number(fit.alpha.value),
            fmt_number(fit.alpha.se),
            _ci(fit.alpha),
            "share of the work that is serialized",
        ],
        [
            "β (coherency)",
            fmt_number(fit.beta.value),
            fmt_number(fit.beta.se),
            _ci(fit.beta),
            "cost of keeping each pair of units in step",
        ],
        [
            "γ (X at N = 1)",
            y(fit.gamma.value),
            y(fit.gamma.se),
            _ci(fit.gamma, y),
            "throughput of a single unit",
        ],
        ["peak N*", fmt_number(fit.peak_load), "", "", "load where X peaks, √((1−α)/β)"],
        ["X(N*)", y(fit.peak_throughput), "", "", "the highest throughput"],
        ["Amdahl limit γ/α", y(fit.amdahl_limit), "", "", "ceiling of X if β were 0"],
        ["R²", f"{fit.r_squared:.4f}", "", "", f"{fit.n_points} points, {s.x_label}"],
    ]
    table.footnotes = [f"reading: {fit.reading()}"] + [f"warning: {w}" for w in fit.warnings]
    return table


def usl_points(s: Any, fit: Any) -> Table:
    """Measured and fitted X at each N, with residuals."""
    table = Table(
        f"points: {s.name}",
        ["N", "X measured", "X fitted", "residual", "residual %"],
        align=["r"] * 5,
        fold=[KEY, KEY, 3, 2, 1],
    )
    shown, left_out = _shown_rows(len(s.x), '"points"')
    fitted = fit.predict(s.x)
    for i in shown:
        n, x, r = s.x[i], s.y[i], fit.residuals[i]
        load = f"{n:,.0f}" if n == round(n) else fmt_number(float(n))
        table.rows.append(
            [
                load,
                fmt_value(float(x), s.y_unit),
                fmt_value(float(fitted[i]), s.y_unit),
                fmt_value(float(r), s.y_unit),
                f"{100 * r / x:+.1f}%",
            ]
        )
    table.footnotes = [f"note: {n}" for n in s.notes] + left_out
    return table


# ---------------------------------------------------------------------------
# complexity


def complexity_table(fitted: Sequence[tuple[Any, Any]]) -> Table:
    """One table: the chosen (tied, or closest) class and the runner-up of every swept series.

    Args:
        fitted: (series, ComplexityFit) pairs; the first series names the parameter.
    """
    param = fitted[0][0].param
    table = Table(
        f"complexity: time per call = a + b·g({param})",
        ["series", "rank", "growth g(n)", "a (95% CI)", "b (95% CI)", "Δ", "R²"],
        align=["l", "l", "l", "r", "r", "r", "r"],
        fold=[KEY, KEY, KEY, 3, 4, 1, 2],
    )
    for s, fit in fitted:
        table.rows += _complexity_rows(s, fit)
        table.footnotes += [f"{s.name}: {fit.reading()}"]
        table.footnotes += [f"{s.name}: warning: {w}" for w in fit.warnings]
    weights = (
        "points weighted by 1/SE² of each cost"
        if all(f.se_known for _, f in fitted)
        else "points weighted by their relative error (1/cost²; 1/SE² where the input gives SEs)"
    )
    table.footnotes.append(
        "rank: best (the data rule the other classes out), tied (the data cannot tell these "
        "apart), closest (no class fits; the nearest one), runner-up, contradicted (ruled out "
        "by the data); a: constant cost; b: cost per unit of g(n); Δ: the row's information "
        "criterion (AICc, or AIC under 5 points) minus the first row's: positive, the row "
        "scores worse; a negative Δ means the row scores better, yet the tests rule it out "
        "(contradicted) or cannot tell it from the first row (tied): the choice is made by "
        f"what the data contradict, not by the score; {weights}"
    )
    return table


def _complexity_rows(s: Any, fit: Any) -> list[list[str]]:
    """The chosen class, every class tied with it, and the next one."""
    shown = [fit.best] + [c for c in fit.candidates[1:] if c.model in fit.tied]
    following = [c for c in fit.candidates if c not in shown][:1]
    rows = []
    for i, cand in enumerate(shown + following):
        rows.append(
            [
                s.name if i == 0 else "",
                _rank(fit, cand, i),
                cand.model,
                _time_est(cand.a),
                _time_est(cand.b),
                f"{cand.score - fit.best.score:+.1f}" if i else "0",
                f"{fit.r_squared:.4f}" if i == 0 else "",
            ]
        )
    return rows


def _rank(fit: Any, cand: Any, position: int) -> str:
    """best / tied / closest for the first row, tied / contradicted / runner-up after."""
    if position == 0:
        return {"fits": "best", "tied": "tied", "none": "closest"}[fit.verdict]
    if cand.model in fit.tied:
        return "tied"
    return "contradicted" if cand.model in fit.contradicted else "runner-up"


# ---------------------------------------------------------------------------
# break-even


def breakeven_table(a: Any, b: Any, result: Any) -> Table:
    """One row per side: growth, one-off cost, a and b with CIs, total cost at n*.

    Args:
        a: series of side A (perflab.analyze.fit.inputs.Series).
        b: series of side B.
        result: their BreakEven.
    """
    n = a.param or "calls n"
    table = Table(
        f"break-even: {a.name} vs {b.name} (total = cold + a + b·g({n}))",
        ["benchmark", "growth g(n)", "cold (one-off)", "a (95% CI)", "b (95% CI)", "total at n*"],
        align=["l", "l", "r", "r", "r", "r"],
        fold=[KEY, KEY, 3, 2, 1, KEY],
    )
    at = None if result.n_star is None else result.n_star.value
    for s, fit, cold, cost in (
        (a, result.fit_a, result.cold_a, result.cost_a),
        (b, result.fit_b, result.cold_b, result.cost_b),
    ):
        total = fmt_time(float(cost(at))) if at is not None else "–"
        growth = (
            fit.model
            if fit.verdict == "fits"
            else f"{fit.model} (tied with {', '.join(fit.tied[1:])})"
            if fit.verdict == "tied"
            else f"{fit.model} (closest; no class fits)"
        )
        table.rows.append(
            [
                s.name,
                growth,
                f"{fmt_time(cold)} ± {fmt_time(s.cold_se)}",
                _time_est(fit.a),
                _time_est(fit.b),
                total,
            ]
        )
    table.footnotes = [result.sentence()] + [f"warning: {w}" for w in result.warnings]
    table.footnotes.append(
        "cold: first call of a fresh process minus a warm call (median over "
        "processes ± its standard error); a, b: warm cost fitted over n"
    )
    if a.param is None:
        table.footnotes.append(
            "n counts calls in one fresh process: total = cold + n × time per call"
        )
    return table


def breakeven_points(result: Any) -> Table | None:
    """Measured totals of both sides at each size both measured, and who is ahead; None if none.

    Args:
        result: a BreakEven whose fits carry their points.
    """
    if not result.measured:
        return None
    la, lb = result.labels
    table = Table(
        f"measured: {la} vs {lb}",
        ["n", f"{la} total", f"{lb} total", "cheaper (measured)", "cheaper (fitted curves)"],
        align=["r", "r", "r", "l", "l"],
        fold=[KEY, KEY, KEY, KEY, 1],
    )
    shown, left_out = _shown_rows(len(result.measured), '"measured"')
    for o in (result.measured[i] for i in shown):
        flag = " ✗" if o.refutes else ""
        table.rows.append(
            [
                fmt_count(o.n, 3),
                fmt_time(o.cost_a),
                fmt_time(o.cost_b),
                (o.cheaper or "not clear") + flag,
                o.fitted_cheaper or "equal",
            ]
        )
    table.footnotes = [
        (
            "total: measured cost plus the one-off cost; cheaper (measured): the side whose total "
            f"is lower beyond the {result.level:.0%} CI of the difference (without SEs: by more "
            f"than {fmt_percent(MISS_SHARE)}); ✗: the measurements contradict the fitted curves "
            "there, so no break-even is claimed"
        ),
        *left_out,
    ]
    return table


# ---------------------------------------------------------------------------
# the fit document (perflab fit --json): what perflab report and show draw from


def size_grid(x: Any, log: bool | None = None, points: int = 100) -> list[float]:
    """Sizes to draw a fitted curve at: ``points`` values from min to max of ``x``,
    log-spaced when asked or (``log`` None) when x spans more than two decades."""
    import numpy as np

    values = np.asarray(x, dtype=float)
    values = values[np.isfinite(values) & (values > 0)] if log is not False else values
    low, high = float(values.min()), float(values.max())
    if log is None:
        log = low > 0 and high / low > 100
    grid = np.geomspace(low, high, points) if log else np.linspace(low, high, points)
    return [float(v) for v in grid]


def curve(label: str, fit: Any, grid: Any, offset: float = 0.0) -> dict[str, Any]:
    """A fitted curve for the document: ``{"label", "x", "fit", "low", "high"}`` at ``grid``
    (the fit's pointwise CI band), ``offset`` (e.g. a one-off cold cost, s) added.

    Args:
        fit: a UslFit or ComplexityFit (anything with ``predict`` and ``band``).
        grid: sizes or loads, shape (k,).
    """
    import numpy as np

    n = np.asarray(grid, dtype=float)
    low, high = fit.band(n)
    return {
        "label": label,
        "x": n.tolist(),
        "fit": (offset + fit.predict(n)).tolist(),
        "low": (offset + np.asarray(low)).tolist(),
        "high": (offset + np.asarray(high)).tolist(),
    }


def tables_document(tables: Sequence[Table]) -> list[dict[str, Any]]:
    """The tables as printed, for the document (title, columns, rows, align, footnotes)."""
    return [
        {
            "title": t.title,
            "columns": list(t.columns),
            "rows": [list(r) for r in t.rows],
            "align": list(t.align),
            "footnotes": list(t.footnotes),
        }
        for t in tables
    ]


def tables_from_document(document: dict[str, Any]) -> list[Table]:
    """The tables a fit document holds (see :func:`tables_document`); cells as text
    (untrusted: the renderer escapes them); [] for a document written before they were kept."""
    out = []
    for t in document.get("tables") or []:
        if not isinstance(t, dict) or not isinstance(t.get("columns"), list):
            continue
        columns = [str(c) for c in t["columns"]]
        rows = [
            [str(c) for c in r][: len(columns)] for r in t.get("rows") or [] if isinstance(r, list)
        ]
        align = [a if a in ("l", "r") else "l" for a in t.get("align") or []]
        out.append(
            Table(
                str(t.get("title", "")),
                columns,
                rows,
                align if len(align) == len(columns) else [],
                [str(n) for n in t.get("footnotes") or []],
            )
        )
    return out
