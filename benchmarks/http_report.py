"""The Markdown section of an HTTP/2 or HTTP/3 benchmark (benchmarks/http2.py,
benchmarks/http3.py): both report a closed-loop comparison, an open loop at a fixed rate and
the coordinated-omission stall test, and judge the last two by the same targets. One
builder serves both; each script passes its own closed-loop lines and verdicts."""

from __future__ import annotations

import sys
import time
from typing import Any

from common import machine  # the scripts put benchmarks/ on sys.path


def run_lines(script: str, note: str) -> list[str]:
    """The command that reproduces a section and the machine it ran on, as Markdown lines:
    ``script`` is the file under benchmarks/ (``http3.py``), ``note`` what the command needs
    (in words, shown in brackets after it)."""
    return [
        f"Command: `python benchmarks/{script} {' '.join(sys.argv[1:])}` ({note}).",
        f"Machine: {machine()}. Date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.",
    ]


def open_and_stall(
    open_step: dict[str, Any],
    open_rate: float,
    streams: int,
    co: dict[str, Any],
    serve: str,
    over: str = "",
) -> tuple[list[str], list[str]]:
    """The open-loop and stall-test figures as Markdown lines, and their verdict lines.

    Args:
        open_step: the open-loop step (``rate`` in OK responses/s, ``send_lag.p99_us``).
        open_rate: the offered rate, requests/s.
        streams: streams per connection in the open loop.
        co: ``{"step": the stall test's step (``latency.p99_us``), "expected_p99_s": the
            analytic p99 in s}``.
        serve: the stall test's target in words, e.g. "`perflab serve --delay 1ms
            --stall 1s/10s`, h2c".
        over: the protocol the section's lines name, e.g. " over HTTP/3" (with its space),
            or "" where the section is about one protocol.

    The targets (issue 30, as HTTP/1.1's in benchmarks/http.py): achieved within 0.5% of
    offered, send-lag p99 ≤ 1 ms, and the stall test's p99 within 10% of the analytic one.
    """
    achieved = open_step["rate"] / open_rate
    lag_p99 = open_step["send_lag"]["p99_us"] * 1e-6
    co_p99 = co["step"]["latency"]["p99_us"] * 1e-6
    expected = co["expected_p99_s"]
    co_err = abs(co_p99 - expected) / expected
    lines = [
        f"Open loop at {open_rate:,}/s{over} ({streams} streams per connection): achieved "
        f"{open_step['rate']:,.1f}/s, send-lag p99 {lag_p99 * 1e3:.3f} ms.",
        "",
        f"Stall test ({serve}): p99 {co_p99:.3f} s against the analytic {expected:.3f} s.",
    ]
    verdicts = [
        f"- open loop at {open_rate:,}/s{over}: achieved within 0.5% of offered "
        f"({achieved:.4f}): **{'met' if abs(achieved - 1) <= 0.005 else 'not met'}**",
        f"- open loop{over}: send-lag p99 ≤ 1 ms ({lag_p99 * 1e3:.3f} ms): "
        f"**{'met' if lag_p99 <= 1e-3 else 'not met'}**",
        f"- stall test{over}: p99 within 10% of the analytic {expected:.3f} s "
        f"({co_p99:.3f} s, off by {co_err:.1%}): **{'met' if co_err <= 0.10 else 'not met'}**",
    ]
    return lines, verdicts


def section(title: str, body: list[str], verdicts: list[str], rule: str) -> str:
    """One benchmark section: ``## title``, the ``body`` lines, ``### Verdicts`` (one
    verdict line each) and the rule they were judged by (a sentence without its full
    stop)."""
    heading = "### Verdicts" if len(verdicts) > 1 else "### Verdict"
    return "\n".join([f"## {title}", "", *body, "", heading, "", *verdicts, "", f"Rule: {rule}."])
