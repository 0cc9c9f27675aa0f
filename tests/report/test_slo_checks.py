"""issue 29 §4: `--slo` exited 1 with no row saying which SLO was missed; each term is
now checked on each step, ✓ or ✗ with the figure, as k6 prints its thresholds."""

from __future__ import annotations

import math
from types import SimpleNamespace

from perflab.report.slo_checks import slo_lines


def _step(label: str, p99_s: float, errors: float) -> SimpleNamespace:
    return SimpleNamespace(label=label, latency_s={"p99": p99_s}, error_fraction=errors)


def test_each_term_on_each_step() -> None:
    steps = [_step("500/s", 0.00863, 0.0), _step("8,000/s", 1.19, 0.0205)]
    p99, errors = slo_lines(steps, {"p99": 0.02, "error": 0.001})
    assert p99 == "SLO p99 ≤ 20 ms: 500/s ✓ 8.63 ms, 8,000/s ✗ 1.19 s"
    assert errors == "SLO errors ≤ 0.1%: 500/s ✓ 0.00%, 8,000/s ✗ 2.05%"
    assert slo_lines(steps, {}) == []
    (unmeasured,) = slo_lines([_step("1/s", math.nan, 1.0)], {"p99": 0.02})
    assert "1/s ✗ not measured" in unmeasured
