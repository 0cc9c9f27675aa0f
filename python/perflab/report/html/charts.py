"""Charts of the HTML report as inline SVG, drawn server-side with matplotlib.

Why SVG from matplotlib rather than a JavaScript library: the report must open
from disk with no network, print, and show its charts with JavaScript off; an
inlined Plotly bundle alone is about 4.5 MB, while these charts are 10–100 KB
each and need no script at all. Text stays text (``svg.fonttype = none``), so
names are searchable and matplotlib escapes them as XML; math text is off so a
``$`` in a name is just a character. Point clouds are thinned to
:data:`MAX_POINTS` per row (seeded) to bound the file's size.

Each ``*_figure`` function returns a matplotlib figure; :func:`to_svg` turns it into one
``<svg …>…</svg>`` string for the page, :func:`save_png` into a PNG (``--chart``).
"""

from __future__ import annotations

import io
import math
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from perflab.model.estimate import Estimate
from perflab.report.escape import terminal
from perflab.report.html.axes import linear_axis, log_axis, positive, scale_axis
from perflab.report.pyplot import visible_text

#: Most points drawn per row of a distribution (a seeded sample of the rest).
MAX_POINTS = 300
#: Longest label drawn, characters.
LABEL_CHARS = 48
#: Most rows (benchmarks, commands) one chart draws: 2,000 rows took about a minute and
#: 850 MB to draw, unreadable; with more, the first MAX_ROWS are drawn and the title says
#: so (the tables list every one).
MAX_ROWS = 60


def _pyplot() -> Any:
    from perflab.report.pyplot import pyplot

    plt = pyplot()
    plt.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "perflab"})
    return plt


def pyplot_for_charts() -> Any:
    """``matplotlib.pyplot`` set up for the page's charts (text kept as SVG text)."""
    return _pyplot()


def short_label(text: str) -> str:
    """A name as a tick or legend label (see :func:`_label`)."""
    return _label(text)


def first_rows(
    title: str, names: Sequence[str], *columns: Sequence[Any] | None
) -> tuple[str, Sequence[str], list[Any]]:
    """(title, names, columns) cut to the first :data:`MAX_ROWS` rows, the title then
    saying how many there are; unchanged when there are no more. A None column stays None."""
    if len(names) <= MAX_ROWS:
        return title, names, list(columns)
    return (
        f"{title} (the first {MAX_ROWS} of {len(names):,}; the table lists every one)",
        names[:MAX_ROWS],
        [None if c is None else c[:MAX_ROWS] for c in columns],
    )


def _label(text: str) -> str:
    """A name as a tick or legend label: one line, controls escaped, at most
    :data:`LABEL_CHARS` characters."""
    text = terminal(text, one_line=True)
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


def to_svg(fig: Any) -> str:
    """The figure as an inline ``<svg>`` element (XML prolog and DOCTYPE dropped); closes it."""
    plt = _pyplot()
    buffer = io.StringIO()
    try:
        visible_text(fig).savefig(buffer, format="svg", bbox_inches="tight")
    finally:
        plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def scales(fig: Any) -> dict[str, str]:
    """The scale of each axis of ``fig``'s first axes: ``{"x-scale": "log", "y-scale":
    "linear"}`` (written on the page as ``data-*``: what the layout test reads)."""
    if not fig.axes:
        return {}
    ax = fig.axes[0]
    return {"x-scale": ax.get_xscale(), "y-scale": ax.get_yscale()}


def chart(fig: Any, caption: str, kind: str, **data: float | str) -> str:
    """``fig`` as a ``<figure>`` of the page: its SVG, the caption, ``data-chart=kind``,
    the scales of its axes (:func:`scales`) and ``data`` as ``data-*`` attributes
    (underscores written as dashes). Closes the figure."""
    from perflab.report.html.page import figure_html

    attrs: dict[str, float | str] = {**scales(fig)}
    attrs.update({k.replace("_", "-"): v for k, v in data.items()})
    return figure_html(to_svg(fig), caption, kind, attrs)


