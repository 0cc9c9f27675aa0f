"""Memory over time in the PNG charts: RSS timelines under ``--chart``'s panels.

``perflab http --watch … --chart`` adds a full-width panel under the throughput and
latency panels: the watched processes' resident memory (and their CPU, in cores) over
the sweep, with the step boundaries; ``perflab run --memory --chart`` adds one under
the distributions: each worker process's RSS from spawn to exit, one colour per
benchmark, and a second one with each worker's Python heap over its heap pass
(:mod:`perflab.engines.run.heap`); ``perflab cmd --memory --chart`` each run's summed tree
RSS. The timelines come from :mod:`perflab.engines.memory`, as saved in the results
file. The HTML report (:mod:`perflab.report.html.charts`) draws the same series.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: one timeline to draw: (label, seconds, resident bytes)
Series = tuple[str, Sequence[float], Sequence[float]]


def _byte_unit(series: Sequence[Series]) -> tuple[str, float]:
    """(unit, bytes per unit) for the largest magnitude in ``series``: MB, kB or B."""
    top = max((abs(v) for _, _, values in series for v in values), default=0.0)
    return ("MB", 1e6) if top >= 1e6 else ("kB", 1e3) if top >= 1e3 else ("B", 1.0)


def draw_memory(
    ax: Any,
    series: Sequence[Series],
    boundaries: Sequence[float] = (),
    title: str = "resident memory (RSS)",
    x_label: str = "time (s)",
    y_label: str = "RSS",
) -> None:
    """Draw memory timelines (bytes, shown in MB, kB or B by their size) as steps on
    ``ax``, with dotted vertical ``boundaries``; the y axis reads ``y_label (unit)``.

    Series with the same label share a colour and a legend entry (e.g. every worker
    process of one benchmark).
    """
    import matplotlib

    unit, factor = _byte_unit(series)
    colours: dict[str, Any] = {}
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for label, t, values in series:
        first = label not in colours
        colour = colours.setdefault(label, cycle[len(colours) % len(cycle)])
        ax.step(
            list(t),
            [b / factor for b in values],
            where="post",
            color=colour,
            linewidth=1,
            alpha=0.8,
            label=label if first else None,
        )
    for x in boundaries:
        ax.axvline(x, color="gray", linestyle=":", linewidth=0.8)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(x_label)
    ax.set_ylabel(f"{y_label} ({unit})")
    ax.grid(True, alpha=0.3)
    if colours:
        ax.legend(fontsize=7, loc="best", ncol=min(len(colours), 4))


def sweep_series(steps: Sequence[Any]) -> tuple[list[Series], list[float]]:
    """The watched processes' timelines over a sweep, and the steps' start times.

    Args:
        steps: :class:`perflab.model.HttpStep` with ``watched`` parts (times since the
            sweep started).

    Returns:
        ([(name pid, t_s, rss_bytes)] per watched process, every step's first time).
    """
    merged: dict[str, tuple[list[float], list[float]]] = {}
    boundaries = []
    for step in steps:
        for part in step.watched:
            t, rss = merged.setdefault(f"{part['name']} {part['pid']}", ([], []))
            t += part["t_s"]
            rss += part["rss_bytes"]
        starts = [p["t_s"][0] for p in step.watched if p.get("t_s")]
        if starts:
            boundaries.append(min(starts))
    return [(k, t, rss) for k, (t, rss) in merged.items()], boundaries[1:]


def process_series(benches: Sequence[Any]) -> list[Series]:
    """Each ``run --memory`` worker's timeline, labelled by its benchmark id."""
    return [
        (b.id, p.memory["t_s"], p.memory["rss_bytes"])
        for b in benches
        for p in b.processes
        if p.memory and p.memory.get("t_s")
    ]


def heap_series(benches: Sequence[Any]) -> list[Series]:
    """Each ``run --memory`` worker's Python heap over its heap pass: (benchmark id,
    calls since the baseline, traced bytes above it)."""
    return [
        (b.id, p.heap["calls"], p.heap["traced_bytes"])
        for b in benches
        for p in b.processes
        if p.heap and p.heap.get("calls")
    ]


def cmd_series(benches: Sequence[Any]) -> list[Series]:
    """Each ``cmd --memory`` run's summed tree RSS, labelled by its command."""
    from perflab.analyze.cmd import timed_runs

    return [
        (b.label, r.memory["t_s"], r.memory["rss_bytes"])
        for b in benches
        for r in timed_runs(b)
        if r.memory and r.memory.get("t_s")
    ]


#: the panels' titles and x labels, shared by the PNG charts and the HTML report
RUN_RSS = (
    "each worker process's resident memory, spawn to exit (--memory)",
    "time since the process was spawned (s)",
)
RUN_HEAP = (
    "each worker process's Python heap over its heap pass (tracemalloc, after timing)",
    "calls since the pass's baseline",
)
CMD_RSS = (
    "each run's resident memory, the command and its children summed (--memory)",
    "time since the run was spawned (s)",
)
WATCHED = (
    "watched processes: resident memory (dotted: step starts)",
    "time since the sweep started (s)",
)


def add_memory_panel(
    fig: Any,
    series: Sequence[Series],
    boundaries: Sequence[float] = (),
    title: str = "resident memory (RSS)",
    x_label: str = "time (s)",
    height_in: float = 2.9,
    y_label: str = "RSS",
) -> Any:
    """Grow ``fig`` by ``height_in`` inches and draw the timelines in a new full-width
    panel at its bottom; the existing panels keep their size. Returns the new axes."""
    bottom = add_bottom_panel(fig, height_in)
    draw_memory(bottom, series, boundaries, title, x_label, y_label)
    return bottom


def add_bottom_panel(fig: Any, height_in: float) -> Any:
    """Grow ``fig`` by ``height_in`` inches (≥ 1.5) and return a new empty full-width
    axes at its bottom; the existing panels keep their size and place."""
    width, height = fig.get_size_inches()
    total = height + height_in
    fig.set_size_inches(width, total)
    share = height / total
    for ax in fig.axes:
        box = ax.get_position()
        ax.set_position([box.x0, 1 - (1 - box.y0) * share, box.width, box.height * share])
    return fig.add_axes([0.08, 0.55 / total, 0.88, (height_in - 1.3) / total])
