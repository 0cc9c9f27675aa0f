"""The server-side breakdown table of ``perflab http`` and ``show``: what the target's
``Server-Timing`` headers said, beside the client's view (docs/http.md, "Server-Timing").

One row per step and metric. Columns, in plain words:

* **step**: the step (offered rate, or connections in closed loop).
* **metric**: a metric the server named (slowest p50 first); then **app total**, the
  app's own total per response (the metric named ``app`` or ``total``, else the
  largest one), and **outside the app**: service time minus the app total, per
  response (network, the server's queue and framework, the client's read).
* **count**: OK responses that reported it.
* **p50**, **p90**, **p99**, **max**: of its ``dur``, from an HdrHistogram (3 digits).
* **% of client p50**: its p50 over the step's service-time p50.
"""

from __future__ import annotations

import math

from perflab.analyze.compare import step_label
from perflab.analyze.server_timing import APP_TOTAL, breakdown, timing_notes
from perflab.model import Results
from perflab.report.table import Table
from perflab.units import format_time

COLUMNS = ["step", "metric", "count", "p50", "p90", "p99", "max", "% of client p50"]


def _time(seconds: float) -> str:
    return format_time(seconds) if math.isfinite(seconds) else "–"


def server_timing_tables(results: Results) -> list[Table]:
    """The breakdown of an ``http`` results file: one table, or none when no step's
    responses carried ``Server-Timing``."""
    steps = [s for b in results.benchmarks for s in b.steps if s.server_timing is not None]
    if not steps:
        return []
    table = Table("Server-Timing: the server's own account of each request",
                  list(COLUMNS), align=["l", "l"] + ["r"] * (len(COLUMNS) - 2))
    for step in steps:
        label = step_label(step)
        for r in breakdown(step):
            share = f"{r.share_p50:.0%}" if math.isfinite(r.share_p50) else "–"
            table.rows.append([label, r.name, f"{r.count:,}", _time(r.p50_s), _time(r.p90_s),
                               _time(r.p99_s), _time(r.max_s), share])
        ok = step.ok_responses - (step.ok_from_warmup or 0) + (step.drained or 0)
        table.footnotes += [f"{label}: {note}" for note in
                            timing_notes(step.server_timing, ok)]  # type: ignore[arg-type]
    table.footnotes.append(f"{APP_TOTAL} = the metric named app or total, else the largest; "
                           "outside the app = service time − app total, per response")
    return [table]