def file_svg(draw: Callable[[Path], object]) -> str:
    """An SVG from a chart function that writes a file (``draw(path)``), e.g. the sweep chart."""
    _pyplot()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "chart.svg"
        draw(path)
        text = path.read_text(encoding="utf-8")
    return text[text.index("<svg") :]


def _scale(values: Sequence[float]) -> tuple[str, float]:
    from perflab.units import time_unit_for

    finite = sorted(v for v in values if math.isfinite(v))
    return time_unit_for(finite[len(finite) // 2] if finite else 1.0)


def _horizontal() -> dict[str, Any]:
    """``boxplot``'s keyword for horizontal boxes: ``orientation`` from matplotlib 3.10 on
    (``vert`` is deprecated there), ``vert=False`` before it (pyproject allows 3.8)."""
    import matplotlib

    version = tuple(int(part) for part in matplotlib.__version__.split(".")[:2] if part.isdigit())
    return {"orientation": "horizontal"} if version >= (3, 10) else {"vert": False}


def _thin(values: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return values if values.size <= MAX_POINTS else rng.choice(values, MAX_POINTS, replace=False)


def distribution_figure(
    title: str,
    names: Sequence[str],
    samples: Sequence[Sequence[float]],
    points: Sequence[Sequence[float]],
    point_label: str,
    axis: str = "time per op",
) -> Any:
    """Box plots of ``samples`` per row with ``points`` drawn over them.

    Args:
        title: the chart's title.
        names: one label per row.
        samples: per row, values in seconds (the box: quartiles, whiskers at 1.5 IQR).
        points: per row, values in seconds drawn as dots (e.g. per-process medians).
        point_label: legend text of the dots.
        axis: what the values are, for the axis label ("time per op", "wall time per run").

    Returns:
        The matplotlib figure (see :func:`to_svg`, :func:`save_png`); its x axis is
        logarithmic when the values span more than a decade
        (:func:`perflab.report.html.axes.scale_axis`).
    """
    title, names, (samples, points) = first_rows(title, names, samples, points)
    plt = _pyplot()
    unit, factor = _scale([v for row in samples for v in row] or [1.0])
    rng = np.random.default_rng(0)
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.45 * len(names)))
    rows = [np.asarray(s, dtype=float) / factor for s in samples]
    if any(r.size for r in rows):
        ax.boxplot(
            [_thin(r, rng) if r.size else np.array([np.nan]) for r in rows],
            widths=0.6,
            showfliers=False,
            medianprops={"color": "tab:blue"},
            **_horizontal(),
        )
    for i, row in enumerate(points, start=1):
        values = _thin(np.asarray(row, dtype=float) / factor, rng)
        ax.scatter(
            values,
            i + rng.uniform(-0.18, 0.18, values.size),
            s=9,
            alpha=0.6,
            color="tab:orange",
            label=point_label if i == 1 else None,
            zorder=3,
        )
    ax.set_yticks(range(1, len(names) + 1), [_label(n) for n in names], fontsize=8)
    ax.invert_yaxis()
    log = scale_axis(
        ax, "x", [v for r in rows for v in r] + [v / factor for p in points for v in p]
    )
    ax.set_xlabel(f"{axis} ({unit}{', log scale' if log else ''})")
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="x", which="both" if log else "major", alpha=0.3)
    if any(len(p) for p in points):
        ax.legend(fontsize=7, loc="lower right")
    return fig


#: Colours of the verdicts in a forest plot.
VERDICT_COLOURS = {
    "faster": "tab:green",
    "slower": "tab:red",
    "same": "tab:blue",
    "inconclusive": "0.5",
    "failed": "black",
}


