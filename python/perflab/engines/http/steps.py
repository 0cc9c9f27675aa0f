"""The HTTP engine's raw output (one step's dict from :func:`perflab._core.http_run`)
turned into the results model: :class:`perflab.model.HttpStep` with its
:class:`perflab.model.Histogram` objects and Server-Timing figures."""

from __future__ import annotations

import math
from typing import Any

from perflab.model import Histogram, HttpStep, ServerTiming
from perflab.model.http_step import STEP_HISTOGRAMS
from perflab.model.http_timeline import Timeline

_CONNECT_ERRORS = ("connect_refused", "connect_timeout")


def histogram_from_raw(raw: dict[str, Any]) -> Histogram:
    """The engine's histogram dict → :class:`Histogram` (NaN percentiles when empty)."""
    count = int(raw.get("count", 0))

    def value(key: str) -> float:
        return float(raw.get(key, math.nan)) if count else math.nan

    return Histogram(
        encoded=raw.get("encoded_b64", ""),
        count=count,
        min_us=value("min_us"),
        mean_us=value("mean_us"),
        p50_us=value("p50_us"),
        p90_us=value("p90_us"),
        p99_us=value("p99_us"),
        p999_us=value("p999_us"),
        max_us=value("max_us"),
    )


def step_from_raw(raw: dict[str, Any]) -> HttpStep:
    """One step of ``http_run``'s result → :class:`HttpStep` (the same names on both
    sides of the seam); mode is "open", "open-poisson" or "closed"."""
    mode = (
        raw["mode"]
        if raw["mode"] == "closed"
        else ("open-poisson" if raw.get("arrival") == "poisson" else "open")
    )
    hists = raw.get("histograms", {})
    counts = {
        name: int(raw.get(name, 0))
        for name in (
            "requests_sent",
            "ok_responses",
            "ok_from_warmup",
            "drained",
            "failures",
            "unsent",
            "unfinished",
            "bytes_in",
            "bytes_out",
            "connections_opened",
            "connections_closed",
            "connections_peak",
            "connect_failures",
            "pool_waits",
        )
    }
    return HttpStep(
        offered_rate=raw.get("offered_rate"),
        connections=int(raw["connections"]),
        mode=mode,
        duration_s=float(raw["duration_s"]),
        warmup_s=float(raw["warmup_s"]),
        elapsed_s=float(raw["elapsed_s"]),
        wall_s=float(raw.get("wall_s", math.nan)),
        drain_s=float(raw.get("drain_s", math.nan)),
        **counts,
        status_counts={str(k): int(v) for k, v in raw.get("status_counts", {}).items()},
        errors={k: int(v) for k, v in raw.get("errors", {}).items() if v},
        connection_errors=int(raw.get("connections_errored", 0)),
        thread_cpu_s=[float(x) for x in raw.get("thread_cpu_s", [])],
        **{name: histogram_from_raw(hists.get(name, {})) for name in STEP_HISTOGRAMS},
        interrupted=bool(raw.get("interrupted")),
        threads=int(raw.get("threads", 1)),
        server_timing=server_timing_from_raw(raw.get("server_timing")),
        shape=raw.get("shape"),
        timeline=Timeline.from_raw(raw["timeline"]) if raw.get("timeline") else None,
        protocol=str(raw.get("protocol", "http/1.1")),
        streams=int(raw.get("streams", 1)),
    )


def server_timing_from_raw(raw: dict[str, Any] | None) -> ServerTiming | None:
    """The engine's ``server_timing`` dict (absent when no response had the header)
    → :class:`ServerTiming`."""
    if not raw:
        return None
    return ServerTiming(
        responses=int(raw.get("responses", 0)),
        malformed=int(raw.get("malformed", 0)),
        metrics_dropped=int(raw.get("metrics_dropped", 0)),
        metrics={str(k): histogram_from_raw(v) for k, v in raw.get("metrics", {}).items()},
        counts={str(k): histogram_from_raw(v) for k, v in raw.get("counts", {}).items()},
        app_total=histogram_from_raw(raw.get("app_total", {})),
        outside_app=histogram_from_raw(raw.get("outside_app", {})),
    )


def only_connect_errors(step: HttpStep) -> bool:
    """True when the step got no response at all, only failed connects."""
    return (
        step.ok_responses == 0
        and step.failures > 0
        and sum(step.errors.get(k, 0) for k in _CONNECT_ERRORS) == step.failures
    )
