"""The slowest samples of a Python benchmark, explained from what was recorded during
each: garbage collections and their time, the per-sample counters (involuntary context
switches, CPU migrations, page faults), CPU time against wall time, the clock check,
and which process took it. A sample is a loop of calls, so its time per op is the mean
of those calls: the slowest samples are where the slowest calls are.

Causes, tried in this order on a sample's excess over the benchmark's median sample
(its wall time minus iterations × median per-op time):

* ``GC``: the collections inside it took at least half the excess;
* ``preempted``: an involuntary context switch, or CPU time under 90% of wall time (the
  process was off the CPU: another program ran);
* ``migrated``: moved to another CPU (cold caches there);
* ``page faults``: at least twice the median sample's page faults (memory first touched);
* ``clock``: the clock check flagged it;
* ``unexplained``: none of those (the code itself: a slow path, a cache miss, a rehash).

The **heavy tail** rule: when the slowest 1% of the samples (at least 100 samples;
``ceil(n / 100)`` of them) carry more than a tenth of the summed wall time, the
benchmark gets a caveat naming the commonest cause among them.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from perflab.model import Benchmark, Process, Sample

#: the slowest samples listed per benchmark
SLOWEST = 5
#: the heavy-tail rule: the slowest TAIL_FRACTION of samples carry more than TAIL_SHARE
TAIL_FRACTION = 0.01
TAIL_SHARE = 0.10
#: fewer samples than this: no slowest 1% to speak of
TAIL_MIN_SAMPLES = 100
#: CPU/wall under this: the sample was off the CPU part of the time
OFF_CPU = 0.9


@dataclass(frozen=True)
class SlowSample:
    """One of a benchmark's slowest samples and what happened during it.

    Attributes:
        per_op_s: its wall time per op, s.
        vs_median: that over the median sample's per-op time (2.0: twice as slow).
        process_index / pid: the worker process that took it.
        sample_index: its position among the process's samples (0-based).
        gc_collections / gc_s: collections during it and their time, s.
        cpu_share: CPU time over wall time (1.0: on the CPU throughout).
        counters: its per-sample counters ({} when none were recorded).
        flagged: why it is left out of the statistics, or None.
        cause: the likely cause (see the module's list).
    """

    per_op_s: float
    vs_median: float
    process_index: int
    pid: int
    sample_index: int
    gc_collections: int
    gc_s: float
    cpu_share: float
    counters: dict[str, int] = field(default_factory=dict)
    flagged: str | None = None
    cause: str = "unexplained"


@dataclass(frozen=True)
class SlowCalls:
    """A benchmark's slowest samples and its tail.

    Attributes:
        label: the benchmark's label.
        samples: samples considered (flagged ones included).
        slowest: the :data:`SLOWEST` slowest, slowest first.
        tail_share: the share of the summed wall time in the slowest 1% (nan when fewer
            than :data:`TAIL_MIN_SAMPLES` samples).
        tail_cause: the commonest cause among the slowest 1%, "" without a tail.
    """

    label: str
    samples: int
    slowest: list[SlowSample]
    tail_share: float = math.nan
    tail_cause: str = ""

    @property
    def tail_text(self) -> str:
        """The tail in words, e.g. "the slowest 1% of 3,000 samples carry 14% of the time;
        likely cause: GC" ("" with too few samples)."""
        if math.isnan(self.tail_share):
            return ""
        return (
            f"the slowest 1% of {self.samples:,} samples carry {self.tail_share:.0%} of the "
            f"time; likely cause: {self.tail_cause}"
        )

    @property
    def heavy_tail(self) -> bool:
        """True when the slowest 1% carry more than :data:`TAIL_SHARE` of the time."""
        return self.tail_share > TAIL_SHARE


def _cause(sample: Sample, median_op_s: float, median_faults: float) -> str:
    """The likely cause of one slow sample (the module's rules, in order)."""
    excess_ns = sample.wall_ns - sample.iterations * median_op_s * 1e9
    counters = sample.counters or {}
    if sample.gc_ns and sample.gc_ns >= 0.5 * max(excess_ns, 1):
        return "GC"
    if counters.get("involuntary_switches", 0) > 0 or (
        sample.wall_ns and sample.cpu_ns < OFF_CPU * sample.wall_ns
    ):
        return "preempted"
    if counters.get("cpu_migrations", 0) > 0:
        return "migrated"
    if counters.get("page_faults", 0) > max(2 * median_faults, 1):
        return "page faults"
    if sample.flagged and sample.flagged.startswith("clock"):
        return "clock"
    return "unexplained"


def slow_calls(bench: Benchmark, slowest: int = SLOWEST) -> SlowCalls | None:
    """The slowest samples of ``bench`` explained, and its tail share (None for a
    benchmark without timed samples: a command, an http step, a counted run)."""
    rows: list[tuple[Process, int, Sample]] = [
        (p, i, s) for p in bench.processes for i, s in enumerate(p.samples) if s.iterations
    ]
    if not rows:
        return None
    per_op = sorted(s.wall_ns / s.iterations * 1e-9 for _, _, s in rows)
    median = per_op[len(per_op) // 2]
    faults = sorted((s.counters or {}).get("page_faults", 0) for _, _, s in rows)
    median_faults = faults[len(faults) // 2]
    ranked = sorted(rows, key=lambda r: -r[2].wall_ns / r[2].iterations)

    def explain(p: Process, i: int, s: Sample) -> SlowSample:
        op = s.wall_ns / s.iterations * 1e-9
        return SlowSample(
            per_op_s=op,
            vs_median=op / median if median else math.nan,
            process_index=p.index,
            pid=p.pid,
            sample_index=i,
            gc_collections=s.gc_collections,
            gc_s=s.gc_ns * 1e-9,
            cpu_share=s.cpu_ns / s.wall_ns if s.wall_ns else math.nan,
            counters=dict(s.counters or {}),
            flagged=s.flagged,
            cause=_cause(s, median, median_faults),
        )

    share, cause = math.nan, ""
    if len(rows) >= TAIL_MIN_SAMPLES:
        k = math.ceil(len(rows) * TAIL_FRACTION)
        total = sum(s.wall_ns for _, _, s in rows)
        share = sum(s.wall_ns for _, _, s in ranked[:k]) / total if total else math.nan
        causes = Counter(explain(*r).cause for r in ranked[:k])
        cause = sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]
    return SlowCalls(bench.label, len(rows), [explain(*r) for r in ranked[:slowest]], share, cause)


def repeated_spans(metrics: dict[str, float], limit: int | None = None) -> list[tuple[str, float]]:
    """The span names a call runs more than ``limit`` times (``--n-plus-one``; None:
    :data:`perflab.analyze.server_timing.REPEAT_LIMIT`) (the worker's span pass records
    ``"NAME spans"`` metrics per call): (name, spans per call), the N+1 check."""
    from perflab.analyze.server_timing import REPEAT_LIMIT

    most = REPEAT_LIMIT if limit is None else limit
    return [
        (key.removesuffix(" spans"), value)
        for key, value in sorted(metrics.items())
        if key.endswith(" spans") and value > most
    ]
