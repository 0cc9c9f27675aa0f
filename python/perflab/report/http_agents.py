"""The per-agent table of a distributed ``perflab http`` run (``--agents N``): one row per
step and agent, beside the merged sweep table of :mod:`perflab.report.http_table`.

Each row is the agent's own share of the step, summarised by the same rules as a whole
step (:func:`perflab.analyze.http.agent_steps`, computed with the sweep); the footnotes
name every agent with its host, its clock offset to the controller and that offset's
uncertainty, and the agents whose clock checks failed or that died.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from perflab.analyze.http import AgentStep, Sweep
from perflab.report.table import Table
from perflab.units import format_time

COLUMNS = [
    "step",
    "agent",
    "offered",
    "achieved",
    "p99",
    "send lag p99",
    "perflab lag p99",
    "busy",
    "CPU/req",
    "start lead",
    "state",
]


def _time(seconds: float) -> str:
    return format_time(seconds) if math.isfinite(seconds) else "–"


def _rate(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:,.0f}/s"


def _offset(info: Any) -> str:
    """ "+1.234 ± 0.050 ms", or "0 (same clock)" for an agent on the controller's kernel."""
    if info.same_clock:
        return "0 (same clock as the controller)"
    return (
        f"{info.offset_ns / 1e6:+,.3f} ± {info.offset_uncertainty_ns / 1e6:,.3f} ms "
        f"(round trip {info.round_trip_ns / 1e6:,.3f} ms)"
    )


def _cpu_per_request(share: Any) -> str:
    sent = share.step.requests_sent if share.step is not None else 0
    if not sent or not math.isfinite(share.process_cpu_s):
        return "–"
    return _time(share.process_cpu_s / sent)


def _row(label: str, agent_step: AgentStep) -> list[str]:
    share, s, reasons = agent_step.share, agent_step.summary, agent_step.reasons
    agent = f"agent {share.agent + 1}"
    if s is None:
        return [label, agent, *["–"] * 8, f"lost: {share.error or 'died'}"]
    state = "generator-limited: " + ", ".join(reasons) if reasons else "ok"
    lead = (
        "–"
        if not math.isfinite(share.start_lead_s)
        else (
            _time(share.start_lead_s)
            if share.start_lead_s >= 0
            else f"late by {_time(-share.start_lead_s)}"
        )
    )
    return [
        label,
        agent,
        _rate(s.offered_rate) if s.mode != "closed" else f"{s.connections} conn",
        _rate(s.achieved_rate),
        _time(s.latency_s["p99"]),
        _time(s.send_lag_p99_s),
        _time(s.dispatch_lag_p99_s),
        "–" if not math.isfinite(s.cpu_share) else f"{s.cpu_share:.0%}",
        _cpu_per_request(share),
        lead,
        state + (" (interrupted)" if s.interrupted else ""),
    ]


def agents_table(results: Any, sweep: Sweep) -> Table:
    """The per-agent table of a distributed ``http`` results file.

    Args:
        results: a :class:`perflab.model.Results` of kind "http" with ``agents``.
        sweep: its figures (:func:`perflab.analyze.http.summarize_results`), the agents'
            shares of each step included.

    Returns:
        A table with :data:`COLUMNS`: one row per step and agent (times in the units
        printed; "busy" is the busiest engine thread's CPU share of the step, "CPU/req"
        the agent process's CPU time ÷ requests sent), and footnotes naming each agent.
    """
    table = Table("load agents", list(COLUMNS), align=["l", "l"] + ["r"] * 8 + ["l"])
    for step, agents in zip(sweep.steps, sweep.agents):
        table.rows += [_row(step.label, a) for a in agents]
    table.footnotes = [*_agent_lines(results.agents), *LEGEND]
    return table


def with_agent_rows(
    results: Any,
    sweep: Sweep,
    records: list[dict[str, Any]],
    record_of: Callable[[Any], dict[str, Any]],
) -> list[dict[str, Any]]:
    """The CSV records of a sweep (:func:`perflab.report.http_table.step_records`, one
    per step) with each step's agents' rows after it; unchanged for a run from one
    machine.

    Args:
        results: the results (``agents``: who each agent was).
        sweep: their figures, the agents' shares of each step included.
        records: one flat record per step, in step order.
        record_of: the flat record of one step summary (the sweep's own rule).

    Returns:
        Records with an ``agent`` column: "all" on the merged step's row, the agent's
        number (1-based) on its own rows, which hold its share summarised by the same
        rules (verdict "ok", "generator-limited" or "lost") and ``host``, ``weight``,
        ``start_lead_s``, ``process_cpu_per_request_s``, ``offset_ns``,
        ``offset_uncertainty_ns`` and ``error``.
    """
    if not results.agents:
        return records
    infos = {info.index: info for info in results.agents}
    out: list[dict[str, Any]] = []
    for record, agents in zip(records, sweep.agents):
        out.append({"agent": "all", **record})
        for a in agents:
            share = a.share
            info = infos.get(share.agent)
            row: dict[str, Any] = {"agent": share.agent + 1, "step": record["step"]}
            if a.summary is not None:
                row.update(
                    {
                        **record_of(a.summary),
                        "step": record["step"],
                        "verdict": "generator-limited" if a.reasons else "ok",
                        "reasons": "; ".join(a.reasons),
                    }
                )
            else:
                row["verdict"] = "lost"
            sent = share.step.requests_sent if share.step is not None else 0
            row.update(
                {
                    "host": info.host if info else "",
                    "weight": info.weight if info else "",
                    "start_lead_s": share.start_lead_s,
                    "process_cpu_per_request_s": share.process_cpu_s / sent if sent else "",
                    "offset_ns": "" if share.offset_ns is None else share.offset_ns,
                    "offset_uncertainty_ns": ""
                    if share.offset_uncertainty_ns is None
                    else share.offset_uncertainty_ns,
                    "error": share.error or "",
                }
            )
            out.append(row)
    return out


def _agent_lines(agents: Sequence[Any]) -> list[str]:
    lines = []
    for info in agents:
        text = (
            f"{info.label}: {info.address or info.node[:12]}, pid {info.pid}, "
            f"{info.cores} core(s), clock offset {_offset(info)}"
        )
        if info.clock_flagged:
            text += (
                f"; CLOCK CHECKS FAILED ({info.clock_flagged}): its timelines are "
                "not trusted (its latencies still are: they use its own monotonic clock)"
            )
        if info.lost_at_step is not None:
            text += f"; died in step {info.lost_at_step + 1}: {info.error}"
        lines.append(text)
    return lines


LEGEND = [
    "each row is one agent's share of a step, judged by the same rules as a whole step; "
    "a step is generator-limited when any agent was; perflab lag = the part of the send "
    "lag spent in perflab itself; busy = its busiest engine thread's CPU ÷ the step; "
    "CPU/req = the agent process's CPU time (engine, Ray and Python) ÷ requests sent; "
    "start lead = how long before the shared start instant the agent got the step",
    "clock offset = the agent's realtime clock − the controller's, from the round trip "
    "with the smallest delay (NTP-style; ± half that round trip bounds the error); it only "
    "places the start instant: latencies are timed on each agent's own clock",
]
