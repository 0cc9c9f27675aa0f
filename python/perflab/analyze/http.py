"""Per-step summaries of an HTTP sweep, verdicts and the capacity estimate.

Derived from :class:`perflab.model.HttpStep` only (recomputable from a results file).
Method: the autobench/httperf sweep (offered vs achieved rate, error %, latency per
step), with latency from the intended send time (wrk2; Gil Tene's coordinated
omission). Verdicts:

* **generator-limited**: perflab itself could not keep up, so the step's numbers
  describe perflab, not the server: an engine thread was busy ≥ 90% of the recorded
  time (CPU-bound), or perflab's own part of the send lag had a p99 > 1 ms. That part
  is the dispatch lag (how late the dispatcher found each request due); the rest of
  the send lag is waiting for a free connection, which a saturated server causes by
  keeping every connection busy, so it is the server's. Files without a dispatch-lag
  histogram fall back to the send lag when under 1% of requests waited for a
  connection.
* **saturated**: achieved rate < 95% of the offered rate, or error % > 1%, or
  p99 > the SLO, or the step left a backlog (the accounting rule, the same in open
  and closed loop): requests due but never sent, requests still unanswered when it
  was cut off, or a drain (from the end of the recorded window to the last recorded
  request's end) longer than 5% of the window. Once a step is saturated, every
  heavier step (higher rate or more connections) is saturated too: a server past its
  capacity does not recover under more load, so a heavier step that looks ok means
  the lighter one met a transient. A step that backed up is saturated even when
  perflab was also late, if its backlog (send lag p99 or drain) is at least 10× its
  own dispatch lag p99 and no engine thread was CPU-bound: milliseconds of perflab
  lateness cannot make a server fall seconds behind.
  In closed loop, also a step past the throughput knee: ≥ 1.5× the connections of a
  lighter step and at most 10% more throughput (:func:`queueing_reasons`).
* **ok**: neither.

A distributed step (``--agents``) is generator-limited when any agent was, judged on
that agent's own figures (a merged histogram can hide one late agent), and the reason
names the agent. A step during which an agent died holds the other agents' data only:
it is marked and never counts towards the capacity estimate.

The achieved rate is the successful responses that completed inside the recorded
window ÷ the window (responses that came while draining are counted apart, as
``drained``). The capacity estimate is the heaviest ok step below the first
saturated one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from perflab.analyze.http_phases import phase_figures
from perflab.analyze.http_slo import slo_misses, slo_thresholds
from perflab.analyze.http_timeline import RampCapacity, ramp_capacity
from perflab.analyze.server_timing import REPEAT_LIMIT, MetricFigures, breakdown, timing_notes
from perflab.analyze.watch import server_figures
from perflab.model import Histogram, HttpStep, Results
from perflab.units import format_time

#: Achieved/offered below this share means saturated (autobench's reading of the knee).
ACHIEVED_SHARE = 0.95
#: Failed requests above this share of completed requests mean saturated.
ERROR_LIMIT = 0.01
#: perflab's own send lag (dispatch lag) p99 above this (s) means generator-limited.
SEND_LAG_LIMIT_S = 1e-3
#: An engine thread busy at least this share of the recorded time was CPU-bound.
ENGINE_BUSY = 0.9
#: Send lag counts as the server's when at least this share of requests waited for a
#: busy connection.
POOL_WAIT_SHARE = 0.01
#: The engine's open-loop dispatcher wakes at most this often (s): above 1/BATCH_S
#: requests/s per thread, requests go out in batches (rust/engine/src/load/dispatch.rs).
BATCH_S = 500e-6
#: A drain longer than this share of the recorded window means the server fell behind:
#: a server that keeps up drains in about one response time.
DRAIN_SHARE = 0.05
#: A backlog this many times perflab's own lateness is the server's doing.
SERVER_BOUND_FACTOR = 10
#: Closed loop: a step with at least this many times the connections of a lighter step...
CLOSED_GROWTH = 1.5
#: ... that completed at most this much more throughput (as a share) is past the knee.
CLOSED_GAIN = 0.10

OK, SATURATED, GENERATOR_LIMITED = "ok", "saturated", "generator-limited"
_PERCENTILES = (
    ("p50", "p50_us"),
    ("p90", "p90_us"),
    ("p99", "p99_us"),
    ("p99.9", "p999_us"),
    ("max", "max_us"),
    ("mean", "mean_us"),
)


def _seconds(hist: Histogram, key: str) -> float:
    """A histogram field in seconds (NaN when the histogram is empty)."""
    value = getattr(hist, key)
    return value * 1e-6 if hist.count and value is not None else math.nan


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else math.nan


@dataclass
class StepSummary:
    """The derived figures of one step. Times in seconds, rates in requests/s.

    Attributes:
        index: position in the sweep (0-based).
        label: "1,000/s" (open loop) or "16 conn" (closed loop).
        mode: "open", "open-poisson" or "closed".
        load: what the sweep varies: the offered rate, or the connection count.
        offered_rate: open loop: req/s asked for; None in closed loop.
        achieved_rate: successful responses completed inside the recorded window ÷ the
            window.
        completed: recorded requests that got an answer or an error, in the window or
            while draining (successful + failed).
        drained: successful responses to recorded requests that came after the window
            (None: not recorded by perflab before schema 2).
        drain_s: from the window's end to the last recorded request's end, s.
        window_s: length of the recorded window, s.
        error_fraction: failed ÷ completed requests (NaN when none completed).
        connection_error_fraction: connections that ended in an error ÷ connections
            tried (opened + failed connects), whole step.
        latency_s: successful requests' latency from the intended send time:
            p50, p90, p99, p99.9, max, mean.
        send_lag_p99_s: p99 of actual − intended send time (NaN in closed loop).
        dispatch_lag_p99_s: p99 of perflab's own part of it (NaN when not recorded).
        service_p99_s: p99 of write → last byte.
        cpu_share: busiest engine thread's CPU time ÷ recorded time.
        connections: open loop: pool cap; closed loop: connection count.
        connections_peak: most connections open at once.
        threads: engine threads used.
        unsent, unfinished, pool_waits: see :class:`perflab.model.HttpStep`.
        errors: failed requests by kind (connect_refused, read_timeout, …).
        failed_statuses: responses whose status was outside ``ok``, by status.
        verdict: "ok", "saturated" or "generator-limited".
        reasons: short plain-words reasons for the verdict.
        interrupted: the step was cut short.
        server: ``--watch``: the watched processes' CPU and memory over the step
            (:class:`perflab.analyze.watch.ServerFigures`), else None.
        agents_lost: a distributed step: the (0-based) indices of the agents that died
            during it (their share is missing from the step).
        server_timing: the step's Server-Timing breakdown, one row per metric, then the
            app's total and the time outside the app
            (:func:`perflab.analyze.server_timing.breakdown`); empty when no response
            carried the header.
        server_timing_notes: plain-words caveats about those headers (malformed, dropped
            metrics, responses without one: :func:`perflab.analyze.server_timing.timing_notes`).
        ramp: a ramp's capacity read off its timeline
            (:func:`perflab.analyze.http_timeline.ramp_capacity`); None for other steps.
        protocol / streams: the HTTP version ("http/1.1", "h2", "h3") and the streams per
            connection (:class:`perflab.model.HttpStep`).
        phases: connect, TLS handshake, time to first byte and body: {count, p50_s,
            p99_s} each (:func:`perflab.analyze.http_phases.phase_figures`).
    """

    index: int
    label: str
    mode: str
    load: float
    offered_rate: float | None
    achieved_rate: float
    completed: int
    drained: int | None
    drain_s: float
    window_s: float
    error_fraction: float
    connection_error_fraction: float
    latency_s: dict[str, float]
    send_lag_p99_s: float
    dispatch_lag_p99_s: float
    service_p99_s: float
    cpu_share: float
    connections: int
    connections_peak: int
    threads: int = 1
    unsent: int = 0
    unfinished: int = 0
    pool_waits: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    failed_statuses: dict[str, int] = field(default_factory=dict)
    verdict: str = OK
    reasons: list[str] = field(default_factory=list)
    interrupted: bool = False
    clock_skew_ns: int | None = None
    flagged: str | None = None
    server: Any = None
    agents_lost: list[int] = field(default_factory=list)
    server_timing: list[MetricFigures] = field(default_factory=list)
    server_timing_notes: list[str] = field(default_factory=list)
    ramp: RampCapacity | None = None
    protocol: str = "http/1.1"
    streams: int = 1
    phases: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def engine_busy(self) -> bool:
        """True when an engine thread was CPU-bound during the step (its CPU share ≥
        :data:`ENGINE_BUSY`)."""
        return self.cpu_share >= ENGINE_BUSY

    def to_dict(self) -> dict[str, Any]:
        """JSON form (seconds, requests/s), with units named."""
        return {"unit_time": "s", "unit_rate": "1/s", **asdict(self)}


def step_label(step: HttpStep) -> str:
    """ "1,000/s" for an open-loop step, "16 conn" for a closed-loop one, the shape
    (:func:`perflab.model.http_timeline.shape_label`) for a shaped one."""
    if step.shape:
        from perflab.model.http_timeline import shape_label

        return shape_label(step.shape)
    if step.mode == "closed" or step.offered_rate is None:
        return f"{step.connections} conn"
    return f"{step.offered_rate:,.0f}/s"


def ok_ranges(text: str) -> list[tuple[int, int]]:
    """ "200-299,304" → [(200, 299), (304, 304)] (the --ok option, already checked)."""
    ranges = []
    for item in text.replace(" ", "").split(","):
        low, _, high = item.partition("-")
        ranges.append((int(low), int(high or low)))
    return ranges


def answered_ok(step: HttpStep) -> int:
    """Recorded requests answered with a success, in the window or drained: the count
    of the latency histogram. Schema-1 files counted exactly that as ``ok_responses``."""
    if step.drained is None or step.ok_from_warmup is None:
        return step.ok_responses
    return step.ok_responses - step.ok_from_warmup + step.drained


def summarize_step(
    step: HttpStep, index: int = 0, ok: str = "200-299", n_plus_one: int = REPEAT_LIMIT
) -> StepSummary:
    """The figures of one step, without a verdict (see :func:`summarize_steps`).

    Args:
        step: raw data of one step.
        index: its position in the sweep.
        ok: the statuses that counted as success, e.g. "200-299,304".
        n_plus_one: the N+1 limit of its Server-Timing notes (``--n-plus-one``).
    """
    ranges = ok_ranges(ok)
    completed = answered_ok(step) + step.failures
    tried = step.connections_opened + step.connect_failures
    closed = step.mode == "closed" or step.offered_rate is None
    return StepSummary(
        index=index,
        label=step_label(step),
        mode=step.mode,
        load=float(step.connections if closed else step.offered_rate),  # type: ignore[arg-type]
        offered_rate=None if closed else step.offered_rate,
        achieved_rate=_share(step.ok_responses, step.elapsed_s),
        completed=completed,
        drained=step.drained,
        drain_s=step.drain_s,
        window_s=step.elapsed_s,
        error_fraction=_share(step.failures, completed),
        connection_error_fraction=_share(step.connection_errors, tried),
        latency_s={name: _seconds(step.latency, key) for name, key in _PERCENTILES},
        send_lag_p99_s=math.nan if closed else _seconds(step.send_lag, "p99_us"),
        dispatch_lag_p99_s=math.nan if closed else _seconds(step.dispatch_lag, "p99_us"),
        service_p99_s=_seconds(step.service_time, "p99_us"),
        cpu_share=_share(max(step.thread_cpu_s, default=math.nan), step.elapsed_s),
        connections=step.connections,
        connections_peak=step.connections_peak,
        threads=step.threads,
        unsent=step.unsent,
        unfinished=step.unfinished,
        pool_waits=step.pool_waits,
        errors=dict(step.errors),
        failed_statuses={
            code: n
            for code, n in step.status_counts.items()
            if not any(lo <= int(code) <= hi for lo, hi in ranges)
        },
        interrupted=step.interrupted,
        clock_skew_ns=step.clock_skew_ns,
        flagged=step.flagged,
        server=server_figures(step, completed),
        agents_lost=[a.agent for a in step.agents if a.lost],
        server_timing=breakdown(step),
        server_timing_notes=[]
        if step.server_timing is None
        else timing_notes(step.server_timing, answered_ok(step), n_plus_one),
        ramp=ramp_capacity(step, ACHIEVED_SHARE),
        protocol=step.protocol,
        streams=step.streams,
        phases=phase_figures(step),
    )


def engine_busy(s: StepSummary) -> bool:
    """True when an engine thread was CPU-bound during the step (≥ :data:`ENGINE_BUSY`)."""
    return s.engine_busy


def generator_reasons(s: StepSummary) -> list[str]:
    """Why perflab, not the server, limited this step (empty when it did not)."""
    reasons = []
    if engine_busy(s):
        reasons.append(f"engine thread {s.cpu_share:.0%} busy")
    lag = s.dispatch_lag_p99_s
    if math.isnan(lag) and not _share(s.pool_waits, s.completed + s.unfinished) >= POOL_WAIT_SHARE:
        lag = s.send_lag_p99_s
    if lag > SEND_LAG_LIMIT_S:
        reasons.append(f"perflab sent late (p99 {format_time(lag)})")
    return reasons


@dataclass
class AgentStep:
    """One agent's share of one step of a distributed run, summarised by the rules of a
    whole step.

    Attributes:
        share: the share as recorded (a :class:`perflab.model.cluster.AgentShare`: the
            agent's index, clock offset, start lead, process CPU time, its raw step).
        summary: the figures of its own step (:func:`summarize_step`, no verdict); None
            when the agent died during the step.
        reasons: why perflab limited this agent (:func:`generator_reasons`); empty when
            it did not.
    """

    share: Any
    summary: StepSummary | None
    reasons: list[str]


def agent_steps(step: HttpStep, ok: str = "200-299") -> list[AgentStep]:
    """Each agent's share of a distributed step, summarised (empty for one machine).

    Args:
        step: the merged step, with its ``agents`` shares.
        ok: the statuses that counted as success (--ok).
    """
    out = []
    for share in step.agents:
        s = None if share.step is None else summarize_step(share.step, ok=ok)
        out.append(AgentStep(share, s, [] if s is None else generator_reasons(s)))
    return out


def agent_generator_reasons(step: HttpStep, ok: str = "200-299") -> list[str]:
    """A distributed step: each agent's own :func:`generator_reasons`, naming the agent
    ("agent 2: perflab sent late (p99 3.1 ms)"); empty when no agent was limited."""
    return [
        f"agent {a.share.agent + 1}: {reason}"
        for a in agent_steps(step, ok)
        for reason in a.reasons
    ]


def saturation_reasons(s: StepSummary, slo_s: float | dict[str, float] | None = None) -> list[str]:
    """Why this step shows a saturated server (empty when it does not); ``slo_s``: a
    p99 limit in seconds, or the limits of :func:`slo_thresholds`."""
    reasons = []
    if s.offered_rate and not s.achieved_rate >= ACHIEVED_SHARE * s.offered_rate:
        reasons.append(f"achieved {_share(s.achieved_rate, s.offered_rate):.0%} of offered")
    if s.error_fraction > ERROR_LIMIT:
        reasons.append(f"errors {s.error_fraction:.1%}")
    reasons += slo_misses(s, slo_thresholds(slo_s), unmeasured=False)
    reasons += backlog_reasons(s)
    if s.completed == 0 and not reasons:
        reasons.append("no request completed")
    return reasons


def backlog_reasons(s: StepSummary) -> list[str]:
    """The accounting rule: the step ended with the server behind (empty when not):
    requests never sent, requests cut off unanswered (a stop's cut-off excepted), or a
    drain longer than :data:`DRAIN_SHARE` of the recorded window."""
    reasons = []
    if s.unsent:
        reasons.append(f"{s.unsent:,} unsent")
    if s.unfinished and not s.interrupted:
        reasons.append(f"{s.unfinished:,} unfinished")
    if s.drain_s > DRAIN_SHARE * s.window_s:
        reasons.append(f"drained for {format_time(s.drain_s)} after the step")
    return reasons


def server_bound(s: StepSummary) -> bool:
    """True when a step backed up far beyond what perflab's own lateness explains: a
    backlog (see :func:`backlog_reasons`), no engine thread CPU-bound, and a send lag p99
    or drain at least :data:`SERVER_BOUND_FACTOR` × the dispatch lag p99."""
    if not backlog_reasons(s) or engine_busy(s):
        return False
    lag = s.dispatch_lag_p99_s if math.isfinite(s.dispatch_lag_p99_s) else 0.0
    backlog = max(
        s.drain_s if math.isfinite(s.drain_s) else 0.0,
        s.send_lag_p99_s if math.isfinite(s.send_lag_p99_s) else 0.0,
    )
    return backlog >= SERVER_BOUND_FACTOR * lag


def summarize_steps(
    steps: Sequence[HttpStep],
    slo_s: float | dict[str, float] | None = None,
    ok: str = "200-299",
    n_plus_one: int = REPEAT_LIMIT,
) -> list[StepSummary]:
    """Summaries with verdicts for a sweep (module docstring: the rules).

    Args:
        steps: the sweep's steps, in run order.
        slo_s: the latency SLO for p99, s, or every limit (:func:`slo_thresholds`);
            None: no SLO.
        ok: the statuses that counted as success (--ok).
        n_plus_one: a Server-Timing metric counted more than this many times in one
            request is noted as N+1 (``--n-plus-one``).

    Returns:
        One summary per step, in run order.
    """
    summaries = [summarize_step(step, i, ok, n_plus_one) for i, step in enumerate(steps)]
    for step, s in zip(steps, summaries):
        generator = agent_generator_reasons(step, ok) if step.agents else generator_reasons(s)
        saturation = saturation_reasons(s, slo_s)
        if generator and not (saturation and server_bound(s)):
            s.verdict, s.reasons = GENERATOR_LIMITED, generator
        elif saturation:
            s.verdict, s.reasons = SATURATED, saturation
    for s in summaries:
        if s.verdict == OK and (queued := queueing_reasons(s, summaries)):
            s.verdict, s.reasons = SATURATED, queued
    knee = first_saturated(summaries)
    for s in summaries:
        if knee is not None and s.verdict == OK and s.load > knee.load:
            s.verdict, s.reasons = SATURATED, [f"heavier than {knee.label}, already saturated"]
    return summaries


def queueing_reasons(s: StepSummary, summaries: Sequence[StepSummary]) -> list[str]:
    """Closed loop's knee: why step ``s`` shows a server at its limit although nothing
    backed up (empty when it does not). With N connections each waiting for its own
    response, a server at its limit cannot answer faster, so more connections only queue:
    by Little's law (N = X·R) latency then grows with N and throughput X stays flat. A
    closed-loop step is saturated when it has ≥ :data:`CLOSED_GROWTH` × the connections of
    a lighter closed-loop step (ok or saturated; not generator-limited, whose figures are
    perflab's) yet completed at most :data:`CLOSED_GAIN` more throughput than it. Method:
    the throughput knee of a closed-loop load test (Jain 1991, *The Art of Computer
    Systems Performance Analysis*, ch. 3, "knee capacity": where throughput stops growing
    with load while response time climbs)."""
    if s.mode != "closed" or not s.achieved_rate > 0:
        return []
    lighter = [
        j
        for j in summaries
        if j.mode == "closed"
        and j.verdict in (OK, SATURATED)
        and not j.flagged
        and j.achieved_rate > 0
        and j.connections > 0
        and s.connections >= CLOSED_GROWTH * j.connections
    ]
    if not lighter:
        return []
    j = max(lighter, key=lambda j: j.achieved_rate)
    if s.achieved_rate > (1 + CLOSED_GAIN) * j.achieved_rate:
        return []
    return [
        f"{s.connections / j.connections:.3g}× the conns of {j.label}, "
        f"{s.achieved_rate / j.achieved_rate - 1:+.0%} throughput"
    ]


def first_saturated(summaries: Sequence[StepSummary]) -> StepSummary | None:
    """The lightest saturated step (the knee), or None."""
    saturated = [s for s in summaries if s.verdict == SATURATED]
    return min(saturated, key=lambda s: s.load) if saturated else None


@dataclass(frozen=True)
class Capacity:
    """The capacity estimate: the heaviest ok step.

    Attributes:
        step: that step.
        at_least: True when no step saturated the server, so the capacity is higher.
        limited_by_perflab: True when heavier steps were generator-limited only.
    """

    step: StepSummary
    at_least: bool
    limited_by_perflab: bool


def capacity(summaries: Sequence[StepSummary]) -> Capacity | None:
    """The heaviest ok step below the first saturated one, or None when none was ok.
    Steps whose clocks disagreed (``flagged``) or that lost an agent never count as ok
    here."""
    ok = [s for s in summaries if s.verdict == OK and not s.flagged and not s.agents_lost]
    if not ok:
        return None
    best = max(ok, key=lambda s: s.load)
    heavier = [s for s in summaries if s.load > best.load]
    saturated = any(s.verdict == SATURATED for s in heavier)
    return Capacity(
        best, at_least=not saturated, limited_by_perflab=not saturated and bool(heavier)
    )


def kept_up_while_limited(
    summaries: Sequence[StepSummary], slo: float | dict[str, float] | None = None
) -> StepSummary | None:
    """The generator-limited step with the highest achieved rate at which the server
    showed no sign of saturation (:func:`saturation_reasons` empty): the server kept up
    with at least that rate while perflab was the limit. None when there is none."""
    clean = [
        s
        for s in summaries
        if s.verdict == GENERATOR_LIMITED
        and not s.flagged
        and math.isfinite(s.achieved_rate)
        and s.achieved_rate > 0
        and not saturation_reasons(s, slo)
    ]
    return max(clean, key=lambda s: s.achieved_rate, default=None)


@dataclass
class Sweep:
    """The figures of an ``http`` results file, ready to render.

    Attributes:
        name: the benchmark's name (the request, e.g. "GET http://127.0.0.1:8080/").
        steps: one summary with its verdict per step, in run order.
        capacity: the capacity estimate (None: no step was ok).
        slo_s: the p99 SLO the verdicts used, s (None: none).
        slo: every SLO limit the verdicts used (:func:`slo_thresholds`; p99 included).
        agents: a distributed run's shares of each step (:func:`agent_steps`), one list
            per step in run order; empty for a run from one machine.
    """

    name: str
    steps: list[StepSummary]
    capacity: Capacity | None
    slo_s: float | None = None
    slo: dict[str, float] = field(default_factory=dict)
    agents: list[list[AgentStep]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.slo and self.slo_s is not None:
            self.slo = {"p99": self.slo_s}

    @property
    def kept_up(self) -> StepSummary | None:
        """The generator-limited step at which the server showed no sign of saturation
        with the highest achieved rate (:func:`kept_up_while_limited`), or None."""
        return kept_up_while_limited(self.steps, self.slo or None)


def summarize_results(results: Results) -> Sweep:
    """The sweep of an ``http`` results file (its one benchmark), with the SLO, the
    success statuses and the N+1 limit (``--n-plus-one``) its settings recorded."""
    settings = results.settings
    slo = slo_thresholds(settings.get("slo") or settings.get("slo_s"))
    ok = settings.get("ok") or "200-299"
    raw = results.benchmarks[0].steps
    steps = summarize_steps(raw, slo or None, ok, settings.get("n_plus_one") or REPEAT_LIMIT)
    agents = [agent_steps(step, ok) for step in raw] if results.agents else []
    return Sweep(results.benchmarks[0].name, steps, capacity(steps), slo.get("p99"), slo, agents)
