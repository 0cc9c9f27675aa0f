"""The sweep chart of ``perflab http --chart`` (matplotlib, Agg), in autobench's style.

Left panel: achieved rate against offered rate, the x = y line dashed (where a server
with spare capacity sits), error % on a right-hand axis. Right panel: latency p50,
p99 and p99.9 against offered rate on a log scale. Closed-loop sweeps put the
connection count on the x axis instead. Markers show each step's verdict, and a
dotted line the capacity estimate. matplotlib is imported inside the function so
importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from perflab.analyze.http import (
    ERRORS,
    GENERATOR_LIMITED,
    SATURATED,
    Capacity,
    StepSummary,
    Sweep,
)

_MARKERS = {
    "ok": ("o", "tab:green"),
    ERRORS: ("D", "tab:red"),
    SATURATED: ("X", "tab:orange"),
    GENERATOR_LIMITED: ("s", "tab:gray"),
}
_PERCENTILES = (("p50", "tab:blue", "-"), ("p99", "tab:purple", "-"), ("p99.9", "tab:red", "--"))


def sweep_chart(sweep: Sweep, path: str | Path, watched: Any = None, timelines: Any = None) -> Path:
    """Draw the two-panel sweep chart and write it as a PNG.

    Args:
        sweep: the steps with their verdicts (at least one), the capacity estimate (a
            dotted line) and the p99 SLO (a horizontal line when given); its name (the
            request) is the figure's title.
        path: the PNG to write.
        watched: ``--watch``: (timelines, step starts) of
            :func:`perflab.report.memory_chart.sweep_series`, drawn in a panel under the
            two (None or no timelines: no panel).
        timelines: the results' steps: their timelines are drawn in two panels under the
            rest (:func:`perflab.report.http_timeline_chart.add_timeline_panels`).

    Returns:
        The path written.

    Raises:
        ValueError: no summaries.
        OSError: the file can't be written.
    """
    from perflab.report.escape import terminal
    from perflab.report.pyplot import pyplot, visible_text

    plt = pyplot()

    if not sweep.steps:
        raise ValueError("no steps to chart")
    steps = sorted(sweep.steps, key=lambda s: s.load)
    closed = all(s.offered_rate is None for s in steps)
    x_label = "connections (closed loop)" if closed else "offered rate (requests/s)"
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8), dpi=110)
    _throughput(left, steps, closed, x_label, sweep.capacity)
    _latency(right, steps, x_label, sweep.slo_s, sweep.capacity)
    fig.suptitle(terminal(sweep.name, one_line=True), fontsize=11)  # a name: one line
    fig.tight_layout()
    if watched is not None and watched[0]:
        from perflab.report.memory_chart import WATCHED, add_memory_panel

        add_memory_panel(fig, *watched, *WATCHED)
    if timelines:
        from perflab.report.http_timeline_chart import add_timeline_panels

        add_timeline_panels(fig, timelines, sweep.steps)
    out = Path(path)
    visible_text(fig).savefig(out)
    plt.close(fig)
    return out


def _throughput(
    ax: Any, steps: Sequence[StepSummary], closed: bool, x_label: str, cap: Capacity | None
) -> None:
    """Left panel: achieved vs offered, x = y dashed, error % on the right axis."""
    x = [s.load for s in steps]
    ax.plot(x, [s.achieved_rate for s in steps], color="tab:green", label="achieved rate")
    _verdict_markers(ax, steps, [s.achieved_rate for s in steps])
    if not closed:
        top = max(x)
        ax.plot([0, top], [0, top], "k--", linewidth=1, label="offered (x = y)")
    _capacity_line(ax, cap)
    _thousands(ax.xaxis, ax.yaxis)
    ax.set_xlabel(x_label)
    ax.set_ylabel("achieved rate (successful responses/s)")
    ax.set_title("throughput and errors")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    ax.grid(True, alpha=0.3)
    errors = ax.twinx()
    errors.plot(
        x,
        [100 * s.error_fraction for s in steps],
        color="tab:red",
        linestyle=":",
        marker=".",
        label="error %",
    )
    errors.set_ylabel("error % (failed ÷ completed requests)", color="tab:red")
    errors.set_ylim(
        bottom=0,
        top=max(
            5.0,
            *(100 * s.error_fraction * 1.1 for s in steps if s.error_fraction == s.error_fraction),
        ),
    )
    handles, labels = ax.get_legend_handles_labels()
    more, more_labels = errors.get_legend_handles_labels()
    ax.legend(handles + more, labels + more_labels, loc="upper left", fontsize=8)


def _latency(
    ax: Any, steps: Sequence[StepSummary], x_label: str, slo_s: float | None, cap: Capacity | None
) -> None:
    """Right panel: p50, p99, p99.9 in ms on a log scale."""
    x = [s.load for s in steps]
    for name, color, style in _PERCENTILES:
        ax.plot(
            x,
            [s.latency_s[name] * 1e3 for s in steps],
            color=color,
            linestyle=style,
            marker=".",
            label=name,
        )
    if slo_s is not None:
        ax.axhline(
            slo_s * 1e3, color="black", linewidth=1, linestyle="-.", label=f"SLO {slo_s * 1e3:g} ms"
        )
    _capacity_line(ax, cap)
    ax.set_yscale("log")
    _thousands(ax.xaxis, ax.yaxis, digits="g")
    from matplotlib.ticker import LogFormatter  # minor labels in plain text, not TeX source

    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    ax.set_xlabel(x_label)
    ax.set_ylabel("latency of successful requests (ms, log scale)")
    ax.set_title("latency percentiles")
    ax.set_xlim(left=0)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="best", fontsize=8, framealpha=0.8)


def _thousands(*axes: Any, digits: str = ",.0f") -> None:
    """Plain tick labels with thousands separators (no 1e4 offsets, no 10^k)."""
    from matplotlib.ticker import FuncFormatter

    x_axis, *others = axes
    x_axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    for axis in others:
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:{digits}}"))


def _verdict_markers(ax: Any, steps: Sequence[StepSummary], y: Sequence[float]) -> None:
    for verdict, (marker, color) in _MARKERS.items():
        points = [(s.load, v) for s, v in zip(steps, y) if s.verdict == verdict]
        if points:
            xs, ys = zip(*points)
            ax.scatter(xs, ys, marker=marker, color=color, zorder=3, label=f"step: {verdict}")


def _capacity_line(ax: Any, cap: Capacity | None) -> None:
    if cap is not None:
        ax.axvline(
            cap.step.load,
            color="tab:green",
            linestyle=":",
            linewidth=1,
            label=f"capacity estimate ({cap.step.label})",
        )
