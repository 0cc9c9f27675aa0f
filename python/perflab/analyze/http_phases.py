"""The phases of an HTTP step's requests, as h2load's and oha's summaries show them:
TCP connect and TLS handshake of the connections recorded requests opened, time to
first byte and body transfer of every response (``HttpStep.connect``, ``tls_handshake``,
``ttfb``, ``body_time``: HdrHistograms in µs recorded by the engine,
``rust/engine/src/load/phases.rs``)."""

from __future__ import annotations

import math

from perflab.model import HttpStep
from perflab.model.http_step import PHASE_HISTOGRAMS

#: Each phase's figures: how many were timed, and two percentiles (s).
PHASE_FIGURES = ("count", "p50_s", "p99_s")


def phase_figures(step: HttpStep) -> dict[str, dict[str, float]]:
    """Each phase of ``step`` → {count, p50_s, p99_s} (seconds; NaN percentiles when
    the phase was never timed, e.g. no TLS on plain TCP, or a file from before phases
    were recorded).

    Returns:
        {"connect" | "tls_handshake" | "ttfb" | "body_time": figures}, in that order.
    """
    out = {}
    for name in PHASE_HISTOGRAMS:
        hist = getattr(step, name)
        out[name] = {
            "count": float(hist.count),
            "p50_s": _seconds(hist.count, hist.p50_us),
            "p99_s": _seconds(hist.count, hist.p99_us),
        }
    return out


def _seconds(count: int, value_us: float | None) -> float:
    """A percentile in seconds; NaN when nothing was timed."""
    return value_us * 1e-6 if count and value_us is not None else math.nan
