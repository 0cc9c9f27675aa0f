"""One benchmark's headline figure in one run, as the history database keeps it
(:class:`SummaryRow`); :mod:`perflab.model.history` holds the rest of the history
document's types. On its own so that recording a run (``perflab http``, issue 30)
does not build the seven listing and trend types it never uses."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class SummaryRow:
    """One benchmark's headline figure in one run.

    Attributes:
        bench: the benchmark id (:attr:`perflab.model.Benchmark.id`); for HTTP,
            ``"<id> <step label>"``.
        metric: "time" (python, command), "p50"/"p99" latency or "rate" (HTTP),
            "instructions" (``--count instructions``).
        unit: "s", "1/s" or "Ir" (instructions per op).
        value: the median time (s), latency percentile (s) or achieved rate (1/s);
            NaN when the benchmark failed without data.
        ci_low / ci_high: its 95% CI, NaN when there is none.
        units: independent units behind it: processes, runs or requests.
        failed: True when the benchmark failed.
    """

    bench: str
    metric: str
    unit: str
    value: float
    ci_low: float = math.nan
    ci_high: float = math.nan
    units: int = 0
    failed: bool = False
