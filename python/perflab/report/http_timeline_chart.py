"""The timeline chart of ``perflab http``: over the run's time, the offered and achieved
rates with the errors per second (top), and the latency percentiles with the send lag
p99 (bottom, log scale), step after step; a ramp's knee as a dotted line.

Drawn as two panels added under the sweep chart's PNG (``--chart``,
:func:`add_timeline_panels`) and as a figure of its own in the HTML report
(:func:`timeline_figure`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perflab.analyze.http import StepSummary
from perflab.model import HttpStep

_LATENCY = (
    ("p50_us", "p50", "tab:blue", "-"),
    ("p99_us", "p99", "tab:purple", "-"),
    ("p999_us", "p99.9", "tab:red", "--"),
    ("send_lag_p99_us", "send lag p99", "tab:gray", ":"),
)


def _series(
    steps: Sequence[HttpStep], summaries: Sequence[StepSummary]
) -> tuple[dict[str, list[Any]], list[float], list[float]]:
    """The steps' timelines joined on one time axis (each step after the one before):
    the columns by name, the step starts, and the knees of ramps (s)."""
    cols: dict[str, list[Any]] = {
        k: [] for k in ("t", "offered", "achieved", "errors", *(c[0] for c in _LATENCY))
    }
    starts: list[float] = []
    knees: list[float] = []
    start = 0.0
    for step, summary in zip(steps, summaries):
        tl = step.timeline
        if tl is None or not len(tl):
            continue
        starts.append(start)
        cols["t"] += [start + t + tl.interval_s / 2 for t in tl.t_s]
        cols["offered"] += [math_nan(v) for v in tl.offered_rate]
        cols["achieved"] += tl.achieved_rate()
        cols["errors"] += [n / tl.interval_s for n in tl.errors]
        for name, *_ in _LATENCY:
            cols[name] += [math_nan(v) / 1e3 for v in getattr(tl, name)]
        if summary.ramp is not None and summary.ramp.knee_t_s is not None:
            knees.append(start + summary.ramp.knee_t_s)
        start += max(step.duration_s, tl.t_s[-1] + tl.interval_s)
    return cols, starts, knees


def math_nan(value: float | None) -> float:
    """``value``, or NaN for None (a gap in the line)."""
    return float("nan") if value is None else float(value)


def draw_timeline(
    rate_ax: Any, latency_ax: Any, steps: Sequence[HttpStep], summaries: Sequence[StepSummary]
) -> bool:
    """Draw the steps' timelines on two axes (``summaries``: the steps' summaries, in the
    same order, for a ramp's knee). Returns False (nothing drawn) when no step has a
    timeline."""
    from perflab.report.pyplot import plain_log_ticks

    cols, starts, knees = _series(steps, summaries)
    if not cols["t"]:
        return False
    t = cols["t"]
    rate_ax.plot(t, cols["offered"], "--", color="tab:gray", label="offered")
    rate_ax.plot(t, cols["achieved"], "-", color="tab:green", label="achieved")
    if any(cols["errors"]):
        rate_ax.plot(t, cols["errors"], "-", color="tab:red", label="errors/s")
    rate_ax.set_ylabel("requests/s")
    rate_ax.set_ylim(bottom=0)
    for name, label, color, style in _LATENCY:
        latency_ax.plot(t, cols[name], style, color=color, label=label)
    latency_ax.set_yscale("log")
    plain_log_ticks(latency_ax)
    latency_ax.set_ylabel("ms (from intended send)")
    latency_ax.set_xlabel("time (s)")
    latency_ax.set_xlim(rate_ax.get_xlim())
    for ax in (rate_ax, latency_ax):
        for s in starts[1:]:
            ax.axvline(s, color="lightgray", linewidth=0.8)
        for k in knees:
            ax.axvline(k, color="tab:orange", linestyle=":", linewidth=1.2)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    rate_ax.set_title(
        "timeline: offered vs achieved"
        + (" (dotted: the ramp's knee)" if knees else "")
        + "; latency per interval",
        fontsize=10,
    )
    return True


def add_timeline_panels(
    fig: Any, steps: Sequence[HttpStep], summaries: Sequence[StepSummary]
) -> None:
    """Add the two timeline panels under ``fig`` (the ``--chart`` PNG); nothing when no
    step has a timeline."""
    from perflab.report.memory_chart import add_bottom_panel

    if not any(s.timeline is not None and len(s.timeline) for s in steps):
        return
    box = add_bottom_panel(fig, 6.0)
    x, y, w, h = box.get_position().bounds
    box.remove()
    gap = 0.35 * h / 4.7  # room for the upper panel's tick labels, in figure units
    rate_ax = fig.add_axes([x, y + (h + gap) / 2, w, (h - gap) / 2])
    latency_ax = fig.add_axes([x, y, w, (h - gap) / 2], sharex=rate_ax)
    draw_timeline(rate_ax, latency_ax, steps, summaries)


def timeline_figure(steps: Sequence[HttpStep], summaries: Sequence[StepSummary]) -> Any:
    """The timeline as a figure of its own (the HTML report), or None when no step has
    a timeline."""
    from perflab.report.pyplot import pyplot

    plt = pyplot()
    fig, (rate_ax, latency_ax) = plt.subplots(2, 1, figsize=(11, 6.4), dpi=110, sharex=True)
    if not draw_timeline(rate_ax, latency_ax, steps, summaries):
        plt.close(fig)
        return None
    fig.tight_layout()
    return fig
