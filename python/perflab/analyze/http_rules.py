"""The verdict rules of one HTTP step, each on that step's own figures, and which
verdicts later steps can still change (the live progress line's question).

A step is judged by :func:`perflab.analyze.http.summarize_steps`, from these rules
(docs/http.md, "Verdicts"):

* **generator-limited**: perflab itself could not keep up (:func:`generator_reasons`).
* **saturated**: the server could not keep up (:func:`saturation_reasons`): it answered
  < 95% of the offered rate (successes and error responses counted), left a backlog,
  missed a latency SLO, or let over 1% of requests go unanswered (timeouts, refused
  connections); and the rules that compare steps (the knee, closed loop's throughput
  knee).
* **errors**: the server kept up (none of the above) but failed over 1% of the
  requests, or more than the ``--slo error=…`` limit (:func:`error_reasons`): it
  answered, with errors (a 5xx, a 4xx outside ``--ok``, a reset, a half response).
* **ok**: none of these.

The inputs are :class:`perflab.analyze.http.StepSummary` values (read by attribute,
so that this module stays below it: it imports nothing of ``analyze.http``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from perflab.analyze.http_slo import slo_misses, slo_thresholds
from perflab.units import format_time

#: Answered/offered below this share means saturated (autobench's reading of the knee).
ACHIEVED_SHARE = 0.95
#: Failed requests above this share of completed requests: an "errors" step, or a
#: saturated one when they went unanswered (:data:`UNANSWERED`).
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
#: Failures that are no answer from the server: it did not keep up (or is down).
UNANSWERED = ("connect_refused", "connect_timeout", "read_timeout")

OK, SATURATED, GENERATOR_LIMITED, ERRORS = "ok", "saturated", "generator-limited", "errors"
#: Every verdict of a step, from best to worst for the server.
VERDICTS = (OK, ERRORS, SATURATED, GENERATOR_LIMITED)
#: Verdicts a later, lighter step can still turn into "saturated" (the knee rules).
OPEN_VERDICTS = (OK, ERRORS)


def _share(part: float, whole: float) -> float:
    return part / whole if whole > 0 else math.nan


def engine_busy(s: Any) -> bool:
    """True when an engine thread was CPU-bound during the step (≥ :data:`ENGINE_BUSY`)."""
    return bool(s.engine_busy)


def generator_reasons(s: Any) -> list[str]:
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


def failed_count(s: Any) -> int:
    """The step's failed requests (error % × completed), whole step."""
    share = s.error_fraction
    return round(share * s.completed) if math.isfinite(share) else 0


def unanswered_count(s: Any) -> int:
    """Failed requests the server never answered (:data:`UNANSWERED`: timeouts, refused
    connections)."""
    return sum(n for kind, n in s.errors.items() if kind in UNANSWERED)


def answered_rate(s: Any) -> float:
    """Requests/s the server answered in the window: the achieved rate (successes) plus
    its answered failures (error statuses, resets, half responses) ÷ the window."""
    answered_failures = max(failed_count(s) - unanswered_count(s), 0)
    if not answered_failures:
        return float(s.achieved_rate)
    return float(s.achieved_rate + _share(answered_failures, s.window_s))


def saturation_reasons(s: Any, slo_s: float | dict[str, float] | None = None) -> list[str]:
    """Why this step shows a server that could not keep up (empty when it does not);
    ``slo_s``: a p99 limit in seconds, or the limits of :func:`slo_thresholds` (the
    ``error`` limit is :func:`error_reasons`'s, not saturation's)."""
    reasons = []
    answered = answered_rate(s)
    if s.offered_rate and not answered >= ACHIEVED_SHARE * s.offered_rate:
        word = "achieved" if answered == s.achieved_rate else "answered"
        reasons.append(f"{word} {_share(answered, s.offered_rate):.0%} of offered")
    unanswered = _share(unanswered_count(s), s.completed)
    if unanswered > ERROR_LIMIT:
        kinds = [k.replace("_", " ") for k in UNANSWERED if s.errors.get(k)]
        reasons.append(f"{unanswered:.1%} unanswered ({', '.join(kinds)})")
    limits = {k: v for k, v in slo_thresholds(slo_s).items() if k != "error"}
    reasons += slo_misses(s, limits, unmeasured=False)
    reasons += backlog_reasons(s)
    if s.completed == 0 and not reasons:
        reasons.append("no request completed")
    return reasons


def error_reasons(s: Any, slo_s: float | dict[str, float] | None = None) -> list[str]:
    """Why this step failed too many requests (empty when it did not): error % over
    :data:`ERROR_LIMIT`, or over ``--slo error=…``; the reason names the commonest
    failures ("5.0% failed (status 500)")."""
    limit = slo_thresholds(slo_s).get("error")
    share = s.error_fraction
    if not (share > ERROR_LIMIT or (limit is not None and share > limit)):
        return []
    kinds = {f"status {code}": n for code, n in s.failed_statuses.items()}
    kinds.update({k.replace("_", " "): n for k, n in s.errors.items() if n})
    top = sorted(kinds, key=lambda k: -kinds[k])[:2]
    reasons = [f"{share:.1%} failed" + (f" ({', '.join(top)})" if top else "")]
    if limit is not None and share > limit:
        reasons += slo_misses(s, {"error": limit})
    return reasons


def backlog_reasons(s: Any) -> list[str]:
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


def server_bound(s: Any) -> bool:
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


def step_verdict(s: Any, generator: list[str], slo_s: Any = None) -> tuple[str, list[str]]:
    """The verdict of one step on its own figures, and its reasons.

    errors when the server kept up but failed requests (perflab's own lateness, if any,
    added as "also …": error responses are the server's whatever perflab's pace);
    generator-limited when perflab was the limit (unless the backlog is the server's,
    :func:`server_bound`; failures over the limit added as "also …"); saturated when
    the server could not keep up (error reasons added when it answered some failures);
    else ok. ``generator``: the step's :func:`generator_reasons` (for a distributed
    step, each agent's); ``slo_s``: as :func:`saturation_reasons`'s.

    Returns:
        (verdict, reasons): one of :data:`VERDICTS`, plain-words reasons.
    """
    saturation = saturation_reasons(s, slo_s)
    errors = error_reasons(s, slo_s)
    if errors and not saturation:
        return ERRORS, errors + [f"also {r}" for r in generator]
    if generator and not (saturation and server_bound(s)):  # failures still named
        return GENERATOR_LIMITED, generator + [f"also {r}" for r in errors]
    if saturation:  # errors the server answered add to why (timeouts are said already)
        answered_errors = failed_count(s) > unanswered_count(s)
        return SATURATED, saturation + (errors if answered_errors else [])
    return OK, []


def settled(s: Any, later_loads: Sequence[float], alone: Callable[[], str]) -> bool:
    """True when no step still to run can change step ``s``'s verdict or its reasons.

    Only the rules that compare steps change a verdict after its step, and only from
    :data:`OPEN_VERDICTS` to saturated: the knee (a lighter saturated step) and closed
    loop's throughput knee (a lighter step with about as much throughput). Both look at
    lighter steps only, and the verdicts of those depend on lighter steps only. So the
    verdict is final once every step to come is at least as heavy (``later_loads``: the
    loads, requests/s or connections, of the steps still to run), or when the step's own
    figures made it saturated or generator-limited (``alone()``: its verdict judged
    without the other steps, asked only when a lighter step is still to come)."""
    if all(load >= s.load for load in later_loads):
        return True
    return s.verdict not in OPEN_VERDICTS and alone() not in OPEN_VERDICTS
