"""The rule of the per-sample clock cross-check: when two clocks disagree too much.

A timed sample is flagged when ``|skew| > ABS_TOLERANCE_NS + REL_TOLERANCE × ΔMONOTONIC``
for any clock (the check itself is :mod:`perflab.engines.integrity`). The rule lives in
this base module so that what records it (the environment fingerprint,
:func:`perflab.environment.fingerprint`) need not import the engine that applies it.
"""

from __future__ import annotations

from typing import Any

#: Relative part of the tolerance: NTP slews MONOTONIC against RAW by at most
#: 500 ppm (ntpd); 1e-3 leaves room for that plus the TSC calibration error (~1e-6).
REL_TOLERANCE = 1e-3
#: Absolute part of the tolerance, ns: the jitter of reading four clocks in a row.
ABS_TOLERANCE_NS = 5_000
#: ``Sample.flagged`` of a sample whose clocks disagreed is this prefix + the clock,
#: e.g. "clock:tsc" (MONOTONIC disagreed with the TSC).
FLAG_PREFIX = "clock:"


def settings() -> dict[str, Any]:
    """The rule as JSON, for the environment fingerprint's ``clock_integrity``: ``method``
    (str), ``rel_tolerance`` (fraction of the sample), ``abs_tolerance_ns`` (ns)."""
    return {
        "method": "per-sample MONOTONIC vs REALTIME, MONOTONIC_RAW and TSC deltas",
        "rel_tolerance": REL_TOLERANCE,
        "abs_tolerance_ns": ABS_TOLERANCE_NS,
    }
