"""Charts of fitted models: USL, complexity and break-even (matplotlib, Agg).

Each function draws the data, the fitted curve with its pointwise CI band
(delta method, see perflab.analyze.fit.models) and writes one PNG. Numbers in
titles and legends are formatted like the tables (``261 ns``, ``143 k/s``,
never ``2.61e-07``); a fit whose points do not show USL behaviour, or that no
growth class describes, says so on the chart. matplotlib is imported inside
the functions so that importing this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from perflab.analyze.fit.models.classes import COMPLEXITY_MODELS
from perflab.analyze.fit.models.words import fmt_count, fmt_number, fmt_time, fmt_value
from perflab.report.pyplot import visible_text

if TYPE_CHECKING:
    from perflab.analyze.fit.models import BreakEven, ComplexityFit, UslFit

__all__ = [
    "breakeven_chart",
    "breakeven_title",
    "complexity_chart",
    "complexity_title",
    "usl_chart",
    "usl_title",
]

ArrayLike = Sequence[float] | np.ndarray


def _figure() -> tuple[Any, Any]:
    """A fresh Agg figure and axes, 7×4.5 inches."""
    from perflab.report.pyplot import pyplot

    plt = pyplot()

    return plt.subplots(figsize=(7, 4.5), dpi=110)


def _save(fig: Any, ax: Any, path: str | Path, title: str) -> Path:
    """Title, grid, legend, write the PNG and close the figure."""
    import matplotlib.pyplot as plt

    ax.set_title(title, fontsize=12 if "\n" not in title else 9)
    ax.grid(True, which="major", alpha=0.3)
    # a note (_note) holds the upper left: the legend must not cover it
    ax.legend(loc="lower right" if ax.texts else "best", fontsize=8)
    fig.tight_layout()
    out = Path(path)
    visible_text(fig).savefig(out)
    plt.close(fig)
    return out


def _y_ticks(ax: Any, unit: str) -> None:
    """Y tick labels in the unit, like the tables (10 µs, 4.00 M/s), never an offset "1e6"."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    def label(v: float, _pos: int) -> str:
        return "0" if not v else fmt_time(v, 2) if unit == "s" else fmt_value(v, unit)

    ax.yaxis.set_major_formatter(FuncFormatter(label))
    if ax.get_yscale() == "log":
        ax.yaxis.set_minor_formatter(NullFormatter())


def _log_x_wanted(n: np.ndarray) -> bool:
    """Log x axis when the sizes span more than two decades."""
    return bool(n.min() > 0 and n.max() / n.min() > 100)


def usl_chart(
    fit: UslFit,
    n: ArrayLike,
    x: ArrayLike,
    path: str | Path,
    *,
    x_label: str = "concurrency N",
    y_label: str = "throughput X (ops/s)",
    title: str | None = None,
) -> Path:
    """Plot a USL fit: points, fitted X(N) with its CI band, γN, and N*.

    Args:
        fit: The fit from fit_usl.
        n: Loads that were measured, shape (k,).
        x: Throughput at each load, shape (k,), in the unit named by y_label.
        path: PNG file to write.
        x_label: Label of the load axis, with its unit.
        y_label: Label of the throughput axis, with its unit.
        title: Chart title; a summary of the fit by default.

    Returns:
        The path written.

    Raises:
        ValueError: If n and x differ in length.
    """
    n_arr, x_arr = _pair(n, x)
    top = _usl_top(fit, n_arr)
    grid = np.linspace(1.0, top, 400)
    fig, ax = _figure()
    low, high = fit.band(grid)
    ax.fill_between(grid, low, high, alpha=0.25, label=f"{fit.level:.0%} CI of the fit")
    ax.plot(grid, fit.predict(grid), lw=2, label="USL fit")
    ax.plot(grid, fit.gamma.value * grid, "--", color="grey", label="linear scaling γN")
    ax.scatter(n_arr, x_arr, color="black", zorder=3, s=18, label="measured")
    _mark_peak(ax, fit, top)
    ax.set_xlim(0, top)
    ax.set_ylim(0, 1.15 * max(float(x_arr.max()), float(np.nanmax(fit.predict(grid)))))
    ax.set(xlabel=x_label, ylabel=y_label)
    _y_ticks(ax, fit.unit)
    if fit.degenerate:
        _note(
            ax,
            "these points do not show USL behaviour:\n"
            + "\n".join(f"• {reason}" for reason in fit.degenerate),
        )
    return _save(fig, ax, path, title or usl_title("", fit))


