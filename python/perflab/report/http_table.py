"""The sweep table of ``perflab http``: one row per step, plain-words footnotes, CSV records.

Built once as a :class:`perflab.report.table.Table` and rendered by
:mod:`perflab.report.console` as a rich table, Markdown or CSV (autobench's table of
offered rate, achieved rate, errors and latency per step, plus verdicts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.http import (
    ACHIEVED_SHARE,
    BATCH_S,
    CLOSED_GAIN,
    CLOSED_GROWTH,
    DRAIN_SHARE,
    ENGINE_BUSY,
    ERROR_LIMIT,
    ERRORS,
    GENERATOR_LIMITED,
    SATURATED,
    SEND_LAG_LIMIT_S,
    Capacity,
    StepSummary,
    Sweep,
)
from perflab.analyze.http_slo import slo_text
from perflab.model import Results
from perflab.report.http_status import status_table
from perflab.report.slo_checks import slo_lines
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_bytes, format_time

COLUMNS = [
    "offered",
    "achieved",
    "drained",
    "error %",
    "conn err %",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "max",
    "send lag p99",
    "conns",
    "verdict",
]


def _rate(value: float | None) -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:,.0f}/s"


def _percent(value: float) -> str:
    if not math.isfinite(value):
        return "–"
    return "0" if value == 0 else f"{value:.2%}" if value < 0.1 else f"{value:.1%}"


def _time(seconds: float) -> str:
    return format_time(seconds) if math.isfinite(seconds) else "–"


def _count(value: int | None) -> str:
    return "–" if value is None else f"{value:,}"


def _verdict(s: StepSummary) -> str:
    text = s.verdict + (f": {', '.join(s.reasons)}" if s.reasons else "")
    lost = ", ".join(f"agent {k + 1}" for k in s.agents_lost)
    return text + (" (interrupted)" if s.interrupted else "") + (f" ({lost} lost)" if lost else "")


#: columns added before "verdict" when --watch sampled the server
SERVER_COLUMNS = [
    "server CPU/wall",
    "server CPU/req",
    "engine CPU/wall",
    "engine CPU/req",
    "server RSS peak",
]


def _row(s: StepSummary, server: bool = False) -> list[str]:
    lat = s.latency_s
    conns = (
        f"{s.connections_peak}"
        if s.mode == "closed"
        else f"{s.connections_peak} of {s.connections}"
    )
    return [
        s.label,
        _rate(s.achieved_rate),
        _count(s.drained),
        _percent(s.error_fraction),
        _percent(s.connection_error_fraction),
        *(_time(lat[k]) for k in ("p50", "p90", "p99", "p99.9", "max")),
        _time(s.send_lag_p99_s),
        conns,
        *(_server_cells(s) if server else []),
        _verdict(s),
    ]


def _server_cells(s: StepSummary) -> list[str]:
    f = s.server
    if f is None:
        return ["–"] * len(SERVER_COLUMNS)
    return [
        _cores(f.cpu_wall),
        _time(f.cpu_per_request_s),
        _cores(f.engine_cpu_wall),
        _time(f.engine_cpu_per_request_s),
        format_bytes(f.rss_peak_bytes),
    ]


def _cores(share: float) -> str:
    return f"{share:.2f}" if math.isfinite(share) else "–"


def step_line(s: StepSummary, final: bool = True) -> str:
    """One line for a finished step, e.g. "1,000/s: achieved 998/s, drained 2, errors 0,
    p99 1.2 ms, ok": the verdict the final table will show; with ``final`` False (a
    lighter step still to run may change it), :data:`PENDING` in its place."""
    return (
        f"{s.label}: achieved {_rate(s.achieved_rate)}, drained {_count(s.drained)}, "
        f"errors {_percent(s.error_fraction)}, p99 {_time(s.latency_s['p99'])}, "
        f"{_verdict(s) if final else PENDING}"
    )


#: What the live line says for a verdict a lighter step still to run may change.
PENDING = "verdict … (after the lighter steps)"


def sweep_table(sweep: Sweep, notes: Sequence[str] = ()) -> Table:
    """The sweep table: one row per step, then footnotes in plain words.

    Args:
        sweep: the steps with their verdicts, the capacity estimate and the SLO; the
            table's title is the sweep's name (the request).
        notes: extra lines for the footnotes (e.g. why the sweep ended early).

    Returns:
        The table; columns are :data:`COLUMNS`. On a narrow terminal they fold away in
        this order: p90, conn err %, max, p99.9, p50, send lag p99, conns, drained;
        offered, achieved, error %, p99 and the verdict always show.
    """
    summaries = sweep.steps
    server = any(s.server is not None for s in summaries)
    columns = COLUMNS[:-1] + (SERVER_COLUMNS if server else []) + COLUMNS[-1:]
    fold = [KEY, KEY, 8, KEY, 2, 5, 1, KEY, 4, 3, 6, 7]
    fold += [9] * len(SERVER_COLUMNS) if server else []
    table = Table(sweep.name, columns, align=["r"] * (len(columns) - 1) + ["l"], fold=[*fold, NOTE])
    table.rows = [_row(s, server) for s in summaries]
    table.footnotes = [
        *_capacity_lines(sweep),
        *slo_lines(summaries, sweep.slo),
        *notes,
        *_problem_lines(summaries),
        *_legend(summaries, sweep.slo),
        *_server_lines(summaries),
    ]
    return table


def _server_lines(summaries: Sequence[StepSummary]) -> list[str]:
    """What the --watch columns mean, and the watched processes' memory growth."""
    watched = [s for s in summaries if s.server is not None]
    if not watched:
        return []
    growth = ", ".join(f"{s.label} {format_bytes(s.server.rss_growth_bytes)}" for s in watched)
    return [
        f"server (--watch, {watched[0].server.processes} process(es), sampled every 100 ms "
        "from /proc): CPU/wall = their CPU seconds in the recorded window ÷ its length "
        "(1.00 = one core busy); CPU/req = those CPU seconds ÷ successful responses; RSS "
        "peak = highest summed resident memory over the step; RSS growth over each step: " + growth,
        "engine CPU/wall and engine CPU/req = the same for perflab's own load "
        "engine: its threads' CPU seconds from the warmup's end to the step's end, ÷ the "
        "window and ÷ the recorded requests it completed",
        *_costlier(watched),
    ]


