"""Memory over time in the PNG charts: RSS timelines under ``--chart``'s panels.

``perflab http --watch … --chart`` adds a full-width panel under the throughput and
latency panels: the watched processes' resident memory (and their CPU, in cores) over
the sweep, with the step boundaries; ``perflab run --memory --chart`` adds one under
the distributions: each worker process's RSS from spawn to exit, one colour per
benchmark; ``perflab cmd --memory --chart`` each run's summed tree RSS. The timelines
come from :mod:`perflab.measure.memory`, as saved in the results file.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: one timeline to draw: (label, seconds, resident bytes)
Series = tuple[str, Sequence[float], Sequence[float]]


def draw_memory(ax: Any, series: Sequence[Series], boundaries: Sequence[float] = (),
                title: str = "resident memory (RSS)", x_label: str = "time (s)") -> None:
    """Draw RSS timelines (MB) as steps on ``ax``, with dotted vertical ``boundaries``.

    Series with the same label share a colour and a legend entry (e.g. every worker
    process of one benchmark).
    """
    import matplotlib

    colours: dict[str, Any] = {}
    cycle = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    for label, t, rss in series:
        first = label not in colours
        colour = colours.setdefault(label, cycle[len(colours) % len(cycle)])
        ax.step(list(t), [b / 1e6 for b in rss], where="post", color=colour, linewidth=1,
                alpha=0.8, label=label if first else None)
    for x in boundaries:
        ax.axvline(x, color="gray", linestyle=":", linewidth=0.8)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(x_label)
    ax.set_ylabel("RSS (MB)")
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
    return [(b.id, p.memory["t_s"], p.memory["rss_bytes"]) for b in benches
            for p in b.processes if p.memory and p.memory.get("t_s")]


def add_memory_panel(fig: Any, series: Sequence[Series], boundaries: Sequence[float] = (),
                     title: str = "resident memory (RSS)", x_label: str = "time (s)",
                     height_in: float = 2.9) -> Any:
    """Grow ``fig`` by ``height_in`` inches and draw the timelines in a new full-width
    panel at its bottom; the existing panels keep their size. Returns the new axes."""
    width, height = fig.get_size_inches()
    total = height + height_in
    fig.set_size_inches(width, total)
    share = height / total
    for ax in fig.axes:
        box = ax.get_position()
        ax.set_position([box.x0, 1 - (1 - box.y0) * share, box.width, box.height * share])
    bottom = fig.add_axes([0.08, 0.55 / total, 0.88, (height_in - 1.3) / total])
    draw_memory(bottom, series, boundaries, title, x_label)
    return bottom