def usl_title(name: str, fit: UslFit) -> str:
    """'NAME: USL α = 0.0277, β = 1.04×10⁻⁴, γ = 90.0 /s'; the degenerate case says so."""
    head = f"{name}: " if name else ""
    if fit.degenerate:
        return f"{head}USL fit, but these points do not show USL behaviour"
    return (
        f"{head}USL α = {fmt_number(fit.alpha.value)}, β = {fmt_number(fit.beta.value)}, "
        f"γ = {fmt_value(fit.gamma.value, fit.unit)}"
    )


def _note(ax: Any, text: str) -> None:
    """A boxed red note in the upper left of the plot area."""
    ax.text(
        0.02,
        0.97,
        text,
        transform=ax.transAxes,
        va="top",
        ha="left",
        fontsize=8,
        color="tab:red",
        bbox={"boxstyle": "round", "facecolor": "white", "alpha": 0.9, "edgecolor": "tab:red"},
    )


def _usl_top(fit: UslFit, n: np.ndarray) -> float:
    """Right end of the USL chart: past the data and, if near, past N*."""
    top = float(n.max()) * 1.25
    if math.isfinite(fit.peak_load) and fit.peak_load < 4 * n.max():
        top = max(top, fit.peak_load * 1.3)
    return top


def _mark_peak(ax: Any, fit: UslFit, top: float) -> None:
    """A dotted vertical line at N* when it falls on the chart."""
    if math.isfinite(fit.peak_load) and fit.peak_load <= top:
        label = (
            f"peak N* ≈ {fmt_count(fit.peak_load)}, X ≈ {fmt_value(fit.peak_throughput, fit.unit)}"
        )
        ax.axvline(fit.peak_load, ls=":", color="tab:red", label=label)


