"""Service-level objectives of ``perflab http --slo``: the keys a limit may bound, the
limits in words, and which limits a step missed.

A step misses a limit when its figure is above it (``p99 > 10 ms``), as k6's thresholds
judge a run; latencies are the step's HdrHistogram percentiles from the intended send
time (docs/http.md).
"""

from __future__ import annotations

import math
from typing import Any

from perflab.units import format_bytes

#: What ``--slo`` may bound: latencies (s), the error share, "rss" (with --watch: bytes).
SLO_KEYS = ("p50", "p90", "p99", "p99.9", "max", "error", "rss")


def slo_thresholds(slo_s: float | dict[str, float] | None) -> dict[str, float]:
    """The SLO as {key: limit}: a bare number is a p99 limit in seconds (None: none)."""
    if slo_s is None:
        return {}
    return dict(slo_s) if isinstance(slo_s, dict) else {"p99": float(slo_s)}


def slo_text(slo: dict[str, float]) -> str:
    """The SLO in words, e.g. "p99 ≤ 10 ms, error ≤ 0.1%, RSS ≤ 200 MB"."""
    return ", ".join(_limit_words(k, v) for k, v in slo.items())


def _limit_words(key: str, limit: float, over: bool = False) -> str:
    """One SLO limit in words: "p99 ≤ 10 ms", or with ``over`` "p99 over the 10 ms SLO"."""
    if key == "error":
        return f"errors over the {limit * 100:.3g}% SLO" if over else f"errors ≤ {limit * 100:.3g}%"
    if key == "rss":
        return f"RSS over the {format_bytes(limit)} SLO" if over else f"RSS ≤ {format_bytes(limit)}"
    return f"{key} over the {limit * 1e3:g} ms SLO" if over else f"{key} ≤ {limit * 1e3:g} ms"


def slo_value(s: Any, key: str) -> float:
    """The figure of step ``s`` (a :class:`perflab.analyze.http.StepSummary`) an SLO key
    bounds: seconds, a share, or RSS bytes (NaN unwatched)."""
    if key == "error":
        return s.error_fraction
    if key == "rss":
        return float(s.server.rss_peak_bytes) if s.server is not None else math.nan
    return s.latency_s[key]


def slo_misses(s: Any, slo: dict[str, float], unmeasured: bool = True) -> list[str]:
    """The SLO limits this step missed, in words (empty: it met them all).

    Args:
        s: the step (a :class:`perflab.analyze.http.StepSummary`).
        slo: {key of :data:`SLO_KEYS`: limit (s, a fraction for "error", bytes for "rss")}.
        unmeasured: whether a latency that could not be measured (no successful
            request) counts as a miss. An RSS never read (no watched process alive
            in the step) is a miss only then too.
    """
    out = []
    for key, limit in slo.items():
        value = slo_value(s, key)
        if value <= limit or (not unmeasured and not math.isfinite(value)):
            continue
        out.append(_limit_words(key, limit, over=True))
    return out
