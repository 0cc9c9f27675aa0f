"""The agents' parts of one step merged into one :class:`perflab.model.HttpStep`, exactly.

Counters add up. Each HdrHistogram is merged bucket by bucket by the engine
(``perflab._core.hdr_merge``): every agent records with the same bucket layout (lowest
value 1 µs, 3 significant digits), so the merged histogram is the one a single recorder
fed every agent's values would hold, and its percentiles are exact to the same 3 digits —
never an average of percentiles. The agents share one start instant and one step
length, so their recorded windows coincide (to their clocks' offset uncertainty): the
merged window is the longest of them, and the merged achieved rate is the summed
successful responses over it. Live progress merges the agents' running snapshots the
same way (:func:`merge_snapshots`).

Timelines (:func:`merge_timelines`) merge interval by interval on the run's common start:
each agent's engine counts its intervals from the step's start instant, which the
controller placed on that agent's clock with the agent's measured offset
(:mod:`perflab.engines.http.cluster.clocks`), so interval ``j`` of every agent covers the
same span of the controller's clock, to the offset's uncertainty (half a round trip:
microseconds to milliseconds against intervals of a second). Counts add; each interval's
latency and send-lag HdrHistograms merge exactly, so its percentiles are those of all
the agents' requests intended in it.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from perflab.engines.http.cluster.split import SHAPE_RATES
from perflab.model import Histogram, HttpStep, ServerTiming
from perflab.model.http_step import STEP_HISTOGRAMS
from perflab.model.http_timeline import Timeline

HISTOGRAMS = STEP_HISTOGRAMS
_SUMMED = (
    "requests_sent",
    "ok_responses",
    "bytes_in",
    "bytes_out",
    "connections_opened",
    "connections_closed",
    "connection_errors",
    "failures",
    "unsent",
    "unfinished",
    "connections_peak",
    "connect_failures",
    "pool_waits",
    "threads",
    "connections",
)


def merge_histograms(hists: Sequence[Histogram]) -> Histogram:
    """One exact HdrHistogram of several (empty ones skipped).

    Raises:
        ValueError: an encoding the decoder refuses, or two bucket layouts.
    """
    from perflab import _core

    encoded = [h.encoded for h in hists if h.encoded]
    if not encoded:
        return Histogram()
    raw = _core.hdr_merge(encoded)
    count = int(raw["count"])
    return Histogram(
        encoded=raw["encoded_b64"],
        count=count,
        **{
            k: float(raw[k]) if count else math.nan
            for k in ("min_us", "mean_us", "p50_us", "p90_us", "p99_us", "p999_us", "max_us")
        },
    )


def merge_server_timing(parts: Sequence[ServerTiming | None]) -> ServerTiming | None:
    """The agents' Server-Timing figures of one step, merged exactly: counts add up, and
    each metric's histogram (the app total's, outside the app's) is the exact merge of
    those of the agents that recorded it (so a merged step may name more than the 32
    metrics one agent keeps). None when no agent got the header.

    Raises:
        ValueError: histograms that cannot be merged exactly.
    """
    timings = [t for t in parts if t is not None]
    if not timings:
        return None
    names = sorted({name for t in timings for name in t.metrics})
    return ServerTiming(
        responses=sum(t.responses for t in timings),
        malformed=sum(t.malformed for t in timings),
        metrics_dropped=sum(t.metrics_dropped for t in timings),
        metrics={
            n: merge_histograms([t.metrics[n] for t in timings if n in t.metrics]) for n in names
        },
        app_total=merge_histograms([t.app_total for t in timings]),
        outside_app=merge_histograms([t.outside_app for t in timings]),
    )


def _known_sum(values: Sequence[int | None]) -> int | None:
    """The sum, or None when any part is unknown."""
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def _finite_max(values: Sequence[float]) -> float:
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return max(finite) if finite else math.nan


def _row_of(t_s: float, shift_s: float, interval_s: float) -> int:
    """The merged interval of a part's interval starting at ``t_s`` (s after the part's
    start), that start lying ``shift_s`` after the common start; earlier ones fold into 0."""
    return max(0, round((t_s + shift_s) / interval_s))


def merge_timelines(
    parts: Sequence[Timeline | None], shifts_s: Sequence[float] | None = None
) -> Timeline | None:
    """The timeline the agents' timelines of one step make together (module docstring).

    Args:
        parts: each agent's timeline of the step; None for an agent that recorded none.
        shifts_s: where each part's start lies after the common start, s (None: all at
            it, as the controller places them); rounded to whole intervals, since an
            interval's histograms cannot be split.

    Returns:
        A timeline of the parts' interval length, as long as the longest shifted part,
        whose ``sent``, ``ok`` and ``errors`` are the sums of the parts' in each interval
        (so their totals are the sums of the parts' totals), whose offered rate is the
        sum of those of the parts that reach the interval (None in closed loop), and whose latency and send-lag
        histograms and percentiles are the exact merges of the parts'. None when no part
        has a timeline, or when only some do (a partial sum would understate the step).

    Raises:
        ValueError: parts of different interval lengths, a shift per part missing, or
            histograms that cannot be merged exactly.
    """
    if not parts or any(p is None for p in parts):
        return None
    kept = [p for p in parts if p is not None]
    shifts = list(shifts_s) if shifts_s is not None else [0.0] * len(kept)
    if len(shifts) != len(kept):
        raise ValueError(f"{len(shifts)} shifts for {len(kept)} timelines")
    interval_s = kept[0].interval_s
    if any(not math.isclose(p.interval_s, interval_s) for p in kept):
        raise ValueError("the agents' timelines have different intervals")
    rows: dict[int, list[tuple[Timeline, int]]] = {}
    for part, shift in zip(kept, shifts):
        for j, t in enumerate(part.t_s):
            rows.setdefault(_row_of(t, shift, interval_s), []).append((part, j))
    out = Timeline(interval_s=interval_s)
    for m in range(max(rows, default=-1) + 1):
        here = rows.get(m, [])
        offered = [p.offered_rate[j] for p, j in here]
        latency = merge_histograms([Histogram(encoded=p.latency_encoded[j]) for p, j in here])
        lag = merge_histograms([Histogram(encoded=p.send_lag_encoded[j]) for p, j in here])
        out.t_s.append(m * interval_s)
        out.offered_rate.append(
            None if not offered or any(r is None for r in offered) else sum(offered)
        )
        out.sent.append(sum(p.sent[j] for p, j in here))
        out.ok.append(sum(p.ok[j] for p, j in here))
        out.errors.append(sum(p.errors[j] for p, j in here))
        out.p50_us.append(latency.p50_us if latency.count else None)
        out.p99_us.append(latency.p99_us if latency.count else None)
        out.p999_us.append(latency.p999_us if latency.count else None)
        out.send_lag_p99_us.append(lag.p99_us if lag.count else None)
        out.latency_encoded.append(latency.encoded)
        out.send_lag_encoded.append(lag.encoded)
    return out


def merge_shapes(shapes: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The load shape the agents' shares of one make together: their rates summed, the
    first one's times (every share keeps them). None when any part has none, or when
    the parts are of different kinds."""
    if not shapes or any(s is None for s in shapes):
        return None
    kept = [s for s in shapes if s is not None]
    kind = kept[0].get("kind")
    if any(s.get("kind") != kind for s in kept):
        return None
    keys = SHAPE_RATES.get(str(kind), ())
    return {**kept[0], **{key: sum(float(s[key]) for s in kept) for key in keys}}


def merge_steps(parts: Sequence[HttpStep]) -> HttpStep:
    """The step that the agents' ``parts`` of it make together.

    Args:
        parts: each agent's step (at least one), all of one mode, duration and warmup.

    Returns:
        A step whose offered rate, connections, threads and counters are the sums of the
        parts', whose histograms are their exact merges, whose window, wall time and drain
        are the longest, and whose engine-thread CPU list holds every agent's threads; it
        is interrupted or clock-flagged when any part is. ``agents`` is left empty (the
        caller attaches the shares).

    Raises:
        ValueError: no parts, or histograms that cannot be merged exactly.
    """
    if not parts:
        raise ValueError("no agent data to merge")
    first = parts[0]
    rates = [p.offered_rate for p in parts]
    statuses: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for p in parts:
        statuses.update(p.status_counts)
        errors.update(p.errors)
    skews = [p.clock_skew_ns for p in parts if p.clock_skew_ns is not None]
    merged = HttpStep(
        offered_rate=None if any(r is None for r in rates) else sum(r for r in rates if r),
        connections=0,
        mode=first.mode,
        duration_s=first.duration_s,
        warmup_s=first.warmup_s,
        elapsed_s=max(p.elapsed_s for p in parts),
        status_counts=dict(statuses),
        errors={k: n for k, n in errors.items() if n},
        thread_cpu_s=[c for p in parts for c in p.thread_cpu_s],
        interrupted=any(p.interrupted for p in parts),
        clock_skew_ns=max(skews, key=abs) if skews else None,
        flagged=next((p.flagged for p in parts if p.flagged), None),
        wall_s=_finite_max([p.wall_s for p in parts]),
        drain_s=_finite_max([p.drain_s for p in parts]),
        drained=_known_sum([p.drained for p in parts]),
        ok_from_warmup=_known_sum([p.ok_from_warmup for p in parts]),
        server_timing=merge_server_timing([p.server_timing for p in parts]),  # issue 17
        protocol=first.protocol,
        streams=first.streams,
        shape=merge_shapes([p.shape for p in parts]),
        timeline=merge_timelines([p.timeline for p in parts]),
        **{name: merge_histograms([getattr(p, name) for p in parts]) for name in HISTOGRAMS},
    )
    for name in _SUMMED:
        setattr(merged, name, sum(getattr(p, name) for p in parts))
    return merged


def merge_snapshots(snaps: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The agents' live engine snapshots of one running step merged into one, in the form
    live progress shows (``perflab http``'s ``ProgressFn``).

    Args:
        snaps: (agent label, its latest engine snapshot) per agent that answered; a
            snapshot holds ``in_warmup``, ``wall_s`` (s), ``achieved_rate`` (ok
            responses/s so far), ``failures``, ``p99_us`` and ``latency_b64`` (its
            recorded latencies so far, V2-encoded HdrHistogram).

    Returns:
        None without snapshots; else {"in_warmup": any agent still warming up,
        "wall_s": the longest, "achieved_rate" and "failures": summed, "p99_us": the
        exact p99 of the merged latency histograms (0 before any response), "slowest":
        "LABEL p99 X ms" of the agent with the highest p99}.

    Raises:
        ValueError: a histogram the engine cannot decode or merge.
    """
    if not snaps:
        return None
    latency = merge_histograms([Histogram(encoded=s.get("latency_b64", "")) for _, s in snaps])
    slow_label, slow = max(snaps, key=lambda x: x[1]["p99_us"])
    return {
        "in_warmup": any(s["in_warmup"] for _, s in snaps),
        "wall_s": max(s["wall_s"] for _, s in snaps),
        "achieved_rate": sum(s["achieved_rate"] for _, s in snaps),
        "failures": sum(s["failures"] for _, s in snaps),
        "p99_us": latency.p99_us if latency.count else 0,
        "slowest": f"{slow_label} p99 {slow['p99_us'] / 1e3:,.2f} ms",
    }
