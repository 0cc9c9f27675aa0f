"""The phase table of ``perflab http`` and ``show``: where each request's time went,
as h2load's and oha's summaries show it (docs/http.md, "Phases").

One row per step. Columns, in plain words:

* **step**: the step (offered rate, or connections in closed loop).
* **protocol**: the HTTP version spoken (``http/1.1``, ``h2``, ``h3``; ``h2 ×N`` with N
  concurrent streams per connection).
* **connects**: connections opened by recorded requests (each timed once).
* **connect p50** / **connect p99**: TCP connect (SYN to established; "–" for HTTP/3,
  whose QUIC has no separate connect).
* **TLS p50** / **TLS p99**: the TLS handshake after the connect ("–" on plain TCP); for
  HTTP/3 the whole QUIC handshake, which carries TLS 1.3.
* **TTFB p50** / **TTFB p99**: time to first byte: the request's write to the first byte
  of its response (HTTP/2: the response's HEADERS frame).
* **body p50** / **body p99**: the response's first byte to its last.

Shown when some step recorded phases (files from before they were recorded have none).
"""

from __future__ import annotations

import math

from perflab.analyze.http import StepSummary, Sweep
from perflab.report.table import KEY, NOTE, Table
from perflab.units import format_time

COLUMNS = [
    "step",
    "protocol",
    "connects",
    "connect p50",
    "connect p99",
    "TLS p50",
    "TLS p99",
    "TTFB p50",
    "TTFB p99",
    "body p50",
    "body p99",
]


#: Fold ranks (:attr:`Table.fold`): TTFB stays; the rarer phases fold away first.
FOLD = [KEY, NOTE, 7, 6, 3, 5, 2, KEY, KEY, 4, 1]


def _time(seconds: float) -> str:
    return format_time(seconds) if math.isfinite(seconds) else "–"


def protocol_label(s: StepSummary) -> str:
    """ "http/1.1", "h2", "h3" or "h2 ×8" (8 streams per connection)."""
    return f"{s.protocol} ×{s.streams}" if s.streams > 1 else s.protocol


def phases_tables(sweep: Sweep) -> list[Table]:
    """The phase table of a sweep (its steps' :attr:`StepSummary.phases`), or none when
    no step recorded a phase."""
    steps = [s for s in sweep.steps if any(f["count"] for f in s.phases.values())]
    if not steps:
        return []
    table = Table(
        "Phases: where each request's time went",
        list(COLUMNS),
        align=["l", "l"] + ["r"] * (len(COLUMNS) - 2),
        fold=FOLD,
    )
    for s in steps:
        p = s.phases
        # HTTP/3 opens without a TCP connect: its connections are its QUIC handshakes.
        opened = max(p["connect"]["count"], p["tls_handshake"]["count"])
        row = [s.label, protocol_label(s), f"{int(opened):,}"]
        for name in ("connect", "tls_handshake", "ttfb", "body_time"):
            row += [_time(p[name]["p50_s"]), _time(p[name]["p99_s"])]
        table.rows.append(row)
    table.footnotes.append(
        "connect and TLS: once per connection opened in the recorded window (connections"
        " opened during the warmup and kept are not counted, so a closed loop may show 0);"
        " TTFB and body: every response."
    )
    if any(s.protocol == "h3" for s in steps):
        table.footnotes.append(
            "h3: QUIC has no TCP connect; its handshake (carrying TLS 1.3) is under TLS."
        )
    return [table]


def phase_record(s: StepSummary) -> dict[str, object]:
    """The phase columns of a step's CSV record: protocol, streams and each phase's
    count, p50 and p99 (s)."""
    record: dict[str, object] = {"protocol": s.protocol, "streams": s.streams}
    for name, figures in s.phases.items():
        for key, value in figures.items():
            record[f"{name}_{key}"] = int(value) if key == "count" else value
    return record
