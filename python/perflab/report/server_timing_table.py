"""The server-side breakdown table of ``perflab http`` and ``show``: what the target's
``Server-Timing`` headers said, beside the client's view (docs/http.md, "Server-Timing").

One row per step and metric. Columns, in plain words:

* **step**: the step (offered rate, or connections in closed loop).
* **metric**: a metric the server named (slowest p50 first); then **app total**, the
  app's own total per response (the metric named ``app`` or ``total``, else the
  largest one), and **outside the app**: service time minus the app total, per
  response (network, the server's queue and framework, the client's read).
* **per request** (when the server sent ``count`` parameters, as perflab.trace's
  middleware does): spans of that name in one request, median (max).
* **count**: OK responses that reported it.
* **p50**, **p90**, **p99**, **max**: of its ``dur``, from an HdrHistogram (3 digits).
* **% of client p50**: its p50 over the step's service-time p50.

The same figures go into the CSV records (:func:`with_server_timing_rows`): one row per
metric after the row of the step (or the agent's share of it) it belongs to.
"""

from __future__ import annotations

import math
from typing import Any

from perflab.analyze.http import StepSummary, Sweep
from perflab.analyze.server_timing import APP_TOTAL
from perflab.model import HttpStep, Results
from perflab.report.table import Table
from perflab.units import format_time

COLUMNS = ["step", "metric", "count", "p50", "p90", "p99", "max", "% of client p50"]
#: The prefix of the Server-Timing columns of the CSV records (docs/trace.md).
CSV_PREFIX = "server_timing_"


def _time(seconds: float) -> str:
    return format_time(seconds) if math.isfinite(seconds) else "–"


def server_timing_tables(results: Results, sweep: Sweep) -> list[Table]:
    """The breakdown of an ``http`` results file: one table, or none when no step's
    responses carried ``Server-Timing``. ``sweep``: its figures
    (:func:`perflab.analyze.http.summarize_results`), whose steps hold the breakdown."""
    steps = [s for s in sweep.steps if s.server_timing]
    if not steps:
        return []
    counted = any(math.isfinite(r.per_request_p50) for s in steps for r in s.server_timing)
    columns = [*COLUMNS[:2], "per request", *COLUMNS[2:]] if counted else list(COLUMNS)
    table = Table(
        "Server-Timing: the server's own account of each request",
        columns,
        align=["l", "l"] + ["r"] * (len(columns) - 2),
    )
    for step in steps:
        for r in step.server_timing:
            share = f"{r.share_p50:.0%}" if math.isfinite(r.share_p50) else "–"
            row = [
                step.label,
                r.name,
                f"{r.count:,}",
                _time(r.p50_s),
                _time(r.p90_s),
                _time(r.p99_s),
                _time(r.max_s),
                share,
            ]
            if counted:
                row.insert(2, _per_request(r.per_request_p50, r.per_request_max))
            table.rows.append(row)
        table.footnotes += [f"{step.label}: {note}" for note in step.server_timing_notes]
    table.footnotes.append(
        f"{APP_TOTAL} = the metric named app or total, else the largest; "
        "outside the app = service time − app total, per response"
    )
    if counted:
        table.footnotes.append(
            "per request: spans of that name in one request, median (max), as the "
            "server's count parameter said"
        )
    return [table]


def _per_request(p50: float, most: float) -> str:
    """``41 (max 41)``; – when the server sent no count."""
    if not math.isfinite(p50):
        return "–"
    return f"{p50:,.0f}" if most == p50 else f"{p50:,.0f} (max {most:,.0f})"


def with_server_timing_rows(
    results: Results, sweep: Sweep, records: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The CSV records of an ``http`` sweep with its Server-Timing figures: each step's
    row (and each agent's row of a distributed run) gains ``server_timing_responses``,
    ``server_timing_malformed`` and ``server_timing_metrics_dropped``, and is followed by
    one row per metric of its breakdown (``StepSummary.server_timing``, the table's
    rows): ``step`` (and ``agent``) saying whose it is, then
    ``server_timing_metric``, ``server_timing_count``, ``server_timing_p50_s``,
    ``…_p90_s``, ``…_p99_s``, ``…_max_s`` and ``server_timing_share_p50``, the other
    columns empty. Unchanged when no response carried the header.

    Args:
        results: the ``http`` results (its one benchmark's steps and their agent shares:
            the header counts).
        sweep: its figures (each step's and each agent's breakdown).
        records: the sweep's records in order, one per step, each followed by its
            agents' rows (``step`` 1-based; ``agent`` "all" or the agent's number).
    """
    steps = results.benchmarks[0].steps if results.benchmarks else []
    if not any(
        s.server_timing is not None
        or any(a.step is not None and a.step.server_timing is not None for a in s.agents)
        for s in steps
    ):
        return records
    out: list[dict[str, Any]] = []
    for record in records:
        step, summary = _step_of(steps, sweep, record)
        timing = step.server_timing if step is not None else None
        if timing is None or summary is None:
            out.append(record)
            continue
        out.append(
            {
                **record,
                f"{CSV_PREFIX}responses": timing.responses,
                f"{CSV_PREFIX}malformed": timing.malformed,
                f"{CSV_PREFIX}metrics_dropped": timing.metrics_dropped,
            }
        )
        whose = {k: record[k] for k in ("step", "agent") if k in record}
        out += [
            {
                **whose,
                f"{CSV_PREFIX}metric": r.name,
                f"{CSV_PREFIX}count": r.count,
                f"{CSV_PREFIX}p50_s": r.p50_s,
                f"{CSV_PREFIX}p90_s": r.p90_s,
                f"{CSV_PREFIX}p99_s": r.p99_s,
                f"{CSV_PREFIX}max_s": r.max_s,
                f"{CSV_PREFIX}share_p50": r.share_p50,
            }
            for r in summary.server_timing
        ]
    return out


def _step_of(
    steps: list[HttpStep], sweep: Sweep, record: dict[str, Any]
) -> tuple[HttpStep | None, StepSummary | None]:
    """The step (or agent's share of it) a CSV record describes, raw and summarized;
    (None, None) when lost."""
    index = int(record["step"]) - 1
    if not 0 <= index < len(steps) or index >= len(sweep.steps):
        return None, None
    agent = record.get("agent", "all")
    if agent == "all":
        return steps[index], sweep.steps[index]
    shares = sweep.agents[index] if index < len(sweep.agents) else []
    share = next((a for a in shares if a.share.agent + 1 == agent), None)
    if share is None:
        return None, None
    return share.share.step, share.summary