def forest_figure(
    title: str,
    names: Sequence[str],
    ratios: Sequence[Estimate | None],
    reference: str,
    band: float | None = None,
    verdicts: Sequence[str] | None = None,
    blocks: Sequence[str] | None = None,
) -> Any:
    """A forest plot: each row's ratio with its CI on a log axis, a line at 1.

    Rows whose ratio is exactly 1 with no CI (the reference itself) are drawn as a
    hollow diamond on the line, so no row is left empty; rows with no ratio at all are
    left out. With ``blocks``, rows are drawn in blocks of like rows (e.g. the same
    parameters: ratios are only meaningful within one), each under its block's label.

    Args:
        title: the chart's title.
        names: one label per row.
        ratios: each row's ratio with its CI, None where there is none.
        reference: what the ratios are against, for the axis label.
        band: a noise threshold t (fraction) to shade as [1 − t, 1 + t], or None.
        verdicts: one verdict per row, colouring its point (:data:`VERDICT_COLOURS`).
        blocks: one block label per row (rows of one block need not be adjacent), or None.

    Returns:
        The matplotlib figure (see :func:`to_svg`, :func:`save_png`).
    """
    title, names, (ratios, verdicts, blocks) = first_rows(title, names, ratios, verdicts, blocks)
    order: dict[str, list[int]] = {}
    for i, ratio in enumerate(ratios):
        if ratio is not None and math.isfinite(ratio.value) and ratio.value > 0:
            order.setdefault(blocks[i] if blocks else "", []).append(i)
    rows: list[tuple[str, int | None]] = []  # (label, row index; None: a block's header)
    for block, members in order.items():
        if block:
            rows.append((block, None))
        rows += [(names[i], i) for i in members]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.4 * max(1, len(rows))))
    for y, (_, i) in enumerate(rows):
        if i is None:
            continue
        ratio = ratios[i]
        assert ratio is not None
        r, low, high = ratio.value, ratio.ci_low, ratio.ci_high
        colour = VERDICT_COLOURS.get(verdicts[i], "tab:blue") if verdicts else "tab:blue"
        if all(math.isfinite(v) and v > 0 for v in (low, high)):
            ax.errorbar(
                [r], [y], xerr=[[r - low], [high - r]], fmt="o", color=colour, capsize=3, ms=5
            )
        else:  # the reference itself: exactly 1, no CI
            ax.scatter([r], [y], marker="D", s=30, facecolors="white", edgecolors="0.3", zorder=3)
    if band is not None and math.isfinite(band) and 0 < band < 1:
        ax.axvspan(1 - band, 1 + band, color="0.85", zorder=0)
    ax.axvline(1.0, color="0.4", ls="--", lw=1)
    ax.set_xscale("log")
    log_axis(ax.xaxis)
    ax.set_yticks(range(len(rows)), [_label(text) for text, _ in rows], fontsize=8)
    for tick, (_, i) in zip(ax.get_yticklabels(), rows):
        if i is None:
            tick.set_fontweight("bold")
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"ratio to {reference} (95% CI, log scale; ◇ = the reference itself)")
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="x", which="both", alpha=0.3)
    return fig


def cold_warm_figure(
    title: str, names: Sequence[str], cold_s: Sequence[float], warm_s: Sequence[float]
) -> Any:
    """The first call in a fresh process (cold) beside the steady-state median (warm),
    per row, on a log axis (seconds)."""
    title, names, (cold_s, warm_s) = first_rows(title, names, cold_s, warm_s)
    plt = _pyplot()
    unit, factor = _scale(list(warm_s))
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.4 * len(names)))
    y = np.arange(len(names))
    cold = np.asarray(cold_s, dtype=float) / factor
    warm = np.asarray(warm_s, dtype=float) / factor
    ax.hlines(y, np.fmin(cold, warm), np.fmax(cold, warm), color="0.7", lw=2)
    ax.scatter(cold, y, color="tab:red", label="cold: first call", zorder=3)
    ax.scatter(warm, y, color="tab:blue", label="warm: median", zorder=3)
    ax.set_xscale("log")
    log_axis(ax.xaxis)
    ax.set_yticks(y, [_label(n) for n in names], fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel(f"time per call ({unit}, log scale)")
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return fig


def user_sys_figure(
    title: str,
    names: Sequence[str],
    user_s: Sequence[float],
    sys_s: Sequence[float],
    wall_s: Sequence[float],
) -> Any:
    """Median user and system CPU seconds per run as stacked bars, the median wall
    time as a black tick (a bar longer than the tick: the command used several cores)."""
    title, names, (user_s, sys_s, wall_s) = first_rows(title, names, user_s, sys_s, wall_s)
    plt = _pyplot()
    unit, factor = _scale(list(wall_s))
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.4 * len(names)))
    y = np.arange(len(names))
    user = np.nan_to_num(np.asarray(user_s, dtype=float) / factor)
    system = np.nan_to_num(np.asarray(sys_s, dtype=float) / factor)
    ax.barh(y, user, color="tab:blue", label="user")
    ax.barh(y, system, left=user, color="tab:orange", label="sys")
    ax.scatter(
        np.asarray(wall_s, dtype=float) / factor,
        y,
        marker="|",
        s=300,
        color="black",
        label="wall (median)",
        zorder=3,
    )
    ax.set_yticks(y, [_label(n) for n in names], fontsize=8)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlabel(f"CPU time per run ({unit})")
    ax.set_title(title, fontsize=10, loc="left")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(axis="x", alpha=0.3)
    return fig


