"""k6's thresholds output for ``perflab http --slo``: each SLO term checked on each step,
✓ or ✗ with the measured figure (``p99 ≤ 20 ms: 500/s ✓ 8.63 ms, 8,000/s ✗ 1.19 s``), so
a tripped ``--slo`` gate says which term failed where."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perflab.analyze.http_slo import slo_text
from perflab.units import format_time


def _figure(key: str, value: float) -> str:
    if not math.isfinite(value):
        return "not measured"
    return f"{value:.2%}" if key == "error" else format_time(value)


def slo_lines(steps: Sequence[Any], slo: dict[str, float]) -> list[str]:
    """One footnote line per SLO term: every step's ✓ (met) or ✗ (missed) and its figure.

    Args:
        steps: the sweep's step summaries (``label``, ``error_fraction``, ``latency_s``).
        slo: {"p99"|"p50"|…|"error": limit (s, or a fraction for "error")}; empty: none.

    Returns:
        e.g. ``["SLO p99 ≤ 20 ms: 500/s ✓ 8.63 ms, 8,000/s ✗ 1.19 s"]``; a latency no
        successful request measured counts as missed, as the gate counts it.
    """
    lines = []
    for key, limit in slo.items():
        checks = []
        for s in steps:
            value = s.error_fraction if key == "error" else s.latency_s.get(key, math.nan)
            mark = "✓" if math.isfinite(value) and value <= limit else "✗"
            checks.append(f"{s.label} {mark} {_figure(key, value)}")
        lines.append(f"SLO {slo_text({key: limit})}: " + ", ".join(checks))
    return lines
