"""The trend chart of ``perflab history BENCHMARK --chart`` (matplotlib, Agg).

One panel per benchmark: the median (or percentile / rate) of each run with its
95% CI as error bars, in commit order (x ticks: short commit ids, ``+`` when the
tree was dirty), a grey dotted line where the environment fingerprint changed,
and a red dashed line with the step's size at each change point; the segments'
levels are drawn as red horizontal lines. matplotlib is imported inside the
function so importing this module stays cheap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from perflab.model.history import Trend
from perflab.report.escape import terminal
from perflab.report.pyplot import visible_text
from perflab.units import time_unit_for

#: Most panels in one chart (a pattern matching more draws the first ones and says so).
MAX_PANELS = 12
#: Longest title shown for a panel, characters.
TITLE_CHARS = 80


def _scale(trend: Trend) -> tuple[str, float]:
    """(unit label, factor) making the values readable: µs, ms, s or req/s."""
    if trend.unit == "1/s":
        return "requests/s", 1.0
    values = [p.row.value for p in trend.points if math.isfinite(p.row.value)]
    return time_unit_for(sorted(values)[len(values) // 2] if values else 1.0)


def trend_chart(trends: Sequence[Trend], path: str | Path, fmt: str = "png") -> Path:
    """Draw the trends (at most :data:`MAX_PANELS`) and write a PNG (or ``fmt``: "svg").

    Args:
        trends: one per panel, each with at least one point.
        path: the file to write.
        fmt: "png" or "svg".

    Returns:
        The path written.

    Raises:
        ValueError: no trends.
        OSError: the file can't be written.
    """
    from perflab.report.pyplot import pyplot

    plt = pyplot()

    if not trends:
        raise ValueError("no trend to draw")
    trends = list(trends)[:MAX_PANELS]
    fig, axes = plt.subplots(len(trends), 1, figsize=(10, 3.2 * len(trends)), squeeze=False)
    try:
        for ax, trend in zip(axes[:, 0], trends):
            _panel(ax, trend)
        fig.tight_layout()
        visible_text(fig).savefig(path, format=fmt, dpi=100)
    finally:
        plt.close(fig)
    return Path(path)


def _panel(ax, trend: Trend) -> None:  # type: ignore[no-untyped-def]
    name, factor = _scale(trend)
    xs = list(range(len(trend.points)))
    ys = [p.row.value / factor for p in trend.points]
    low = [
        max(0.0, (p.row.value - p.row.ci_low) / factor) if math.isfinite(p.row.ci_low) else 0.0
        for p in trend.points
    ]
    high = [
        max(0.0, (p.row.ci_high - p.row.value) / factor) if math.isfinite(p.row.ci_high) else 0.0
        for p in trend.points
    ]
    ax.errorbar(
        xs,
        ys,
        yerr=[low, high],
        fmt="o-",
        color="tab:blue",
        ms=4,
        lw=1,
        capsize=2,
        label="median, 95% CI" if trend.unit == "s" else trend.metric,
    )
    left = [x.index for x in trend.left_out if 0 <= x.index < len(xs)]
    if left:
        ax.plot(
            left,
            [ys[i] for i in left],
            "o",
            ms=9,
            mfc="none",
            mec="tab:orange",
            mew=1.5,
            label="left out of the change-point search",
        )
    for i in trend.fingerprint_changes:
        ax.axvline(i - 0.5, color="0.5", ls=":", lw=1)
    if trend.fingerprint_changes:
        ax.plot([], [], color="0.5", ls=":", label="fingerprint changed")
    bounds = [0, *(c.index for c in trend.changes), len(xs)]
    for change in trend.changes:
        ax.axvline(change.index - 0.5, color="tab:red", ls="--", lw=1)
        ax.annotate(
            f"{change.point.ratio - 1:+.1%}",
            (change.index - 0.5, 1.0),
            xycoords=("data", "axes fraction"),
            ha="left",
            va="top",
            color="tab:red",
            fontsize=8,
        )
    if trend.changes:
        levels = [trend.changes[0].point.before] + [c.point.after for c in trend.changes]
        for (start, end), level in zip(zip(bounds, bounds[1:]), levels):
            ax.hlines(level / factor, start - 0.4, end - 0.6, color="tab:red", lw=1.5)
        ax.plot([], [], color="tab:red", ls="--", label="change point")
    labels = [
        (p.run.git_commit[:7] + ("+" if p.run.git_dirty else ""))
        if p.run.git_commit
        else f"#{p.run.id}"
        for p in trend.points
    ]
    step = max(1, len(xs) // 25)
    ax.set_xticks(xs[::step], labels[::step], rotation=60, fontsize=7)
    ax.set_xlim(-0.6, len(xs) - 0.4)
    bench = terminal(trend.bench, one_line=True)  # a name: one line, as in the tables
    title = bench if len(bench) <= TITLE_CHARS else bench[:TITLE_CHARS] + "…"
    ax.set_title(title, fontsize=10, loc="left")
    ax.set_ylabel(f"{trend.metric} ({name})")
    ax.set_xlabel("runs in commit order")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
