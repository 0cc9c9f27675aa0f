"""What a comparison holds: one row per compared metric and the suite around them.

The data types of :mod:`perflab.analyze.compare.suite` (which computes them) and of
:mod:`perflab.report.compare_table` (which renders them and rebuilds them from a saved
comparison document), kept apart so both can import them without importing each other.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from perflab.model.estimate import Estimate

FASTER, SLOWER, SAME, INCONCLUSIVE, FAILED = "faster", "slower", "same", "inconclusive", "failed"
#: Every verdict, in the order reports count them.
VERDICTS = (SLOWER, FASTER, INCONCLUSIVE, SAME, FAILED)

#: Default noise threshold t: a ratio CI wholly within 1 ± t is "same".
DEFAULT_THRESHOLD = 0.02
#: Latency percentiles compared by default.
DEFAULT_PERCENTILES = (50.0, 90.0, 99.0, 99.9)
#: The metric of the rows comparing CPU time ÷ machine-speed reference
#: (:mod:`perflab.analyze.compare.speed`): shown, never primary, never read by --fail-on.
SPEED_NORMALIZED = "cpu_vs_reference"


@dataclass
class Side:
    """One file's figures for one compared metric.

    Attributes:
        estimate: the location estimate with its CI: seconds (times, latencies) or 1/s
            (rates); the CI bounds are nan when there is none (an achieved rate).
        units: independent units behind it: processes, runs or requests.
        samples: timed samples (python), runs (command) or requests (http).
    """

    estimate: Estimate
    units: int = 0
    samples: int = 0

    @property
    def value(self) -> float:
        """The location estimate, s or 1/s (``estimate.value``)."""
        return self.estimate.value


@dataclass
class Row:
    """The comparison of one metric of one benchmark (or HTTP step) in A and B.

    Attributes:
        id: benchmark id, plus the step and metric for HTTP rows.
        kind: "python", "command" or "http".
        metric: "time", "rate" or a latency percentile such as "p99".
        unit: "s" or "1/s".
        higher_is_better: True for rates (a ratio above 1 is then "faster").
        a / b: each side's figures, None when that side has no data.
        ratio: B/A with its expanded bootstrap CI, None when not computable.
        p_value / q_value: Mann–Whitney U p and its Benjamini–Hochberg q.
        test_key: rows with one key share one test (one p in the correction).
        verdict: one of :data:`VERDICTS`.
        primary: True when the row enters the geometric mean.
        notes: plain-words caveats.
        drift: side ("A"/"B") → relative change within that side's run, where it
            exceeded the threshold beyond noise (see :func:`within_run_drift`).
        log_replicates: bootstrap replicates of log(B/A), shape (B,), or None.
    """

    id: str
    kind: str
    metric: str
    unit: str
    higher_is_better: bool = False
    a: Side | None = None
    b: Side | None = None
    ratio: Estimate | None = None
    p_value: float = math.nan
    q_value: float = math.nan
    test_key: str = ""
    verdict: str = INCONCLUSIVE
    primary: bool = True
    notes: list[str] = field(default_factory=list)
    drift: dict[str, float] = field(default_factory=dict)
    log_replicates: np.ndarray | None = field(default=None, repr=False)


@dataclass
class SuiteComparison:
    """The whole comparison of B against A.

    Attributes:
        rows: one per compared metric, in A's order.
        only_in_a / only_in_b: ids present in one file only (never dropped silently).
        geomean: geometric mean of the primary rows' B/A with its CI, or None.
        geomean_verdict: the verdict of that CI against the threshold.
        geomean_over: how many rows the geometric mean is over.
        counts: verdict → number of rows.
        environment: plain-words differences between the two fingerprints.
        warnings: other plain-words warnings about the comparison as a whole.
        threshold / confidence: the noise threshold t and the CI level.
        cost: "A"/"B" → {"benchmarks", "processes", "samples"} spent on the verdicts.
    """

    rows: list[Row]
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    geomean: Estimate | None = None
    geomean_verdict: str = INCONCLUSIVE
    geomean_over: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    environment: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD
    confidence: float = 0.95
    cost: dict[str, dict[str, int]] = field(default_factory=dict)

    def tripped(self, fail_on: Sequence[str]) -> list[str]:
        """Ids whose verdict is in ``fail_on`` ("missing" matches ids only in A); the
        speed-normalized rows are for reading, the gate reads the seconds."""
        hits = [r.id for r in self.rows if r.verdict in fail_on and r.metric != SPEED_NORMALIZED]
        return hits + (list(self.only_in_a) if "missing" in fail_on else [])
