"""Figures of the processes ``perflab http --watch`` sampled: the server's CPU and memory.

From each step's timelines (:attr:`perflab.model.HttpStep.watched`, sampled every
100 ms from /proc by :mod:`perflab.engines.http.watch`) over the step's recorded
window, the same window as the achieved rate: CPU/wall (CPU seconds of all
watched processes ÷ the window; 2.0 = two cores busy), CPU per successful request,
and the peak and growth of their summed RSS over the whole step; beside them, the
same CPU figures of perflab's own load engine (its threads' CPU time from the end of
the warmup to the end of the step), so that a user sees when the load generator costs
more per request than the server it loads.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from perflab.model import HttpStep


@dataclass
class ServerFigures:
    """The watched processes' figures for one step (summed over processes).

    Attributes:
        processes: how many processes were watched.
        cpu_wall: CPU seconds in the recorded window ÷ its length (user + system).
        cpu_per_request_s: CPU seconds in the window ÷ successful responses in it
            (NaN when none).
        rss_peak_bytes: highest summed resident set over the step, bytes.
        rss_growth_bytes: summed RSS at the step's end − at its start, bytes.
        engine_cpu_wall: the load engine's threads' CPU seconds ÷ the recorded window.
        engine_cpu_per_request_s: those CPU seconds ÷ the recorded requests that got an
            answer or an error (NaN when none).
    """

    processes: int
    cpu_wall: float
    cpu_per_request_s: float
    rss_peak_bytes: int
    rss_growth_bytes: int
    engine_cpu_wall: float = math.nan
    engine_cpu_per_request_s: float = math.nan


def _cpu_at(part: dict[str, Any], t: float) -> float:
    """Cumulative CPU seconds at time ``t``, linear between samples (clamped at the ends,
    as ``numpy.interp``; plain Python, so that ``perflab http`` never loads numpy)."""
    ts, cpu = part["t_s"], part["cpu_s"]
    if t >= ts[-1]:
        return float(cpu[-1])
    if t < ts[0]:
        return float(cpu[0])
    i = bisect_right(ts, t)  # ts[i - 1] <= t < ts[i], so t1 > t0
    t0, t1 = ts[i - 1], ts[i]
    return float(cpu[i - 1] + (cpu[i] - cpu[i - 1]) * (t - t0) / (t1 - t0))


def server_figures(step: HttpStep, completed: int = 0) -> ServerFigures | None:
    """The watched processes' figures of ``step``, or None when nothing was watched.

    The recorded window is placed at the end of the step's timeline minus its drain
    (the timeline is cut when the step returns), so its ends are known to about one
    sampling interval (100 ms): CPU/wall of a short step is approximate. ``completed``:
    the step's recorded requests that got an answer or an error (for the engine's CPU
    per request; its CPU runs from the warmup's end to the drain's, a little more than
    the window).
    """
    parts = [p for p in step.watched if len(p.get("t_s", [])) >= 2]
    if not parts:
        return None
    end = max(p["t_s"][-1] for p in parts)
    drain = step.drain_s if math.isfinite(step.drain_s) else 0.0
    window_end = end - drain
    window_start = window_end - step.elapsed_s
    cpu = sum(_cpu_at(p, window_end) - _cpu_at(p, window_start) for p in parts)
    totals: dict[float, int] = {}
    for p in parts:
        for t, rss in zip(p["t_s"], p["rss_bytes"]):
            totals[t] = totals.get(t, 0) + rss
    ordered = [totals[t] for t in sorted(totals)]
    engine = sum(step.thread_cpu_s)
    return ServerFigures(
        processes=len(parts),
        cpu_wall=cpu / step.elapsed_s if step.elapsed_s > 0 else math.nan,
        cpu_per_request_s=cpu / step.ok_responses if step.ok_responses else math.nan,
        rss_peak_bytes=max(ordered),
        rss_growth_bytes=ordered[-1] - ordered[0],
        engine_cpu_wall=engine / step.elapsed_s if step.elapsed_s > 0 else math.nan,
        engine_cpu_per_request_s=engine / completed if completed else math.nan,
    )