def spectrum_figure(title: str, steps: Sequence[tuple[str, np.ndarray, np.ndarray]]) -> Any:
    """The latency percentile spectrum of each step, as HdrHistogram plots it.

    Args:
        title: the chart's title.
        steps: (label, bucket values in µs ascending, counts) per step, from
            :func:`perflab.analyze.hdr.decode_histogram`.

    Returns:
        The figure: latency (log) against 1/(1 − q) (log), ticks at 50%, 90%, 99%, 99.9%….
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 4.2))
    top = 1.0
    for label, values, counts in steps:
        total = counts.sum()
        if not total:
            continue
        q = np.cumsum(counts) / total
        below = np.concatenate([[0.0], q[:-1]])  # the bucket's lower quantile
        x = 1 / np.clip(1 - below, 1 / total, None)
        ax.step(x, values / 1000, where="post", label=_label(label), lw=1.2)
        top = max(top, float(x.max()))
    ax.set_xscale("log")
    ax.set_yscale("log")
    log_axis(ax.yaxis, ax.xaxis)  # the x labels are then set to percentiles below
    ticks = [t for t in (1, 2, 10, 100, 1000, 10000, 100000) if t <= top * 1.01]
    names = {
        1: "0%",
        2: "50%",
        10: "90%",
        100: "99%",
        1000: "99.9%",
        10000: "99.99%",
        100000: "99.999%",
    }
    ax.set_xticks(ticks, [names[t] for t in ticks])
    ax.set_xlabel("percentile")
    ax.set_ylabel("latency (ms, log scale)")
    ax.set_title(title, fontsize=10, loc="left")
    ax.grid(which="both", alpha=0.3)
    if steps:
        ax.legend(fontsize=7, loc="upper left", ncol=2)
    return fig


def fit_figure(
    title: str,
    curves: Sequence[
        tuple[str, Sequence[float], Sequence[float], Sequence[float], Sequence[float]]
    ],
    x: Sequence[float],
    y: Sequence[float],
    residuals: Sequence[float],
    x_label: str,
    y_label: str,
    log: bool = False,
    mark: tuple[str, float] | None = None,
    curve_points: Sequence[tuple[Sequence[float], Sequence[float]]] = (),
) -> Any:
    """A fitted model: each curve with its CI band over the measured points, and (when
    given) a residual panel below.

    Args:
        title: the chart's title.
        curves: (label, x, fitted, band low, band high) per curve, each shape (k,).
        x / y: the measured points of a single series, shape (m,) each (empty: none).
        residuals: measured − fitted at each of those points, shape (m,), or empty.
        x_label / y_label: the axes' labels, with units.
        log: log axes both ways; else each axis is logarithmic when what it shows spans
            more than a decade (:func:`perflab.report.html.axes.scale_axis`), and on a
            log y axis the residuals are drawn as a percentage of the fitted value.
        mark: (label, x) of a vertical line, e.g. a break-even n*, or None.
        curve_points: (x, y) measured points per curve, in the curve's colour (a
            break-even's two series), shape (m,) each.

    Returns:
        The matplotlib figure.
    """
    plt = _pyplot()
    panel = bool(len(residuals)) and len(residuals) == len(x)
    fig, axes = plt.subplots(
        2 if panel else 1,
        1,
        figsize=(9, 5.6 if panel else 4.2),
        sharex=True,
        squeeze=False,
        gridspec_kw={"height_ratios": [3, 1] if panel else [1]},
    )
    ax = axes[0][0]
    for i, (label, cx, fitted, low, high) in enumerate(curves):
        colour = f"C{i}"
        ax.fill_between(cx, low, high, color=colour, alpha=0.2)
        ax.plot(cx, fitted, color=colour, lw=2, label=_label(label))
    for i, (px, py) in enumerate(curve_points):
        if len(px) and len(px) == len(py):
            ax.scatter(px, py, color=f"C{i}", edgecolors="black", s=22, zorder=3)
    if curve_points:
        ax.scatter([], [], color="white", edgecolors="black", s=22, label="measured")
    if len(x) and len(x) == len(y):
        ax.scatter(x, y, color="black", s=16, zorder=3, label="measured")
    if mark is not None and math.isfinite(mark[1]):
        ax.axvline(mark[1], color="tab:red", ls=":", label=_label(mark[0]))
    xs = [v for _, cx, *_ in curves for v in cx] + list(x)
    ys = [v for *_, fitted, _, _ in curves for v in fitted] + list(y)
    xs += [v for px, _ in curve_points for v in px]
    ys += [v for _, py in curve_points for v in py]
    if log:
        ax.set_xscale("log")
        ax.set_yscale("log")
        log_axis(ax.xaxis, ax.yaxis)
        log_y = True
    else:
        scale_axis(ax, "x", xs)
        log_y = scale_axis(ax, "y", positive(ys))
    ax.set_ylabel(y_label + (", log scale" if log_y else ""))
    ax.set_title(_label(title), fontsize=10, loc="left")
    ax.grid(alpha=0.3, which="both" if log_y else "major")
    ax.legend(fontsize=7, loc="best")
    if panel:
        below = axes[1][0]
        below.axhline(0, color="0.4", lw=1)
        shown = np.asarray(residuals, dtype=float)
        if log_y:  # a percentage of the fitted value reads the same across decades
            fitted_at = np.asarray(y, dtype=float) - shown
            with np.errstate(divide="ignore", invalid="ignore"):
                shown = 100 * shown / fitted_at
        below.scatter(x, shown, color="tab:red", s=14)
        below.set_ylabel("residual %" if log_y else "residual")
        linear_axis(below.yaxis)
        below.grid(alpha=0.3)
        below.set_xlabel(x_label)
    else:
        ax.set_xlabel(x_label)
    return fig


def memory_figure(
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    boundaries: Sequence[float],
    title: str,
    x_label: str,
    y_label: str = "RSS",
) -> Any:
    """Memory over time (or over calls) as steps, one colour per label, with dotted
    vertical ``boundaries`` (e.g. an http sweep's step starts).

    Args:
        series: (label, x values, bytes) per timeline (:mod:`perflab.report.memory_chart`).
        boundaries: x positions of the dotted lines.
        title / x_label: the chart's title and x axis label.
        y_label: what the bytes are ("RSS", "heap"); the unit follows their size.

    Returns:
        The matplotlib figure.
    """
    from perflab.report.memory_chart import draw_memory

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 3.4))
    draw_memory(
        ax, [(_label(label), x, b) for label, x, b in series], boundaries, title, x_label, y_label
    )
    return fig


def save_png(fig: Any, path: str | Path) -> Path:
    """Write a figure as a PNG (100 dpi) and close it. Raises OSError."""
    plt = _pyplot()
    try:
        visible_text(fig).savefig(path, format="png", dpi=100, bbox_inches="tight")
    finally:
        plt.close(fig)
    return Path(path)