def _costlier(watched: Sequence[StepSummary]) -> list[str]:
    """A warning when the load generator spends more CPU per request than the server."""
    figures = [(s.label, s.server) for s in watched if s.server is not None]
    steps = [label for label, f in figures if f.engine_cpu_per_request_s > f.cpu_per_request_s]
    if not steps:
        return []
    return [
        "warning: the load engine spent more CPU per request than the server in "
        + ", ".join(steps)
        + ": on one machine they share the cores, so the server's "
        "figures may be held back by the load generator; give it fewer threads, or run "
        "it on another machine (--agents)"
    ]


def results_notes(results: Results) -> list[str]:
    """Lines about how the run ended: the target lost, an interruption, no step at all."""
    bench = results.benchmarks[0]
    notes = [bench.error] if bench.error else []
    if results.interrupted:
        notes.append(
            "interrupted (Ctrl-C or a stop signal: SIGTERM, SIGHUP): the steps "
            "measured until then are shown, the last one cut short"
        )
    if not bench.steps:
        notes.append("no step was measured")
    return notes


def print_http(results: Results, sweep: Sweep, fmt: str) -> None:
    """Print an ``http`` run's sweep table on stdout as a rich table, Markdown or CSV.

    Args:
        results: the results file (for how the run ended).
        sweep: its figures (:func:`perflab.analyze.http.summarize_results`).
        fmt: "table", "markdown" or "csv".
    """
    from perflab.report import console

    console.emit(fmt, lambda: http_tables(results, sweep), lambda: http_records(results, sweep))


def http_tables(results: Results, sweep: Sweep) -> list[Table]:
    """The sweep table, the responses by status and error (when some failed), the
    per-request phases, the Server-Timing breakdown, then a distributed run's per-agent
    table."""
    from perflab.report.http_phases_table import phases_tables
    from perflab.report.http_timeline import timeline_tables
    from perflab.report.server_timing_table import server_timing_tables

    return [
        sweep_table(sweep, results_notes(results)),
        *status_table(sweep.steps),
        *phases_tables(sweep),
        *server_timing_tables(results, sweep),
        *agents_tables(results, sweep),
        *timeline_tables(results, sweep),
    ]