def _pair(n: ArrayLike, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Two float arrays of equal length, or ValueError."""
    n_arr, y_arr = np.asarray(n, dtype=float), np.asarray(y, dtype=float)
    if n_arr.shape != y_arr.shape:
        raise ValueError(
            f"got {n_arr.size} sizes but {y_arr.size} values; pass one value per size."
        )
    return n_arr, y_arr


def complexity_chart(
    fit: ComplexityFit,
    n: ArrayLike,
    cost: ArrayLike,
    path: str | Path,
    *,
    x_label: str = "input size n",
    y_label: str = "cost (s)",
    title: str | None = None,
) -> Path:
    """Plot a complexity fit: points, the chosen class with its CI band, the runner-up.

    Args:
        fit: The fit from fit_complexity.
        n: Sizes that were measured, shape (k,).
        cost: Cost at each size, shape (k,), in the unit named by y_label.
        path: PNG file to write.
        x_label: Label of the size axis.
        y_label: Label of the cost axis, with its unit.
        title: Chart title; the chosen class by default.

    Returns:
        The path written.

    Raises:
        ValueError: If n and cost differ in length.
    """
    n_arr, y_arr = _pair(n, cost)
    log_x = _log_x_wanted(n_arr)
    grid = (
        np.geomspace(n_arr.min(), n_arr.max(), 300)
        if log_x
        else np.linspace(n_arr.min(), n_arr.max(), 300)
    )
    fig, ax = _figure()
    low, high = fit.band(grid)
    ax.fill_between(grid, low, high, alpha=0.25, label=f"{fit.level:.0%} CI of the fit")
    rank = {"fits": "best", "tied": "tied", "none": "closest; no class fits"}[fit.verdict]
    ax.plot(grid, fit.predict(grid), lw=2, label=f"{fit.model} ({rank})")
    if fit.runner_up is not None:
        rank = "contradicted" if fit.runner_up.model in fit.contradicted else "runner-up"
        rank = "tied" if fit.runner_up.model in fit.tied else rank
        worse = f", Δ{fit.criterion} = +{fit.delta:.1f}" if fit.delta > 0 else ""
        label = f"{fit.runner_up.model} ({rank}{worse})"
        ax.plot(grid, fit.runner_up.predict(grid), "--", color="grey", label=label)
    ax.scatter(n_arr, y_arr, color="black", zorder=3, s=18, label="measured")
    _scale_axes(ax, log_x, y_arr)
    ax.set(xlabel=x_label, ylabel=y_label)
    _y_ticks(ax, fit.unit)
    if fit.verdict == "none":
        _note(ax, f"no class fits these points:\n{fit.why_none}")
    return _save(fig, ax, path, title or complexity_title("", fit))


def complexity_title(name: str, fit: ComplexityFit) -> str:
    """'NAME: O(n), 366 ns + 20.9 ns × n', 'NAME: O(n) or O(n log n)', 'NAME: no class fits'."""
    head = f"{name}: " if name else "cost(n) = a + b·g(n): "
    slope = "" if fit.slope is None else f"\ncost {fit.slope.words(fit.verdict == 'none')}"
    if fit.verdict == "none":
        return f"{head}no class fits (closest {fit.model}){slope}"
    if fit.verdict == "tied":
        names = sorted(fit.tied, key=list(COMPLEXITY_MODELS).index)
        return f"{head}{' or '.join(names)} (the data cannot tell them apart){slope}"
    return f"{head}{fit.model}, {fit.best.formula(fit.unit)}"


def _scale_axes(ax: Any, log_x: bool, y: np.ndarray) -> None:
    """Log–log when the sizes span decades (and costs are positive)."""
    if log_x:
        ax.set_xscale("log")
        if y.min() > 0:
            ax.set_yscale("log")


def breakeven_chart(
    result: BreakEven,
    path: str | Path,
    *,
    points_a: tuple[ArrayLike, ArrayLike] | None = None,
    points_b: tuple[ArrayLike, ArrayLike] | None = None,
    x_label: str = "input size n",
    y_label: str = "total cost (s)",
    title: str | None = None,
) -> Path:
    """Plot both total-cost curves (cold + a + b·g(n)) and mark their crossing.

    Args:
        result: The result of breakeven.
        path: PNG file to write.
        points_a: Optional measured (n, cost) of A, drawn with its cold cost added.
        points_b: Optional measured (n, cost) of B.
        x_label: Label of the size axis.
        y_label: Label of the cost axis, with its unit.
        title: Chart title; the break-even sentence by default.

    Returns:
        The path written.
    """
    grid = _breakeven_grid(result)
    fig, ax = _figure()
    for label, fit, cold, pts, color in (
        (result.labels[0], result.fit_a, result.cold_a, points_a, "tab:blue"),
        (result.labels[1], result.fit_b, result.cold_b, points_b, "tab:orange"),
    ):
        _cost_curve(
            ax, grid, fit, cold, f"{label}: {fit.model} + cold cost {fmt_time(cold)}", color
        )
        if pts is not None:
            ax.scatter(pts[0], cold + np.asarray(pts[1], dtype=float), color=color, s=16, zorder=3)
    _mark_crossing(ax, result)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set(xlabel=x_label, ylabel=y_label)
    _y_ticks(ax, result.fit_a.unit)
    if result.refuted:
        _note(ax, "no break-even claimed: the fitted curves\ncontradict the measurements")
    return _save(fig, ax, path, title or breakeven_title("", result))


def breakeven_title(name: str, result: BreakEven) -> str:
    """'NAME' over the break-even sentence, wrapped to fit the chart's width."""
    import textwrap

    lines = textwrap.wrap(result.sentence(), 95)
    return "\n".join(([name] if name else []) + lines[:3])


def _breakeven_grid(result: BreakEven) -> np.ndarray:
    """Sizes to draw: the data of both sides and, if any, the crossing and its CI."""
    lo = min(result.fit_a.n_range[0], result.fit_b.n_range[0])
    hi = max(result.fit_a.n_range[1], result.fit_b.n_range[1])
    n = result.n_star
    if n is not None:
        for v in (n.value, n.ci_high):
            if math.isfinite(v):
                hi = max(hi, 3 * v)
        lo = min(lo, n.value / 3)
    return np.geomspace(max(lo, 1e-9), hi, 400)


def _cost_curve(
    ax: Any, grid: np.ndarray, fit: ComplexityFit, cold: float, label: str, color: str
) -> None:
    """One side's fitted total cost with its CI band."""
    low, high = fit.band(grid)
    ax.fill_between(grid, cold + np.maximum(low, 1e-300), cold + high, color=color, alpha=0.2)
    ax.plot(grid, cold + fit.predict(grid), color=color, lw=2, label=label)


def _mark_crossing(ax: Any, result: BreakEven) -> None:
    """Vertical line at n* and a shaded span over its CI."""
    n = result.n_star
    if n is None:
        return
    ax.axvline(n.value, color="tab:red", ls=":", label=f"break-even n* ≈ {fmt_count(n.value, 3)}")
    if math.isfinite(n.ci_high):
        span = f"{n.level:.0%} CI of n*"
        ax.axvspan(max(n.ci_low, 1e-9), n.ci_high, color="tab:red", alpha=0.1, label=span)
