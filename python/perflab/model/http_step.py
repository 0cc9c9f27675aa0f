"""The raw records of one HTTP load step (``perflab http``): its HdrHistograms, its
Server-Timing breakdown, and the step itself, with their conversion from JSON types.

Part of the results model (:mod:`perflab.model.results` holds the benchmark and the file
around them). Times are integer nanoseconds or microseconds as each field says; rates
are per second; sizes are bytes. HdrHistograms use the standard V2 compressed encoding
(Gil Tene's HdrHistogram), readable by any HdrHistogram library.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from perflab.model.cluster import AgentShare
from perflab.model.http_timeline import Timeline
from perflab.model.json_form import from_known as _from_dict


@dataclass
class Histogram:
    """An HdrHistogram in the standard V2 compressed encoding, base64, microseconds.

    Attributes:
        encoded: base64 of the V2-deflate serialization (readable by other
            HdrHistogram implementations, mergeable).
        count: recorded values.
        p50_us … max_us: percentiles precomputed at record time, µs.
    """

    encoded: str = ""
    count: int = 0
    min_us: float = math.nan
    mean_us: float = math.nan
    p50_us: float = math.nan
    p90_us: float = math.nan
    p99_us: float = math.nan
    p999_us: float = math.nan
    max_us: float = math.nan


@dataclass
class ServerTiming:
    """What the target's ``Server-Timing`` response headers said over one HTTP step
    (the OK responses to recorded requests; docs/trace.md, "`perflab http` reads
    Server-Timing").

    Attributes:
        responses: responses that carried a ``Server-Timing`` header.
        malformed: of those, responses whose header was partly or wholly malformed
            (their well-formed metrics are kept; the request never fails for it).
        metrics_dropped: metric values not recorded: over 32 in one response, or a new
            name over 32 distinct names in the step.
        metrics: HdrHistogram of ``dur`` per metric name, µs.
        counts: per metric name that sent a ``count`` parameter (perflab.trace's
            middleware does: the spans of that name in the request), HdrHistogram of that
            count per response (its ``*_us`` fields hold counts, not µs); empty otherwise.
        app_total: the app's own total per response (the metric named ``app`` or
            ``total``, else the largest ``dur``), µs.
        outside_app: service time (write start to last byte) minus ``app_total``, per
            response, µs (0 when the app claims more than the client saw).
    """

    responses: int = 0
    malformed: int = 0
    metrics_dropped: int = 0
    metrics: dict[str, Histogram] = field(default_factory=dict)
    counts: dict[str, Histogram] = field(default_factory=dict)
    app_total: Histogram = field(default_factory=Histogram)
    outside_app: Histogram = field(default_factory=Histogram)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ServerTiming:
        """Build from the JSON form. Raises TypeError/KeyError on malformed data."""
        timing = _from_dict(cls, data)
        for key in ("metrics", "counts"):
            setattr(
                timing,
                key,
                {str(k): _from_dict(Histogram, v or {}) for k, v in (data.get(key) or {}).items()},
            )
        for name in ("app_total", "outside_app"):
            setattr(timing, name, _from_dict(Histogram, data.get(name) or {}))
        return timing


#: An :class:`HttpStep`'s phase HdrHistograms (connect, TLS handshake, time to first
#: byte, body), in the order of a request.
PHASE_HISTOGRAMS = ("connect", "tls_handshake", "ttfb", "body_time")


@dataclass
class HttpStep:
    """One step of an HTTP load test: one offered rate (or connection count).

    The step's *recorded requests* are those intended (open loop) or sent (closed loop)
    after the warmup; its *recorded window* runs from the end of the warmup to the end
    of the step, or to the stop when one cut it short. Every recorded request ends in
    exactly one way, so that the requests due in the window (open loop: ``requests_sent
    + unsent``; closed loop: ``requests_sent``) are::

        ok_in_window + drained + failures + unfinished + unsent

    where ``ok_in_window = ok_responses − ok_from_warmup``.

    Attributes:
        offered_rate: requests/s the schedule asked for (None in closed loop).
        connections: connections used (the N of a closed-loop step).
        mode: "open", "open-poisson" or "closed".
        duration_s / warmup_s: planned length of the step (warmup included) and
            its trimmed, unrecorded start, s.
        elapsed_s: length of the recorded window, s (duration − warmup, shorter if
            interrupted); the achieved rate is ``ok_responses / elapsed_s``.
        requests_sent: recorded requests handed to a connection (a failed connect is a
            sent request that failed).
        status_counts: responses to recorded requests by HTTP status code (str keys).
        errors: failed requests by kind (connect_refused, read_timeout, …).
        ok_responses: successful responses that completed inside the recorded window,
            whichever request they answered (``ok_from_warmup`` of them answered warmup
            requests).
        bytes_in / bytes_out: bytes read / written.
        connections_opened / connections_closed: connection churn.
        connection_errors: connections (or connect attempts) that ended in an error.
        thread_cpu_s: CPU seconds used by each engine thread in the step.
        latency / service_time / send_lag / failed_latency: HdrHistograms of recorded
            requests; ``latency`` holds every successful one, drained ones included
            (count = ok_responses − ok_from_warmup + drained).
        interrupted: True when Ctrl-C or a fault ended the step early.
        clock_skew_ns: largest disagreement of MONOTONIC with REALTIME, RAW and the TSC
            over the step, ns (None: unchecked); flagged: "clock:<name>" when it
            exceeded the tolerance — the step's rates and latencies are then unusable.
        failures: recorded requests that failed (a status outside --ok, or an error),
            whenever the failure came.
        unsent: requests due in the recorded window but never handed to a connection:
            every connection stayed busy until the step ended, or perflab fell more than
            0.1 s behind (a sign of saturation).
        unfinished: recorded requests still unanswered when the step was cut off: by a
            stop, or ``--timeout`` after the step's end.
        connections_peak: most connections open at once (open loop: ``connections``
            is only the pool's cap).
        connect_failures: connect attempts that failed (TCP or TLS), whole step.
        pool_waits: open loop: recorded requests that waited for a free connection.
        threads: engine threads used.
        wall_s: wall time the step took, drain of in-flight requests included, s.
        dispatch_lag: open loop: HdrHistogram of how late perflab's dispatcher found
            each request due (its own lateness, without waits for a free connection).
        drained: successful responses to recorded requests that completed after the
            recorded window, while the step drained (not in the achieved rate); None in
            files from before schema 2, where ``ok_responses`` included them.
        ok_from_warmup: of ``ok_responses``, answers to requests sent during the warmup
            (None before schema 2).
        drain_s: from the end of the recorded window until the last recorded request
            was answered, failed or cut off, s (estimated from ``wall_s`` before schema
            2): about one response time for a server that kept up.
        watched: ``--watch``/``--watch-cmd``: each watched process's timeline over the
            step, sampled from outside every 100 ms: ``{"pid", "name", "t_s", "cpu_s",
            "rss_bytes"}``, times since the sweep started, cumulative CPU seconds,
            resident bytes (see :mod:`perflab.engines.http.watch`); empty when not watched.
        agents: a distributed run (``--agents``): each load agent's own part of the step,
            beside this merged step (empty on one machine).
        server_timing: the target's ``Server-Timing`` headers over the step
            (:class:`ServerTiming`); None when no response carried one.
        shape: the load shape the step followed, e.g. ``{"kind": "ramp", "from": 1000,
            "to": 10000, "over_s": 20}`` or ``{"kind": "sine", "mean", "amplitude",
            "period_s"}``; None at a fixed rate (``offered_rate`` is then the shape's mean
            over the recorded window).
        timeline: per-interval offered, achieved, errors, latency and send lag
            (:class:`perflab.model.http_timeline.Timeline`); None when not recorded.
        protocol: the HTTP version spoken, by its ALPN name: "http/1.1", "h2"
            (``--http2``) or "h3" (``--http3``); "http/1.1" in files from before it was
            recorded.
        streams: HTTP/2's or HTTP/3's concurrent streams per connection (``--streams``;
            1 for HTTP/1.1): a closed-loop step ran ``connections × streams`` request loops.
        connect / tls_handshake / ttfb / body_time: the phases of recorded requests,
            HdrHistograms in µs: TCP connect and TLS handshake of each connection a
            recorded request opened (a request on a reused connection has neither;
            HTTP/3 records its QUIC handshake as tls_handshake and no connect),
            time to first byte (request write start → first response byte; HTTP/2:
            the response's HEADERS) and body transfer (first → last byte) of every
            response; empty in files from before they were recorded.
    """

    offered_rate: float | None
    connections: int
    mode: str
    duration_s: float
    warmup_s: float
    elapsed_s: float
    requests_sent: int = 0
    status_counts: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    ok_responses: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    connections_opened: int = 0
    connections_closed: int = 0
    connection_errors: int = 0
    thread_cpu_s: list[float] = field(default_factory=list)
    latency: Histogram = field(default_factory=Histogram)
    service_time: Histogram = field(default_factory=Histogram)
    send_lag: Histogram = field(default_factory=Histogram)
    failed_latency: Histogram = field(default_factory=Histogram)
    interrupted: bool = False
    clock_skew_ns: int | None = None
    flagged: str | None = None
    failures: int = 0
    unsent: int = 0
    unfinished: int = 0
    connections_peak: int = 0
    connect_failures: int = 0
    pool_waits: int = 0
    threads: int = 1
    wall_s: float = math.nan
    dispatch_lag: Histogram = field(default_factory=Histogram)
    drained: int | None = 0
    ok_from_warmup: int | None = 0
    drain_s: float = math.nan
    watched: list[dict[str, Any]] = field(default_factory=list)
    agents: list[AgentShare] = field(default_factory=list)
    server_timing: ServerTiming | None = None
    shape: dict[str, Any] | None = None
    timeline: Timeline | None = None
    protocol: str = "http/1.1"
    streams: int = 1
    connect: Histogram = field(default_factory=Histogram)
    tls_handshake: Histogram = field(default_factory=Histogram)
    ttfb: Histogram = field(default_factory=Histogram)
    body_time: Histogram = field(default_factory=Histogram)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HttpStep:
        """Build from the JSON form. Raises TypeError/KeyError on malformed data."""
        step = _from_dict(cls, data)
        if data.get("server_timing") is not None:
            step.server_timing = ServerTiming.from_dict(data["server_timing"])
        step.agents = [AgentShare.from_dict(a, HttpStep.from_dict) for a in step.agents]
        if data.get("timeline") is not None:
            step.timeline = Timeline.from_dict(data["timeline"])
        for name in STEP_HISTOGRAMS:
            setattr(step, name, _from_dict(Histogram, data.get(name) or {}))
        for name in ("wall_s", "drain_s"):  # NaN is written as null
            if getattr(step, name) is None:
                setattr(step, name, math.nan)
        return step


#: The HdrHistograms of an :class:`HttpStep`, by field name (the phases last).
STEP_HISTOGRAMS = (
    "latency",
    "service_time",
    "send_lag",
    "failed_latency",
    "dispatch_lag",
    *PHASE_HISTOGRAMS,
)