def http_records(results: Results, sweep: Sweep) -> list[dict[str, Any]]:
    """The CSV records: one per step, each followed by its agents' rows in a distributed
    run (:func:`agents_records`), each of those by its Server-Timing metrics' rows
    (:func:`perflab.report.server_timing_table.with_server_timing_rows`)."""
    from perflab.report.server_timing_table import with_server_timing_rows

    return with_server_timing_rows(
        results, sweep, agents_records(results, sweep, step_records(sweep.steps))
    )


def agents_tables(results: Results, sweep: Sweep) -> list[Table]:
    """A distributed run's per-agent table (:mod:`perflab.report.http_agents`); none for
    a run from one machine."""
    if not results.agents:
        return []
    from perflab.report.http_agents import agents_table

    return [agents_table(results, sweep)]


def agents_records(
    results: Results, sweep: Sweep, records: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """CSV records with a distributed run's per-agent rows after each step's
    (:func:`perflab.report.http_agents.with_agent_rows`); unchanged for one machine."""
    from perflab.report.http_agents import with_agent_rows

    return with_agent_rows(results, sweep, records, lambda s: step_records([s])[0])


def _capacity_lines(sweep: Sweep) -> list[str]:
    """The capacity estimate in plain words."""
    cap = sweep.capacity
    if cap is None:
        kept = sweep.kept_up
        saturated = [s for s in sweep.steps if s.verdict == SATURATED]
        if failing := [s.label for s in sweep.steps if s.verdict == ERRORS]:
            return [
                f"capacity estimate: none — no step was ok: {', '.join(failing)} failed > "
                f"{ERROR_LIMIT:.0%} of requests (errors)"
                + (f"; the server was saturated at {_labels(saturated)}" if saturated else "")
            ]
        if saturated:
            knee = min(saturated, key=lambda s: s.load)
            if min(sweep.steps, key=lambda s: s.load) is knee:
                return [
                    (
                        "capacity estimate: none — no step was ok and the server was already "
                        "saturated at the lightest load measured; sweep lower"
                    )
                ]
            below = (
                f"; the server kept up with {_rate(kept.achieved_rate)} there (achieved at "
                f"{kept.label}, no sign of saturation)"
                if kept is not None and kept.load < knee.load
                else ""
            )
            return [
                (
                    f"capacity estimate: none — no step was ok: the steps below {knee.label} "
                    f"were generator-limited (perflab's load generator was the limit){below}, "
                    f"and from {knee.label} on the server was saturated; to place the "
                    "capacity between them, give perflab more engine threads (--threads) or "
                    "send the load from other machines (--agents N)"
                )
            ]
        if kept is not None:
            return [
                (
                    f"capacity estimate: none — no step was ok; but the server kept up with "
                    f"at least {_rate(kept.achieved_rate)} (achieved at {kept.label}, p99 "
                    f"{_time(kept.latency_s['p99'])}, no sign of saturation) while perflab's "
                    "load generator was the limit; to measure beyond, give perflab more "
                    "engine threads (--threads) on more cores, or send the load from other "
                    "machines: perflab http URL --agents N (docs/distributed.md)"
                )
            ]
        return ["capacity estimate: none — no step was ok"]
    return [_capacity_text(cap)]


def _labels(steps: Sequence[StepSummary]) -> str:
    return ", ".join(s.label for s in steps)


def _capacity_text(cap: Capacity) -> str:
    s = cap.step
    load = (
        f"{s.offered_rate:,.0f} requests/s offered"
        if s.offered_rate
        else f"{s.connections} connection{'' if s.connections == 1 else 's'}"
    )
    text = (
        f"capacity estimate: {'at least ' if cap.at_least else ''}{load} (achieved "
        f"{s.achieved_rate:,.0f}/s, p99 {_time(s.latency_s['p99'])}), the heaviest ok step"
    )
    if cap.errors_above:
        return text + (
            f"; heavier steps failed > {ERROR_LIMIT:.0%} of requests while the server kept up "
            "(errors): not ok capacity"
        )
    if cap.limited_by_perflab:
        return text + "; heavier steps were limited by perflab itself, not by the server"
    if cap.at_least:
        return text + "; no step saturated the server: sweep higher to find its limit"
    return text


def _problem_lines(summaries: Sequence[StepSummary]) -> list[str]:
    """Errors, statuses, unsent requests and generator limits, step by step."""
    lines = []
    for s in summaries:
        errors = [f"{n:,} {kind.replace('_', ' ')}" for kind, n in s.errors.items() if n]
        bad = [f"{n:,}× status {code}" for code, n in sorted(s.failed_statuses.items())]
        if errors or bad:
            lines.append(f"{s.label}: failed requests: {', '.join(errors + bad)}")
        if s.unsent:
            lines.append(
                f"{s.label}: {s.unsent:,} requests were due but never sent: every "
                "connection was busy until the step ended"
            )
        if s.agents_lost:
            lines.append(
                f"{s.label}: {len(s.agents_lost)} agent(s) died during this step: the "
                "row holds the other agents' data (offered is their share) and is "
                "left out of the capacity estimate"
            )
        if s.flagged:
            lines.append(
                f"{s.label}: the clocks disagreed during this step by "
                f"{(s.clock_skew_ns or 0) / 1e6:,.3f} ms ({s.flagged}): its rates and "
                "latencies are unusable and it is left out of the capacity estimate; "
                "run perflab doctor"
            )
    return lines + _generator_lines([s for s in summaries if s.verdict == GENERATOR_LIMITED])


def _generator_lines(limited: Sequence[StepSummary]) -> list[str]:
    """What generator-limited steps mean, and what to do: more threads when perflab was
    busy, a quieter machine when it was late without being busy (it waited for a CPU)."""
    if not limited:
        return []
    busy = [s.label for s in limited if s.engine_busy]
    waiting = [s.label for s in limited if not s.engine_busy]
    lines = [
        (
            f"generator-limited ({', '.join(s.label for s in limited)}): perflab itself could "
            "not keep up, so these rows describe perflab, not the server"
        )
    ]
    if busy:
        lines.append(
            f"{', '.join(busy)}: an engine thread was busy all the time; give perflab "
            "more --threads (and cores), or offer less; to send more than one "
            "machine can, run load agents on several: perflab http URL --agents N "
            "--cluster ADDRESS (docs/distributed.md)"
        )
    if waiting:
        lines.append(
            f"{', '.join(waiting)}: perflab sent late while mostly idle, so its "
            "thread waited for a CPU: other programs keep this machine busy; close "
            "them or use a quieter machine (rerun to compare)"
        )
    return lines


def _legend(summaries: Sequence[StepSummary], slo_limits: dict[str, float]) -> list[str]:
    """What the columns and verdicts mean."""
    open_loop = any(s.mode != "closed" for s in summaries)
    closed_loop = any(s.mode == "closed" for s in summaries)
    latency = {k: v for k, v in slo_limits.items() if k != "error"}
    if set(latency) == {"p99"}:
        slo = f", or p99 > the {latency['p99'] * 1e3:g} ms SLO"
    else:
        slo = f", or the SLO ({slo_text(latency)}) missed" if latency else ""
    error_slo = (
        f" or over the {slo_limits['error'] * 100:.3g}% SLO" if "error" in slo_limits else ""
    )
    latency_from = (
        "from each request's intended send time (corrected for coordinated omission, as wrk2 does)"
        if open_loop
        else "from the request's write to its last byte"
    )
    lines = _batch_lines(summaries) + [
        (f"latency (p50…max) is of successful requests, {latency_from}, drained ones included"),
        (
            "achieved = successful responses completed inside the recorded window (warmup "
            "trimmed) ÷ its length; drained = successful responses that came after the step "
            "ended, while perflab waited for the requests in flight (not in achieved); error % "
            "= failed ÷ completed requests; conn err % = connections that ended in an error ÷ "
            "connections tried; conns = most open at once"
            + (" of the pool's cap" if open_loop else "")
        ),
        (
            f"saturated: the server could not keep up: it answered (successes and error "
            f"responses) < {ACHIEVED_SHARE:.0%} of offered, or left > {ERROR_LIMIT:.0%} of "
            f"requests unanswered (timeouts, refused){slo}, or the step ended behind: requests "
            f"left unsent or unfinished, or a drain longer than {DRAIN_SHARE:.0%} of the step; "
            "every heavier step after the first saturated one counts as saturated too"
            + (
                ""
                if open_loop and not closed_loop
                else f"; in closed loop also a step with ≥ {CLOSED_GROWTH:g}× the connections of a "
                f"lighter one but ≤ {CLOSED_GAIN:.0%} more throughput (the added connections only "
                "queued: past the server's throughput knee)"
            )
        ),
        (
            f"generator-limited: an engine thread was ≥ {ENGINE_BUSY:.0%} busy, or perflab's own "
            f"part of the send lag had a p99 > {SEND_LAG_LIMIT_S * 1e3:g} ms; send lag = actual "
            "− intended send time, which also holds waits for a free connection (the server's "
            "doing when every connection is busy)"
        ),
    ]
    if any(s.verdict == ERRORS for s in summaries):
        lines.append(
            f"errors: the server kept up but failed > {ERROR_LIMIT:.0%} of requests{error_slo} "
            "(error statuses, resets, half responses: see failed requests and the status "
            "table); not ok capacity"
        )
    return lines


def _batch_lines(summaries: Sequence[StepSummary]) -> list[str]:
    """Say where the open-loop dispatcher batched sends (and what that adds to latency)."""
    batched = [
        s.label
        for s in summaries
        if s.offered_rate and s.offered_rate / max(s.threads, 1) > 1 / BATCH_S
    ]
    if not batched:
        return []
    return [
        (
            f"above {1 / BATCH_S:,.0f} requests/s per engine thread ({', '.join(batched)}) "
            f"perflab sends what fell due every {BATCH_S * 1e6:.0f} µs, to wake up less often: "
            f"that adds 0–{BATCH_S * 1e3:g} ms to each latency (see send lag); the server's "
            "own time is in the results file as service time"
        )
    ]


def step_records(summaries: Sequence[StepSummary]) -> list[dict[str, Any]]:
    """Flat records for CSV: one per step, numbers in base units (s, requests/s)."""
    from perflab.report.http_phases_table import phase_record

    records = []
    for s in summaries:
        record: dict[str, Any] = {
            "step": s.index + 1,
            "mode": s.mode,
            "offered_rate": s.offered_rate or "",
            "connections": s.connections,
            "connections_peak": s.connections_peak,
            "achieved_rate": s.achieved_rate,
            "drained": "" if s.drained is None else s.drained,
            "drain_s": s.drain_s,
            "completed": s.completed,
            "error_fraction": s.error_fraction,
            "connection_error_fraction": s.connection_error_fraction,
        }
        record.update({f"latency_{k.replace('.', '')}_s": v for k, v in s.latency_s.items()})
        record.update(
            {
                "send_lag_p99_s": s.send_lag_p99_s,
                "dispatch_lag_p99_s": s.dispatch_lag_p99_s,
                "service_p99_s": s.service_p99_s,
                "cpu_share": s.cpu_share,
                "unsent": s.unsent,
                "unfinished": s.unfinished,
                "verdict": s.verdict,
                "reasons": "; ".join(s.reasons),
                "interrupted": s.interrupted,
            }
        )
        record.update(phase_record(s))
        if s.server is not None:
            record.update(
                {
                    "server_cpu_wall": s.server.cpu_wall,
                    "server_cpu_per_request_s": s.server.cpu_per_request_s,
                    "server_rss_peak_bytes": s.server.rss_peak_bytes,
                    "server_rss_growth_bytes": s.server.rss_growth_bytes,
                    "engine_cpu_wall": s.server.engine_cpu_wall,
                    "engine_cpu_per_request_s": s.server.engine_cpu_per_request_s,
                }
            )
        records.append(record)
    return records
